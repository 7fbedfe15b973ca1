"""User-facing errors. One type carries the position; the CLI renders it; nothing below prints.

Exit codes: 1 for a build, test or run failure (and a file system that refuses the engine), 2 for
usage, manifest and build-program errors, so a script can tell "the input is wrong" from "the
build failed".
"""
from __future__ import annotations

import errno
import os
from dataclasses import dataclass

EXIT_BUILD_FAILED = 1
EXIT_USER_ERROR = 2


@dataclass
class Position:
    """Where in a file an error is: its path, and its line and column when known."""
    path: str
    line: int | None = None  # 1-based
    col: int | None = None  # 1-based

    def __str__(self) -> str:
        if self.line is None:
            return self.path
        if self.col is None:
            return f"{self.path}:{self.line}"
        return f"{self.path}:{self.line}:{self.col}"


class McppError(Exception):
    """An error the user can act on. Rendered as `[pos: ]error: message` plus notes."""

    exit_code = EXIT_USER_ERROR

    def __init__(self, message: str, pos: Position | None = None, notes: list[str] | None = None):
        super().__init__(message)
        self.message = message
        self.pos = pos
        self.notes = notes or []
        self.warnings: list[str] = []  # warnings about the same input, shown before the error

    def render(self) -> str:
        head = f"{self.pos}: error: {self.message}" if self.pos else f"error: {self.message}"
        return "\n".join([*self.warnings, head, *self.notes])


class ManifestError(McppError):
    """A malformed or invalid mcpp.toml (exit 2)."""


class ScanError(McppError):
    """A source file the module scanner refuses (exit 2)."""


class BuildFailed(McppError):
    """An action failed; its diagnostics were already shown (exit 1)."""

    exit_code = EXIT_BUILD_FAILED


def environment_error(e: OSError) -> McppError:
    """An OSError that reached the command line: the file system refused something the engine
    needed (a home or `target/` that is a file, read-only or missing, an unreadable source).
    Named by the path that is in the way, not by the temporary file the engine was writing."""
    path = e.filename if isinstance(e.filename, str) else None
    what = e.strerror or str(e)
    if path is None:
        return BuildFailed(f"{what} (errno {e.errno})")
    shown = display_path(path)
    if e.errno in (errno.ENOTDIR, errno.EEXIST):
        blocker = _file_in_the_way(path)
        if blocker is not None:
            return BuildFailed(f"`{display_path(blocker)}` is a file where mcpp needs a directory",
                               notes=[f"note: while working on `{shown}`; move or remove the file"])
    if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        if os.path.lexists(path):
            message = f"permission denied: `{shown}`"
        else:  # creating it: the directory that refused is the one to name
            parent = os.path.dirname(os.path.abspath(path))
            while parent != os.path.dirname(parent) and not os.path.isdir(parent):
                parent = os.path.dirname(parent)
            message = f"permission denied: cannot create `{shown}` in `{display_path(parent)}`"
        return BuildFailed(message, notes=["note: mcpp reads the package and writes under `target/` and "
                                           "$MCPP_HOME; check the permissions of those directories and files"])
    if e.errno == errno.ENAMETOOLONG:
        return BuildFailed(f"file name too long: `{shown[:120]}...`")
    if e.errno == errno.ENOSPC:
        return BuildFailed(f"no space left on the device holding `{shown}`")
    return BuildFailed(f"{what}: `{shown}`")


def _file_in_the_way(path: str) -> str | None:
    """The nearest existing ancestor of `path` (or `path` itself) that is not a directory."""
    probe = path
    while probe and probe != os.path.dirname(probe):
        if os.path.lexists(probe):
            return probe if not os.path.isdir(probe) else None
        probe = os.path.dirname(probe)
    return None


def display_path(path: str) -> str:
    """A path as the user should read it: relative to the cwd when below it, absolute otherwise.
    Every path mcpp shows goes through here (manifest positions, tool output, file errors)."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel
