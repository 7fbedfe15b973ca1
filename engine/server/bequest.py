"""What a build run in the `mcpp` process leaves to the server it starts: its plan and knowledge.

Where no server is up, `mcpp build` builds in its own process and starts a server once it is
done (client.py, engine/entry.py). That server knew nothing of the build that just ran, so the
next build, usually the user's first edit after a clean build, planned again from scratch (~60
ms at 1,000 units, bench/RESULTS.md). The in-process build now keeps what a server's build child
keeps (`Bequeathing`: the plan, its glob expansions, its knowledge, the state files it opened,
the sandbox it used) and writes it, as one `Bequest`, to `<server dir>/<id>-<pid>.bequest` as
its process ends; the server it started takes it in before it serves a request (warm.py
`bequeathed`), as it takes in a build child's hand-off.

A build child's hand-off is trusted with what the server's watcher saw change since that build
began. No watcher ran during the in-process build, so the server, once its watcher covers the
roots, walks them (`rewritten`): a file whose status changed since the build began (its ctime,
which nothing can set back, in or after the second the build began in: `since_ns`)
counts as rewritten when the plan read or globbed it, and as a change of shape otherwise (a file
created or renamed in: anything may follow), and then nothing is kept. So does a directory
renamed or made since (its ctime too) holding a file the plan did not read, and a file the plan
read that is gone. The knowledge is proven as after any build, by the files' stats against the
stat cache, not by the walk.

The file is read only by the server that the writing process started (its pid names it), from
the server directory the build children's hand-offs share; a stale one (a crashed start, a pid
used again) is judged by the same walk against its own start time.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable

from ..build.memory import NoMemory, open_state
from ..manifest.globs import Expansions
from ..state.unchanged import Knowledge
from .paths import server_dir
from .plan_memo import Entry, PlanMemo

if TYPE_CHECKING:
    from .child_memory import HandOff

# A ctime is stamped from a clock read at the kernel's last tick, up to a tick (1-10 ms) behind
# the clock the command's start was read from, and some file systems keep whole seconds: a change
# just after the start may carry a stamp before it. Every stamp from the second the build began
# in, or from the tick before, counts as after it (`since`).
CLOCK_SLACK_NS = 10_000_000


@dataclass(frozen=True)
class Bequest:
    """What the in-process build left, and since when the server must look for changes."""
    key: str  # the request's (request_key.py)
    began_ns: int  # the wall clock before the command read anything (client.py's `started`)
    exit: int  # the command's exit status
    handoff: "HandOff"


def path_of(home: str, ident: str, pid: int) -> str:
    return os.path.join(server_dir(home), f"{ident}-{pid}.bequest")


class Bequeathing(NoMemory):
    """The in-process build's memory when a server starts after it: `NoMemory`'s, recording
    what a server's build child would hand back. The plan is pickled only in `leave`, after the
    build: a first build's first compile does not wait for it."""

    def __init__(self, begun, key: str, began_ns: int, home: str, ident: str) -> None:
        super().__init__(begun)
        self.key, self.began_ns, self.home, self.ident = key, began_ns, home, ident
        self.plans = PlanMemo(None, deferred=True)
        self.globs = Expansions()
        self.opened: list[tuple[str, str, str, str]] = []
        self._knowledge: Callable[[], Knowledge] | None = None
        self._sandbox: tuple | None = None

    def open_state(self, stat_cache: str, action_state: str, execroot: str, scan_cache: str):  # type: ignore[override]
        self.opened.append((stat_cache, action_state, execroot, scan_cache))
        return open_state(stat_cache, action_state, execroot, scan_cache)

    def expand(self, root: str, patterns, boundary: str | None = None) -> list[str]:  # type: ignore[override]
        return self.globs.expand(root, patterns, boundary)

    def plan(self, make, scan, includes, graph, context):
        return self.plans.plan(make, scan, includes, graph, context)

    def sandbox(self, settings: tuple | None):
        self._sandbox = settings
        return super().sandbox(settings)

    def learned(self, knowledge) -> None:
        self._knowledge = knowledge

    def leave(self, code: int) -> None:
        """Write the bequest (`code`: the command's exit status) whole, or none at all: a server
        without one plans its first build itself. Named for this process, the one that starts
        the server (engine/entry.py: a copy of the command's process, which outlives it)."""
        from .child_memory import HandOff, hand  # after the build: its imports (traceback) are not a first build's

        def bequest() -> Bequest:
            knowledge = self._knowledge() if self._knowledge is not None else None
            handoff = HandOff(self.plans.produced, tuple(self.opened), knowledge, self._sandbox, self.globs.made)
            return Bequest(self.key, self.began_ns, code, handoff)

        hand(path_of(self.home, self.ident, os.getpid()), bequest)


def discard(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def take(path: str) -> Bequest | None:
    """The bequest at `path`, removed; None where there is none (or not one)."""
    from .child_memory import HandOff, taken

    bequest = taken(path, Bequest)
    return bequest if bequest is not None and isinstance(bequest.handoff, HandOff) else None


def rewritten(bequest: Bequest, entry: Entry, roots: Iterable[str]) -> set[str] | None:
    """The files under `roots` changed since `bequest`'s build began, when every one is a file
    its plan read or globbed (only rewritten); None when anything else changed there (see the
    module docstring)."""
    known = set(entry.scanned) | set(entry.included)
    for (root, _patterns, _boundary), found in bequest.handoff.globs.items():
        known.update(os.path.join(root, f) for f in found)
    since = since_ns(bequest.began_ns)
    seen: set[str] = set()
    changed: set[str] = set()
    fresh: list[str] = []  # directories made or renamed since: every file below them must be known
    from .watcher import entries_under  # the server's (ctypes): not in the build's process

    for root in _outermost(roots):
        for directory, e in entries_under(root):
            if e is None:
                return None
            try:
                st = e.stat(follow_symlinks=False)
                is_dir = e.is_dir(follow_symlinks=False)
            except OSError:  # gone while walked
                return None
            if is_dir:
                if st.st_ctime_ns >= since:
                    fresh.append(e.path + "/")
                continue
            seen.add(e.path)
            new = st.st_ctime_ns >= since
            if (new or e.path.startswith(tuple(fresh))) and e.path not in known:
                return None
            if new:
                changed.add(e.path)
    if any(path not in seen and not os.path.lexists(path) for path in known):
        return None  # a file the plan read is gone (one not walked, in `target/` or outside, is looked up)
    return changed


def since_ns(began_ns: int) -> int:
    """The earliest stamp that may be a change made after `began_ns` (see CLOCK_SLACK_NS)."""
    return began_ns - began_ns % 1_000_000_000 - CLOCK_SLACK_NS


def _outermost(roots: Iterable[str]) -> list[str]:
    """`roots` without those inside another: each directory is walked once."""
    out: list[str] = []
    for root in sorted({r.rstrip("/") or "/" for r in roots}):
        if not any(root.startswith(o.rstrip("/") + "/") for o in out):
            out.append(root)
    return out
