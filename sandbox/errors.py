"""Errors the sandbox raises. A failing *action* is not an error: it is a SandboxResult with a
non-zero exit code. These are for a spec the sandbox cannot honour or a sandbox that is gone."""
from __future__ import annotations


class SandboxError(Exception):
    """Base of the sandbox's own errors; the message says what to do."""


class SandboxSpecError(SandboxError, ValueError):
    """The spec is malformed: an absolute or escaping relative path, a missing input file, an
    `off` spec without `root`."""


class SandboxUnavailable(SandboxError):
    """The requested sandbox cannot run on this machine (e.g. `--sandbox bwrap` without a
    working bwrap)."""


class SandboxClosed(SandboxError):
    """The pool was shut down (Ctrl-C, engine exit) while or before the action ran."""
