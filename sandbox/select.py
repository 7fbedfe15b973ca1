"""Choosing a sandbox by name (``--sandbox bwrap|dir|off``) or by what this machine can do."""
from __future__ import annotations

import os
import subprocess

from .bwrap import NOT_FOUND, BwrapSandbox, find_bwrap, probe_bwrap
from .directory import DirSandbox
from .errors import SandboxUnavailable
from .pool import SandboxPool
from .spec import Guarantees, Sandbox
from .unsandboxed import LocalSandbox
from .worker import Worker

# the accepted values of `--sandbox`, in the order the CLI lists them
NAMES = ("bwrap", "dir", "off")
_BACKENDS: dict[str, type[BwrapSandbox] | type[DirSandbox] | type[LocalSandbox]] = {"bwrap": BwrapSandbox, "dir": DirSandbox, "off": LocalSandbox}


def guarantees_of(name: str | None) -> Guarantees:
    """What the sandbox `make_sandbox(name)` makes promises, without making it. For the default
    (None) that is bwrap's where bwrap works here, else the directory sandbox's: the bwrap probe
    runs (once per process) unless a worker already answered for it."""
    if name is not None:
        if name not in _BACKENDS:
            raise ValueError(f"unknown sandbox {name!r}: expected one of {', '.join(NAMES)}")
        return _BACKENDS[name].guarantees
    bwrap = find_bwrap()
    works = bwrap is not None and probe_bwrap(bwrap) is None
    return (BwrapSandbox if works else DirSandbox).guarantees


def possible_guarantees(name: str | None) -> tuple[Guarantees, ...]:
    """The promises of every backend `make_sandbox(name)` may choose, without probing: one for a
    named backend, bwrap's and the directory sandbox's for the default. A promise all of them
    make (or none does) is known before the probe decides between them."""
    if name is not None:
        return (guarantees_of(name),)
    return (BwrapSandbox.guarantees, DirSandbox.guarantees)


def make_sandbox(name: str | None, work_root: str, ro_roots: tuple[str, ...] = ()) -> tuple[Sandbox, str | None]:
    """The sandbox called ``name``, or the best available one when ``name`` is None.

    Returns ``(sandbox, warning)``; ``warning`` (without a ``warning:`` prefix, for the CLI to
    render once) says why the default fell back from bwrap to dir. ``--sandbox bwrap`` on a
    machine where bwrap does not work raises ``SandboxUnavailable`` with the reason; an unknown
    name raises ``ValueError`` naming the accepted ones. The bwrap probe runs once per process.
    Creating the sandbox reclaims stale directories of dead engines under ``work_root``.
    ``ro_roots`` (the build's installed payloads) are visible read-only to every action.
    """
    if name is not None and name not in NAMES:
        raise ValueError(f"unknown sandbox {name!r}: expected one of {', '.join(NAMES)}")
    if name == "dir":
        return _with_roots(DirSandbox(pool=SandboxPool(work_root)), ro_roots), None
    if name == "off":
        return LocalSandbox(pool=SandboxPool(work_root)), None
    bwrap = find_bwrap()
    reason = NOT_FOUND if bwrap is None else probe_bwrap(bwrap)
    if reason is None:
        return BwrapSandbox(bwrap=bwrap, pool=SandboxPool(work_root), ro_roots=ro_roots), None
    if name == "bwrap":
        raise SandboxUnavailable(f"--sandbox bwrap: {reason}; use --sandbox dir instead")
    warning = (
        f"{reason}; using the directory sandbox (--sandbox dir): undeclared inputs are found "
        "from compiler depfiles, the network is not isolated"
    )
    return _with_roots(DirSandbox(pool=SandboxPool(work_root)), ro_roots), warning


def begin_sandbox(name: str | None, work_root: str, ro_roots: tuple[str, ...] = ()) -> BegunSandbox:
    """`make_sandbox` in two halves, for a build that makes its sandbox while it plans. This
    call only starts bwrap's first worker, from the calling thread (whose end ends that worker:
    bwrap's ``--die-with-parent``); calling the `BegunSandbox` it returns, from any thread, waits
    for the worker's answer and takes it for the probe's, which then does not run. A worker that
    does not answer leaves the choice to `make_sandbox`, probe and all."""
    begun = BegunSandbox(name, work_root, ro_roots)
    if name in (None, "bwrap"):
        bwrap = find_bwrap()
        if bwrap is not None:
            early = BwrapSandbox(bwrap=bwrap, pool=SandboxPool(work_root), ro_roots=ro_roots)
            try:
                worker = early.start_ahead()
            except BaseException:
                early.shutdown()
                raise
            if worker is not None:
                begun.early, begun.worker = early, worker
            else:
                early.shutdown()
    return begun


class BegunSandbox:
    """A sandbox `begin_sandbox` began: call it for ``(sandbox, warning)``. Where bwrap's first
    worker was started (`worker`), the process that started it may hand it to a fork of itself
    before anyone called it (a warm server to its next build child, which then needs no worker
    of its own started: engine/server/sandbox_ahead.py): the fork calls `take_over` and then
    this; the starter `let_go` (and reaps the worker's process once it exits)."""

    def __init__(self, name: str | None, work_root: str, ro_roots: tuple[str, ...]) -> None:
        self.name, self.work_root, self.ro_roots = name, work_root, ro_roots
        self.early: BwrapSandbox | None = None
        self.worker: Worker | None = None
        self.pidfd: int | None = None  # the worker's, opened by `open_pidfd` for a hand-over

    def __call__(self) -> tuple[Sandbox, str | None]:
        if self.early is not None and self.worker is not None:
            if self.early.take_ahead(self.worker):
                return self.early, None
            self.early.shutdown()
        return make_sandbox(self.name, self.work_root, self.ro_roots)

    def open_pidfd(self) -> bool:
        """Make the worker ready to be handed over: whether it can be (a worker was started, is
        still running, and this system gives pidfds, through which a fork that is not its parent
        sees it end)."""
        if self.worker is None or not self.worker.alive:
            return False
        if self.pidfd is None:
            try:
                self.pidfd = os.pidfd_open(self.worker.proc.pid)
            except (AttributeError, OSError):
                return False
        return True

    def take_over(self) -> None:
        """In the fork that takes the begun sandbox: its worker is this process's now."""
        assert self.worker is not None and self.pidfd is not None, "only an opened worker is handed over"
        self.worker.take_over(self.pidfd)

    def let_go(self) -> subprocess.Popen[bytes]:
        """In the starter, once a fork took the begun sandbox: forget it (the fork removes its
        directory and ends its worker); the worker's process, to reap when it exits (`pidfd`)."""
        assert self.early is not None and self.worker is not None, "only a started worker is handed over"
        proc = self.worker.let_go()
        self.early.pool.let_go()
        return proc

    def close(self) -> None:
        """In the starter, for a begun sandbox nobody took: end its worker, remove its directory."""
        if self.early is not None:
            self.early.shutdown()
            if self.worker is not None:
                self.worker.close()
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


def _with_roots(sandbox: DirSandbox, ro_roots: tuple[str, ...]) -> DirSandbox:
    sandbox.ro_roots = tuple(ro_roots)
    return sandbox
