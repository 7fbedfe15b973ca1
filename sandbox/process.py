"""Run one action as its own process group, with a timeout that kills the whole tree.

Why a group: a compiler driver forks cc1/as/ld, a test forks whatever it likes; killing only
the direct child leaves the rest running (and holding files in a directory we are about to
remove). Each action therefore starts in a new session (``start_new_session=True``), so its pid
is the id of a group that contains every descendant that did not call ``setsid`` itself.

Why pidfd + ``waitid(WNOWAIT)``: we must also kill stray members after the leader exits
normally (a background child left running), and ``killpg`` is only safe while the group id
cannot be reused, i.e. while the leader is an unreaped zombie. So we wait for the exit without
reaping, kill the group, then reap. pidfd polling also gives an exact timeout without the
sleep-poll loop of ``Popen.wait(timeout=...)`` (which costs milliseconds per short action).

Why memfd for stdout/stderr instead of pipes: a killed action's escaped descendants may keep a
pipe open, and draining pipes needs a select loop; an anonymous file needs neither, leaves
nothing on disk, and is read once at the end.
"""
from __future__ import annotations

import os
import select
import subprocess
from typing import Mapping, Sequence

from .pool import SandboxPool, kill_group

_HAVE_PIDFD = hasattr(os, "pidfd_open") and hasattr(os, "waitid")


def _capture_file() -> int:
    if hasattr(os, "memfd_create"):
        try:
            return os.memfd_create("mcpp-action", os.MFD_CLOEXEC)
        except OSError:
            pass
    import tempfile  # only where memfd_create is missing

    f = tempfile.TemporaryFile()
    fd = os.dup(f.fileno())
    f.close()
    return fd


def _read_all(fd: int) -> bytes:
    size = os.lseek(fd, 0, os.SEEK_END)
    if size == 0:
        return b""
    os.lseek(fd, 0, os.SEEK_SET)
    with open(fd, "rb", closefd=False) as f:
        return f.read()


def _wait_exited(pid: int, pidfd: int, timeout: float | None) -> bool:
    """Wait until ``pid`` has exited, without reaping it. False on timeout."""
    if timeout is not None:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        if not poller.poll(max(0, int(timeout * 1000))):
            return False
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    return True


def run_group(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None,
    timeout: float | None,
    pool: SandboxPool,
) -> tuple[int, bool, bytes, bytes]:
    """Run ``argv`` in a new session; return (exit code, timed out, stdout, stderr).

    A signal death is reported as ``-signum`` (the subprocess convention); a program that
    cannot be started raises the OSError (the caller turns it into a result).
    """
    out_fd, err_fd = _capture_file(), _capture_file()
    try:
        proc = subprocess.Popen(
            argv,
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out_fd,
            stderr=err_fd,
            start_new_session=True,
            close_fds=True,
        )
        pool.track(proc)
        timed_out = False
        try:
            if _HAVE_PIDFD:
                pidfd = os.pidfd_open(proc.pid)
                try:
                    if not _wait_exited(proc.pid, pidfd, timeout):
                        timed_out = True
                        kill_group(proc.pid)
                        _wait_exited(proc.pid, pidfd, None)
                finally:
                    os.close(pidfd)
                kill_group(proc.pid)  # strays; the zombie leader still reserves the pgid
                code = proc.wait()
            else:  # pragma: no cover - non-Linux fallback
                try:
                    proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    timed_out = True
                    kill_group(proc.pid)
                code = proc.wait()
        except BaseException:
            # KeyboardInterrupt or another error while waiting: never leave the group behind
            if proc.returncode is None:
                kill_group(proc.pid)
                proc.wait()
            raise
        finally:
            pool.untrack(proc)
        return code, timed_out, _read_all(out_fd), _read_all(err_fd)
    finally:
        os.close(out_fd)
        os.close(err_fd)
