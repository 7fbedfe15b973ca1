"""Per-action directories and running process groups, and their cleanup.

Every action of a staged sandbox (bwrap, dir) gets a fresh directory
``<work_root>/sandbox/<pid>-<n>/``; its collected outputs go, unless the caller names another
place, to the pool's one results directory ``<pid>-<m>.out/``. The owning pid is in the names
so that

- two engines sharing a work root never collide, and
- ``reclaim_stale`` (run when a pool is created) can remove what a killed engine left behind:
  a directory whose pid is dead, or whose pid now belongs to a process started after the
  directory was last written (pid reuse), is stale.

The pool also tracks every running action's process group. ``shutdown()`` (called on
``KeyboardInterrupt`` by ``with SandboxPool(...)``, by the engine at exit, and by an ``atexit``
hook as a last resort) kills each group with SIGKILL and removes every directory the pool still
owns; a ``run`` that was in flight then raises ``SandboxClosed``.
"""
from __future__ import annotations

import atexit
import itertools
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
from typing import Callable, Iterable, Self

from .errors import SandboxClosed

# one counter per process, shared by all pools, so that two pools on one work root never
# hand out the same <pid>-<n>
_counter = itertools.count()
# pools not yet shut down; strong references, so that an abandoned pool's directories are
# still removed at interpreter exit
_pools: "set[SandboxPool]" = set()
_pools_lock = threading.Lock()


def _owner_pid(name: str) -> int | None:
    head, sep, _ = name.partition("-")
    if not sep or not head.isdigit():
        return None
    return int(head)


def _boot_time() -> float | None:
    try:
        with open("/proc/stat", "rb") as f:
            for line in f:
                if line.startswith(b"btime "):
                    return float(line.split()[1])
    except OSError:
        pass
    return None


def _process_start(pid: int, btime: float | None) -> float | None:
    """Start time of ``pid`` in seconds since the epoch (Linux), or None when unknown."""
    if btime is None:
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # field 22 (starttime, clock ticks since boot) counted after the ")" that closes comm
    fields = data[data.rfind(b")") + 2:].split()
    try:
        return btime + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (IndexError, ValueError, OSError):
        return None


def process_alive(pid: int) -> bool:
    """Whether a process `pid` exists (one of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def rmtree(path: str) -> None:
    """Remove ``path`` even where an action left read-only directories; never raises."""

    def onerror(func: Callable[..., object], p: str, exc_info: object) -> None:
        try:
            parent = os.path.dirname(p)
            os.chmod(parent, os.stat(parent).st_mode | stat.S_IWUSR | stat.S_IXUSR)
            if os.path.isdir(p) and not os.path.islink(p):
                os.chmod(p, os.stat(p).st_mode | stat.S_IRWXU)
                shutil.rmtree(p, ignore_errors=True)
            else:
                os.unlink(p)
        except OSError:
            pass

    try:
        if sys.version_info >= (3, 12):
            shutil.rmtree(path, onexc=onerror)
        else:
            shutil.rmtree(path, onerror=onerror)
    except FileNotFoundError:
        pass
    except OSError:
        shutil.rmtree(path, ignore_errors=True)


def reclaim_stale(work_root: str) -> list[str]:
    """Remove ``<work_root>/sandbox/<pid>-*`` entries whose owning process is gone.

    Returns the removed paths. Safe to run while other engines use the same work root: their
    directories carry their (live) pids.
    """
    base = os.path.join(work_root, "sandbox")
    try:
        entries = list(os.scandir(base))
    except FileNotFoundError:
        return []
    btime = _boot_time()
    me = os.getpid()
    removed = []
    for entry in entries:
        pid = _owner_pid(entry.name)
        if pid is None or pid == me:
            continue
        stale = not process_alive(pid)
        if not stale:
            started = _process_start(pid, btime)
            try:
                written = entry.stat(follow_symlinks=False).st_mtime
            except OSError:
                continue
            # the live pid was started after the directory was last written: pid reuse
            stale = started is not None and started > written + 2.0
        if stale:
            if entry.is_dir(follow_symlinks=False):
                rmtree(entry.path)
            else:
                try:
                    os.unlink(entry.path)
                except OSError:
                    pass
            removed.append(entry.path)
    return removed


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class SandboxPool:
    """Owns the sandbox directories and running process groups of one engine process."""

    def __init__(self, work_root: str, *, reclaim: bool = True) -> None:
        self.work_root = os.path.realpath(work_root)  # what getcwd() inside will say
        self.base = os.path.join(self.work_root, "sandbox")
        os.makedirs(self.base, exist_ok=True)
        if reclaim:
            reclaim_stale(self.work_root)
        self.closed = False
        self._lock = threading.Lock()
        self._procs: dict[int, subprocess.Popen[bytes]] = {}
        self._dirs: set[str] = set()
        self._results: str | None = None
        with _pools_lock:
            _pools.add(self)

    # -- directories -------------------------------------------------------------------------
    def new_action_dir(self, suffix: str = "") -> str:
        """Create and return a fresh, empty ``<base>/<pid>-<n><suffix>`` directory."""
        self.check_open()
        path = f"{self.base}/{os.getpid()}-{next(_counter)}{suffix}"
        with self._lock:
            self._dirs.add(path)
        os.mkdir(path)
        return path

    def results_dir(self) -> str:
        """The pool's directory for collected outputs, created on first use."""
        results = self._results
        if results is None:
            with self._lock:
                if self._results is None:
                    path = f"{self.base}/{os.getpid()}-{next(_counter)}.out"
                    os.mkdir(path)
                    self._dirs.add(path)
                    self._results = path
                results = self._results
        return results

    def discard_results(self, paths: Iterable[str]) -> None:
        """Remove collected outputs that still lie in the results directory."""
        results = self._results
        if results is None:
            return
        prefix = results + "/"
        for path in paths:
            if path.startswith(prefix):
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
                except (IsADirectoryError, PermissionError):
                    rmtree(path)

    def remove(self, path: str) -> None:
        with self._lock:
            self._dirs.discard(path)
        rmtree(path)

    # -- processes ---------------------------------------------------------------------------
    def track(self, proc: subprocess.Popen[bytes]) -> None:
        """Register a just-started action (its pid is its process group). If shutdown raced
        with the start, kill it here: either shutdown sees it or it sees shutdown."""
        with self._lock:
            self._procs[proc.pid] = proc
        if self.closed:
            kill_group(proc.pid)

    def untrack(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._procs.pop(proc.pid, None)

    def check_open(self) -> None:
        if self.closed:
            raise SandboxClosed("the sandbox pool was shut down; no more actions run")

    @property
    def running(self) -> int:
        return len(self._procs)

    # -- shutdown ----------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Kill every running action's process group and remove every owned directory."""
        self.closed = True
        with _pools_lock:
            _pools.discard(self)
        with self._lock:
            procs = list(self._procs.values())
            dirs = list(self._dirs)
            self._dirs.clear()
        for proc in procs:
            if proc.returncode is None:  # not reaped yet, so the pgid is still this group's
                kill_group(proc.pid)
        for path in dirs:
            rmtree(path)

    def let_go(self) -> None:
        """In the process that made this pool, once a fork of it has taken over what the pool
        holds (a sandbox begun ahead: sandbox/select.py `BegunSandbox`): forget its directories
        and processes without removing or ending them (the fork does, when it shuts its pool
        down) and leave the shutdown at exit; this process uses the pool no more."""
        self.closed = True
        with _pools_lock:
            _pools.discard(self)
        with self._lock:
            self._procs.clear()
            self._dirs.clear()

    def __enter__(self) -> "SandboxPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


@atexit.register
def _shutdown_all() -> None:
    with _pools_lock:
        pools = list(_pools)
    for pool in pools:
        pool.shutdown()


class PooledSandbox:
    """What every sandbox shares: it owns (or is given) a pool, and shutting it down ends the
    pool's running actions and removes their directories. Also a context manager."""

    def __init__(self, work_root: str | None = None, *, pool: SandboxPool | None = None) -> None:
        if pool is None:
            if work_root is None:
                raise TypeError("give a work_root or a pool")
            pool = SandboxPool(work_root)
        self.pool = pool

    def shutdown(self) -> None:
        self.pool.shutdown()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
