"""The `BuildMemory` of a server's build child, and the one value it hands back: `HandOff`.

The server decides what to give before it forks (warm.py: the plan, knowledge, proofs, glob
expansions and sandbox of the last build of the same request, with what its watcher saw change
since, and the state files it loaded); the child makes a `ChildMemory` of it, passes it into the
build (engine/build/memory.py), and after the client's answer writes its `hand_off()` to a file
the server reads (warm.py `after_build`). Everything here lives in the child's own memory and
dies with it.
"""
from __future__ import annotations

import contextlib
import os
import pickle
from dataclasses import dataclass
from typing import Any, Callable

from . import state_memo
from ..exec.after_reply import AfterReply
from ..exec.sandbox_warm_up import SandboxWarmUp, fits
from ..manifest.globs import Expansions
from ..state.unchanged import Knowledge, Unchanged
from .plan_memo import SAME, Given, PlanMemo


@dataclass(frozen=True)
class HandOff:
    """What a build child learned, for the server to keep for the next build of its request."""
    plan: bytes | None  # the new plan_memo.Entry, pickled; plan_memo.REUSED; None: none to keep
    state: tuple[state_memo.Paths, ...]  # the incremental state files the build opened
    knowledge: Knowledge | bytes | None  # what it ended with (engine/state/unchanged.py); SAME: the one given
    sandbox: tuple | None  # the sandbox settings it used (engine/exec/sandbox_warm_up.py)
    globs: dict  # the source glob expansions it made (manifest/globs.py)


@dataclass(frozen=True)
class StateChanges:
    """What a build child changed of the state files the server gave it (state_memo.py), each
    as (paths, their stamps when given, their stamps as the child saved them, the changes)."""
    states: tuple[tuple[state_memo.Paths, tuple, tuple, tuple], ...]


def hand(path: str, make: Callable[[], Any]) -> None:
    """Write what `make()` returns, pickled, to the hand-off file at `path` whole (a private
    temporary file, renamed), or nothing at all: a hand-off is only a head start for the server."""
    tmp = f"{path}.tmp"
    try:
        value = make()
        os.makedirs(os.path.dirname(tmp), exist_ok=True)  # a first command's: before the server made it
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as f:
            pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except Exception:  # noqa: BLE001 - without it the next build plans and loads
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def taken(path: str, kind: type):
    """The `kind` pickled in the hand-off file at `path` (a build child's, or an in-process
    build's bequest, bequest.py), the file removed; None where there is none, or it holds
    anything else (damaged, or another version's)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
    try:
        found = pickle.loads(data)
    except Exception:  # noqa: BLE001 - damaged: nothing is taken from it
        return None
    return found if isinstance(found, kind) else None


class ChildMemory:
    """A build child's memory: given by the server, filled by the build (`BuildMemory`)."""

    def __init__(self, given: Given | None, states: dict[state_memo.Paths, tuple[tuple, tuple]]) -> None:
        self.given = given
        self.plans = PlanMemo(given)
        self.states = states  # the state files the server loaded: paths -> (stamps, objects)
        self.opened: list[state_memo.Paths] = []
        # the state the build took from the server's objects: paths -> their stamps then and
        # those objects, whose changes the server takes in (`state_changes`); None: opened twice
        self._taken: dict[state_memo.Paths, tuple[tuple, tuple] | None] = {}
        if given is not None and given.globs is not None:
            self.globs = Expansions(given.globs, given.watched)
        else:
            self.globs = Expansions()
        self.tasks = AfterReply()
        self._knowledge: Callable[[], Knowledge] | None = None
        self._sandbox: tuple | None = None  # the settings the build used
        self._early: SandboxWarmUp | None = None

    # -- before the build ---------------------------------------------------------------------

    def start_sandbox(self) -> None:
        """When the watcher saw a change since the last build of this request, begin the sandbox
        that build used, before the command line is even read (the build adopts it, `sandbox`),
        unless one begun ahead was adopted already (`adopt_sandbox`)."""
        given = self.given
        if self._early is None and given is not None and given.sandbox is not None and given.changed:
            self._early = SandboxWarmUp(given.sandbox)

    def adopt_sandbox(self, early: SandboxWarmUp) -> None:
        """A sandbox begun before the request came (a spare's, server/spare.py, or the server's,
        server/sandbox_ahead.py): kept for a build that will probably run something, which takes
        it when it wants the same (`sandbox`); closed after the reply otherwise."""
        if self._early is None and self.likely_work():
            self._early = early
        else:
            self.tasks.later(early.close)

    # -- the build's (BuildMemory) ------------------------------------------------------------

    def open_state(self, stat_cache: str, action_state: str, execroot: str, scan_cache: str):
        paths = (stat_cache, action_state, execroot, scan_cache)
        again = paths in self.opened
        self.opened.append(paths)
        held = state_memo.held(self.states, paths)
        if held is None or again:  # what was taken first and what is opened now could both save
            self._taken[paths] = None
        else:
            self._taken[paths] = (self.states[paths][0], state_memo.taking(held))
        return held if held is not None else state_memo.reopen(self.states, paths)

    def expand(self, root: str, patterns, boundary: str | None = None) -> list[str]:
        return self.globs.expand(root, patterns, boundary)

    def plan(self, make, scan, includes, graph, context):
        return self.plans.plan(make, scan, includes, graph, context)

    def unchanged(self, execroot: str) -> Unchanged | None:
        return self.plans.unchanged(execroot)

    def edited_first(self, actions: list, execroot: str, discovered, made) -> list[str]:
        return self.plans.edited_first(actions, execroot, discovered, made)

    def likely_work(self) -> bool:
        return self.plans.likely_work()

    def sandbox(self, settings: tuple | None) -> SandboxWarmUp | None:
        """The early warm-up, when it was begun for `settings`; one begun for other settings is
        closed after the client's answer (nothing waits for it)."""
        self._sandbox = settings
        early, self._early = self._early, None
        if early is None or fits(early, settings):
            return early
        self.tasks.later(early.close)
        return None

    def learned(self, knowledge: Callable[[], Knowledge]) -> None:
        self._knowledge = knowledge

    def after_reply(self, task: Callable[[], None]) -> None:
        self.tasks.later(task)

    # -- at the reply ---------------------------------------------------------------------------

    def state_changes(self) -> StateChanges:
        """What the build changed of each state the server gave it and it rewrote, for the server
        to apply to its copy (warm.py `on_reply`) instead of reading the files again."""
        found = []
        for paths, taken in self._taken.items():
            if taken is None:
                continue
            stamps, objects = taken
            now = state_memo.saved_stamps(stamps, objects)
            if now == stamps:
                continue  # nothing written: what the server holds is still the files
            changed = state_memo.changes(objects)
            if changed is not None:
                found.append((paths, stamps, now, changed))
        return StateChanges(tuple(found))

    # -- after the reply ----------------------------------------------------------------------

    def hand_off(self) -> HandOff:
        """What the server keeps from this build; an early warm-up no build adopted (the build
        failed before it wanted a sandbox, or was not a build at all) is closed after it."""
        early, self._early = self._early, None
        if early is not None:
            self.tasks.later(early.close)
        knowledge: Knowledge | bytes | None = self._knowledge() if self._knowledge is not None else None
        if knowledge is not None and self.given is not None and self.given.knowledge == knowledge:
            knowledge = SAME  # the server has it, and its files proven
        return HandOff(self.plans.produced, tuple(self.opened), knowledge, self._sandbox, self.globs.made)

    def run_after_reply(self, log: Callable[[str], None]) -> None:
        self.tasks.run(log)

