"""Choosing a sandbox by name (``--sandbox bwrap|dir|off``) or by what this machine can do."""
from __future__ import annotations

from .bwrap import NOT_FOUND, BwrapSandbox, find_bwrap, probe_bwrap
from .directory import DirSandbox
from .errors import SandboxUnavailable
from .unsandboxed import LocalSandbox
from .pool import SandboxPool
from .spec import Sandbox

# the accepted values of `--sandbox`, in the order the CLI lists them
NAMES = ("bwrap", "dir", "off")


def make_sandbox(name: str | None, work_root: str, ro_roots: tuple[str, ...] = (),
                 worker_ahead: bool = False) -> tuple[Sandbox, str | None]:
    """The sandbox called ``name``, or the best available one when ``name`` is None.

    Returns ``(sandbox, warning)``; ``warning`` (without a ``warning:`` prefix, for the CLI to
    render once) says why the default fell back from bwrap to dir. ``--sandbox bwrap`` on a
    machine where bwrap does not work raises ``SandboxUnavailable`` with the reason; an unknown
    name raises ``ValueError`` naming the accepted ones. The bwrap probe runs once per process.
    Creating the sandbox reclaims stale directories of dead engines under ``work_root``.
    ``ro_roots`` (the build's installed payloads) are visible read-only to every action.
    ``worker_ahead``: start bwrap's first worker now (from the calling thread, which must
    outlive it: `BwrapSandbox.prestart`) and take its answer as the probe's, which then does
    not run; a worker that does not answer leaves the choice to the probe, as without it.
    """
    if name is not None and name not in NAMES:
        raise ValueError(f"unknown sandbox {name!r}: expected one of {', '.join(NAMES)}")
    if name == "dir":
        return _with_roots(DirSandbox(pool=SandboxPool(work_root)), ro_roots), None
    if name == "off":
        return LocalSandbox(pool=SandboxPool(work_root)), None
    bwrap = find_bwrap()
    if bwrap is not None and worker_ahead:
        early = BwrapSandbox(bwrap=bwrap, pool=SandboxPool(work_root), ro_roots=ro_roots)
        if early.start_proven():
            return early, None
        early.shutdown()
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


def _with_roots(sandbox, ro_roots: tuple[str, ...]):
    sandbox.ro_roots = tuple(ro_roots)
    return sandbox
