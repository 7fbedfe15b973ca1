"""The forked child that runs one build for a client, as the `mcpp` process would have.

The server forks a child per request, so nothing one build does to the process (environment,
working directory, umask, signal handlers, module-level caches, open files) can reach the
next: the child starts from the server's warm state and dies with the build. What it must
restore is what a fresh `mcpp` process gets from its parent: the client's environment,
working directory, umask and stdin/stdout/stderr (dup'ed onto 0, 1 and 2, and `sys.std*`
rebuilt over them with the buffering and encoding Python would have picked).
"""
from __future__ import annotations

import ctypes
import io
import locale
import os
import signal
import sys
import tempfile
import time
from typing import Callable

from ..core import interrupt
from .spare import FORWARDED

_PR_SET_PDEATHSIG = 1


def _load_libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


# Loaded once, by the server that imports this module: each build child it forks calls `prctl`
# through it instead of loading the C library again before its build can start.
_LIBC = _load_libc()


def prepare() -> None:
    """What a build child does first, before it knows its request (a spare does it ahead,
    server/spare.py): a process group of its own, apart from the server and its other builds,
    and its end when the server's."""
    os.setpgid(0, 0)
    _die_with_server()


def run(request: dict, fds: list[int], command: Callable[[list[str]], None],
        ready: Callable[[], None] | None = None) -> int:
    """Become the client's `mcpp` process (once `prepare`d), run `command(argv)`; the exit
    status. `ready()` runs once the process is the client's, just before the command."""
    server = os.getppid()
    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target, inheritable=True)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    _forget_environment_caches()
    os.chdir(request["cwd"])
    os.umask(request["umask"])
    sys.argv = ["mcpp", *request["argv"]]
    _reset_signals(server)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)  # what came while a spare held them (spare.py)
    _reopen_stdio()
    try:
        if ready is not None:
            ready()
        command(list(request["argv"]))
        code = 0
    except SystemExit as e:
        code = _exit_code(e.code)
    except KeyboardInterrupt as e:
        code = interrupt.exit_code(e)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    # Let go of the client's descriptors once the build's output is out: whoever reads it
    # through a pipe (`$(mcpp build)`, a CI log, a benchmark) sees its end when the client
    # exits, not when this process has also handed its state to the server.
    _to_devnull(0, 1, 2)
    return code


def _to_devnull(*fds: int) -> None:
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in fds:
        os.dup2(devnull, fd)
    os.close(devnull)


def _forget_environment_caches() -> None:
    """What the standard library read from the server's environment and kept: the temporary
    directory (`TMPDIR`) and the time zone (`TZ`)."""
    tempfile.tempdir = None
    time.tzset()


def _exit_code(value) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    sys.stderr.write(f"{value}\n")
    return 1


def _die_with_server() -> None:
    """A server killed mid-build takes its builds with it (SIGTERM: cancelled quietly; the
    client says the server stopped, and runs nothing again)."""
    try:
        if _LIBC is not None:
            _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:  # the server died between fork and prctl
        os._exit(1)


def _reset_signals(server: int) -> None:
    """As a fresh `mcpp` process has them (engine/core/interrupt.py): each signal the client
    forwards interrupts the build, whose exit code says which it was."""
    def terminated(signum, _frame):
        """The client's SIGTERM, forwarded (cancel as Ctrl-C does), or the server's death
        (`PR_SET_PDEATHSIG`: cancel quietly; the server's silence tells the client)."""
        if os.getppid() != server:
            _to_devnull(1, 2)
        raise interrupt.Interrupted(signum)

    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, terminated)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, interrupt.raise_interrupted)


def _reopen_stdio() -> None:
    """`sys.stdin/stdout/stderr` as interpreter start-up makes them for these descriptors."""
    try:
        locale.setlocale(locale.LC_CTYPE, "")
    except locale.Error:
        pass
    forced = os.environ.get("PYTHONIOENCODING", "")
    encoding, _, errors = forced.partition(":")
    encoding = encoding or ("utf-8" if sys.flags.utf8_mode else locale.getpreferredencoding(False))
    c_locale = locale.setlocale(locale.LC_CTYPE) in ("C", "POSIX")
    out_errors = errors or ("surrogateescape" if c_locale else "strict")

    def stream(fd: int, mode: str, errs: str, line_buffering: bool):
        raw = io.FileIO(fd, mode, closefd=False)
        buffered = io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw)
        return io.TextIOWrapper(buffered, encoding=encoding, errors=errs, line_buffering=line_buffering)

    sys.stdin = sys.__stdin__ = stream(0, "r", out_errors, False)
    sys.stdout = sys.__stdout__ = stream(1, "w", out_errors, os.isatty(1))
    sys.stderr = sys.__stderr__ = stream(2, "w", "backslashreplace", True)
