"""What a build may take from, and leave to, the process that hosts it: the warm-state seam.

A build run by the `mcpp` process starts cold and leaves nothing behind but its files. A build
run in a warm server's child (engine/server/) may be given what the last build of the same
request left (its plan, keys, proofs, glob expansions and sandbox, checked against what changed
since) and hands back what it learned. The build sees only this protocol, passed into
`build(...)`: it never imports the server, and no module-level state carries anything between
the two. `NoMemory` is the in-process one; the server's child builds its own
(server/child_memory.py) from what the server gave it, and hands its findings back as one value.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Mapping, Protocol, Sequence

from mcpp.cas.statcache import StatCache

from ..manifest import globs
from ..state.incremental import BuildState, ScanCache

if TYPE_CHECKING:
    from ..exec.sandbox_warm_up import SandboxWarmUp
    from .cold_start import Begun
    from ..state.unchanged import Knowledge, Unchanged


class BuildMemory(Protocol):
    """The operations a build asks of its host about earlier builds and later work."""

    def open_state(self, stat_cache: str, action_state: str, execroot: str, scan_cache: str
                   ) -> tuple[StatCache, BuildState, ScanCache]:
        """The build's incremental state (engine/state/incremental.py): loaded from the files, or
        objects equal to what loading them would give."""
        ...

    def expand(self, root: str, patterns: Sequence[str], boundary: str | None = None) -> list[str]:
        """`manifest.globs.expand`, or an earlier build's equal answer."""
        ...

    def plan(self, make: Callable[[Callable, Callable | None], object], scan: Callable,
             includes: Callable | None, graph, context: Callable[[], tuple]) -> object:
        """`make(scan, includes)`, or an earlier plan provably equal to what it would return
        (`context()`: everything besides `graph` planning reads)."""
        ...

    def unchanged(self, execroot: str) -> Unchanged | None:
        """What an earlier build left that this one may take as known (engine/state/unchanged.py)."""
        ...

    def edited_first(self, actions: list, execroot: str, discovered: Callable[[str], tuple],
                     made: Mapping[str, str]) -> list[str]:
        """The order in which the scheduler checks `actions` (ids); `made`: the plan's outputs
        (execroot path -> the action that writes it)."""
        ...

    def likely_work(self) -> bool:
        """Whether the build will probably run an action (worth starting the sandbox early)."""
        ...

    def sandbox(self, settings: tuple | None) -> SandboxWarmUp | None:
        """The build will use the sandbox `settings` (engine/exec/sandbox_warm_up.py; None: one with no
        worker to start early): the warm-up begun for it before the build started, if any."""
        ...

    def learned(self, knowledge: Callable[[], Knowledge]) -> None:
        """How to make what this build learned, called (if at all) after the client's answer."""
        ...

    def after_reply(self, task: Callable[[], None]) -> None:
        """Run `task` once the client has the build's exit status (teardown nobody waits on)."""
        ...


def open_state(stat_cache: str, action_state: str, execroot: str, scan_cache: str
               ) -> tuple[StatCache, BuildState, ScanCache]:
    """The incremental state as its files hold it."""
    stats = StatCache(stat_cache)
    return stats, BuildState(action_state, execroot, stats), ScanCache(scan_cache, stats.digest, stats.digest_and_bytes)


class NoMemory:
    """A build in the `mcpp` process: nothing is given, nothing kept, and work for after the
    reply runs at once (the process's exit is the reply). `begun`: what the process began for a
    first build before it imported the engine (engine/build/cold_start.py), for the build to take."""

    def __init__(self, begun: Begun | None = None) -> None:
        self.begun = begun

    open_state = staticmethod(open_state)
    expand = staticmethod(globs.expand)

    def plan(self, make, scan, includes, graph, context):
        return make(scan, includes)

    def unchanged(self, execroot: str) -> None:
        return None

    def edited_first(self, actions: list, execroot: str, discovered: Callable[[str], tuple],
                     made: Mapping[str, str]) -> list[str]:
        return [a.id for a in actions]

    def likely_work(self) -> bool:
        return False  # no watcher to ask

    def sandbox(self, settings: tuple | None) -> SandboxWarmUp | None:
        return self.begun.sandbox(settings) if self.begun is not None else None

    def learned(self, knowledge: Callable[[], Knowledge]) -> None:
        pass

    def after_reply(self, task: Callable[[], None]) -> None:
        task()
