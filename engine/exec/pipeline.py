"""What happens to one action during a build: fresh? cached? run? record.

1. *Fresh*: the state under `target/` says the last run's key still holds and the outputs are
   intact: nothing to do (the no-op path; stats only, no hashing).
2. *Cached*: the action cache has an entry for the key: outputs are copied from the store's
   materialization area into `target/` (copies, not links: see `Materializer.copy_into`), and
   the warnings the action printed are replayed. Compile actions read headers that are known
   only from their depfile, so their lookup is two-level (as ccache's direct mode): a
   first-level key without headers names the header sets seen before, and each set gives a
   full key to look up.
3. *Remote* (with `--remote`): on a local miss the remote cache is asked (`cas.remote`); a hit's
   outputs are fetched, verified and put into the local store, and a local entry is written, so
   the next build is a local hit.
4. *Run*: through the `ActionRunner` seam; the outputs are hashed on the worker (their digests
   key the dependents, which start at once), then stored and an entry written into the action
   cache by the background ingest (cas/ingest.py), so the next build anywhere on this
   `$MCPP_HOME` is a hit. The build waits for the ingest at its end (`drain`); with
   `--remote-upload` the ingest runs inline and the result is queued for upload to the remote
   cache.

The scheduler calls `check` and `finish` on its own thread and `restore_or_run` on worker
threads; all bookkeeping of keys and state happens on the scheduler's thread.
"""
from __future__ import annotations

import os
import stat
import threading
from collections import deque
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable

from mcpp.cas.action import Action
from mcpp.cas.action_cache import ActionEntry
from mcpp.cas.atomic import write_if_changed
from mcpp.cas.blobstore import StoreError
from mcpp.cas.digest import Digest
from mcpp.cas.ingest import Ingest, PendingBlob, pending_bytes, store_blobs, take_output
from mcpp.cas.materialize import EXEC_MODE, FILE_MODE
from mcpp.cas.remote.trust import event_origin
from mcpp.cas import tree
from mcpp.sandbox import parse_depfile, read_depfile

from ..core.errors import environment_error
from ..plan.planner import Plan
from ..plan.rule_edges import declared_where
from ..report.diagnostics import coloured, parse, plain
from ..report.hidden_files import PackageDirs, hidden_file_hints
from ..report.link_hints import link_hint
from ..report.reporter import Reporter
from ..report.warned_actions import WarnedActions
from ..state.incremental import BuildState, KeyComputer
from ..trust.policy import TrustPolicy
from .action_output import shown
from .action_runner import ActionRunner, RunResult, SandboxRunner
from .discovered_inputs import discovered_from
from .explain import ExplainLog
from .head_start import HeadStart
from .restore_writer import RestoreWriter
from .stores import Stores

if TYPE_CHECKING:  # the remote layer imports gRPC: only builds that use it load it
    from mcpp.cas.remote.cache import RemoteCache


@dataclass
class Outcome:
    """What checking one action gave: a run, a cache entry, or outputs already present."""
    run: RunResult | None = None  # set when the action ran
    entry: ActionEntry | None = None  # set when restored from the action cache
    key: str = ""
    discovered: tuple[str, ...] = ()
    outputs: dict[str, Digest] = field(default_factory=dict)  # hashed outputs of a successful run
    pending: list[PendingBlob] = field(default_factory=list)  # those of them the ingest stores
    modes: dict[str, int] = field(default_factory=dict)  # 0o555 or 0o444 for each of `outputs`
    remote: bool = False  # `entry` came from the remote cache (its local key is computed in finish)

    @property
    def succeeded(self) -> bool:
        """What `finish` will answer, known on the lane (the scheduler's `proceed`): restored
        from a cache, or run with every output present and hashed."""
        return self.entry is not None or bool(self.outputs)


@dataclass
class Counters:
    """How many actions were fresh, restored from a cache or run."""
    fresh: int = 0
    cache_hits: int = 0
    remote_hits: int = 0
    executed: int = 0
    failed: int = 0
    healed: list[str] = field(default_factory=list)  # actions re-run because a blob was corrupt
    remote: dict | None = None  # what the remote cache did (RemoteCache.summary); None: not asked
    left_remote: set[str] = field(default_factory=set)  # outputs left on the remote (--remote-download)


class ActionPipeline:
    def __init__(self, plan: Plan, state: BuildState, keys: KeyComputer, runner: ActionRunner,
                 stores: Stores, reporter: Reporter, explain: ExplainLog, remote: "RemoteCache | None" = None,
                 local_slots: threading.Semaphore | None = None, trust: TrustPolicy | None = None):
        self.plan = plan
        # which results the build may take and share (engine/trust/policy.py); the default sandbox's
        self.trust = trust if trust is not None else TrustPolicy(None)
        self.state = state
        self.keys = keys
        self.runner = runner
        self.store = stores.blobs
        self.ac = stores.ac
        self.mat = stores.mat
        self.reporter = reporter
        self.explain = explain
        self.remote = remote
        # With a remote cache the scheduler runs more workers than -j, so that remote lookups
        # (mostly waiting on the network) overlap; `local_slots` keeps local processes at -j.
        self.local_slots = local_slots
        # action id -> (input digests, tool digests) the key used, for the remote cache's workers
        self.remote_keys: dict[str, tuple[dict[str, Digest], dict[str, Digest]]] = {}
        self.by_id: dict[str, Action] = plan.index()
        # Outputs another action stages (the inputs of actions that have prerequisites): only
        # these are put into the materialization area as they are stored. The rest (a depfile, a
        # binary no action runs) are restored into `target/` straight from the store, and made
        # there only if a later action stages them: a clean build creates a file fewer for each.
        self.staged_outputs = plan.staged_inputs()
        # Of those, the outputs of actions found fresh, not yet resolved for staging (`idle`).
        self.prestage: list[str] = []
        # Of those, outputs made this build that the ingest has just put into the area (its
        # thread appends, `idle` takes them into `prestage`): resolved there before, the
        # scheduler's thread read, hashed and copied each one again beside the ingest's own copy.
        self._published: deque[str] = deque()
        self.ended = 0  # actions `restore_or_run` returned, counted on the lanes (`idle` yields on a change)
        # Outputs `restore_here` restored, written into target/ off this thread (`settle_writes`).
        self.writer = RestoreWriter()
        self.candidates: dict[str, tuple[str, list[tuple[str, tuple[str, ...]]]]] = {}
        self.files_seen: dict[str, str] = {}  # headers seen to be files (discovered_inputs)
        self.counters = Counters()
        self.timings = None  # a TimingsRecorder when the build reports its timings (`--timings`)
        # The build's packages (roots, include directories), asked for only when an action fails:
        # the hint for a file its sandbox hid (report/hidden_files.py).
        self.package_dirs: Callable[[], dict[str, PackageDirs]] = dict
        self.warned = WarnedActions(state.file + ".warned")
        # Uploads read the blobs from the store right away: with them the ingest runs inline.
        self.ingest = Ingest(inline=remote is not None and remote.upload_enabled)
        # `--remote-download toplevel|minimal` (set by the build): which outputs of a remote hit
        # stay on the server; None: every output is downloaded.
        self.keep_remote: Callable[[str], bool] | None = None
        # Outputs left on the server this build (path -> digest, mode): not in target/, brought
        # when a local action reads one (`_bring`).
        self.remote_only: dict[str, tuple[Digest, int]] = {}
        self._bring_locks: dict[str, threading.Lock] = {}
        self._bring_lock = threading.Lock()
        self._producers: dict[str, Action] | None = None
        # The first action the build hands to a lane to run, and its start: until its process is
        # about to start (its inputs staged), this thread's next check or prestage waits
        # (`_after_first`), so the edit's compile is not staged at half speed beside this thread
        # checking the build's other actions, which it does a few milliseconds later instead.
        # Only where the first action is staged here, by this process's sandbox: not where lanes
        # wait on a remote cache or remote execution (nothing to stage, and nothing tells when
        # the action starts there).
        # The action begun before the schedule, if any (head_start.py): taken, not run again.
        self.head: HeadStart | None = None
        self.first_run: str | None = None
        self.first_started = threading.Event()
        self._await_first = False  # the first action is out and not yet waited for
        self._first_waits = False
        if isinstance(runner, SandboxRunner) and remote is None:
            self._first_waits = True
            runner.on_started = self._started

    # -- scheduler thread -------------------------------------------------------------------
    def check(self, action_id: str) -> bool:
        if self._await_first:
            self._after_first()
        a = self.by_id[action_id]
        if self.keys.fresh(a):
            self.counters.fresh += 1
            self.prestage.extend(self._stage_later(a))
            if self.warned.keys:  # most builds have no warning to say again: no lookup per action
                self._replay_fresh(a)
            self._event(a, "fresh")
            return True
        key1 = self.keys.key(a, ())
        sets = self.ac.get_manifest(key1) if a.depfile else [()]
        self.candidates[action_id] = (key1, [(self.keys.key(a, s) if s else key1, s) for s in sets])
        if self.remote is not None:
            # Digests come from the stat cache, which only this thread may use.
            self.remote_keys[action_id] = ({p: self.keys.digest_of(p) for p in a.inputs},
                                           {t: self.keys.tool_digest(t) for t in a.tools})
        if self.first_run is None:
            self.first_run, self._await_first = action_id, self._first_waits
        return False

    def _after_first(self) -> None:
        """Let the first action to run reach its process before this thread goes on (once:
        after `_FIRST_WAIT_S` at most, and not again)."""
        self._await_first = False
        self.first_started.wait(_FIRST_WAIT_S)

    def _started(self, action_id: str) -> None:
        if self.timings is not None:
            self.timings.process_started(action_id)
        if action_id == self.first_run:
            self.first_started.set()

    def restore_here(self, action_id: str) -> Outcome | None:
        """On the scheduler thread, just after `check`: restore the action from the local action
        cache when it holds a usable entry (copies out of the store; no process, no lane); None
        when it does not, and the action goes to a lane (`restore_or_run`: the remote cache, a
        heal, a run). Handing a restore to a lane costs two thread wake-ups and the GIL passed
        back and forth, more than the restore itself on a build of small files. The outputs'
        bytes are read and verified here and written by the `RestoreWriter` meanwhile; an action
        that goes to a lane waits for those writes first (its run may read target/)."""
        if self.remote is not None or self.remote_only:
            return None  # remote lookups overlap on the lanes; outputs left there are brought there
        outcome = self._restore_local(self.by_id[action_id], defer=True)
        if outcome is None:
            self.settle_writes()
            key1, _ = self.candidates[action_id]
            self.candidates[action_id] = (key1, [])  # looked up here: the lane does not again
        elif action_id == self.first_run:
            self.first_started.set()  # restored: it runs nothing
        return outcome

    def idle(self) -> None:
        """The scheduler thread is about to wait for a running action: resolve now the staging
        of the fresh outputs a later action reads (`SandboxRunner.prestage`), off the critical
        path. An edit-one build's link otherwise stages its thousand unchanged objects after
        the edited compile ends; here they are resolved while that compile runs. It stops as
        soon as an action ends (the scheduler has work then); the rest waits for the next wait,
        or is staged by the action that reads it."""
        runner, published = self.runner, self._published
        while published:
            self.prestage.append(published.popleft())
        if not self.prestage or not isinstance(runner, SandboxRunner):
            return
        if self._await_first:
            self._after_first()
        ended, queue, i = self.ended, self.prestage, 0
        while i < len(queue) and self.ended == ended:
            chunk = queue[i:i + _PRESTAGE_CHUNK]
            runner.prestage(chunk)
            self.keys.encode_ahead(chunk)  # their parts of the waiting action's key
            i += _PRESTAGE_CHUNK
        self.prestage = queue[i:]

    def _stage_later(self, a: Action) -> list[str]:
        """Outputs of `a` (fresh, or just made: final for this build) that a later action
        stages: resolved for it in the scheduler's waits (`idle`), not all when it starts. A clean
        build's link otherwise resolved its 10,000 objects after the last compile, ~0.2 s with
        both cores idle (bench/RESULTS.md). Not a restored action's: a rebuild restores them on
        this thread without a wait between, so the queue would be resolved only once the link
        runs, beside the link's own staging of the same files. An output left on a remote is
        not on disk. A made output is queued by the ingest's job once it has put it into the
        area (`_published`), where the resolving finds it: the caller hands the list there."""
        return [o for o in a.outputs if o in self.staged_outputs and o not in self.remote_only]

    def last_running(self) -> None:
        """The build's last action runs alone (the scheduler's `last_running`): encode the
        explain log's records now, on the core it leaves free, until it ends."""
        ended = self.ended
        self.explain.frame_ahead(lambda: self.ended != ended)

    # -- worker threads ---------------------------------------------------------------------
    def restore_or_run(self, action_id: str) -> Outcome:
        """Restore the outputs from the action cache (or the remote one), else run the action."""
        try:
            return self._restore_or_run(action_id)
        finally:
            self.ended += 1
            if action_id == self.first_run:
                self.first_started.set()  # restored, or it could not start

    def _restore_or_run(self, action_id: str) -> Outcome:
        a = self.by_id[action_id]
        outcome = self._restore_local(a)
        if outcome is not None:
            return outcome
        if self.remote is not None:
            outcome = self._remote_lookup(a)
            if outcome is not None:
                return outcome
        if self.remote_only:
            try:
                self._bring_inputs(a)
            except _Unavailable as e:
                return Outcome(run=RunResult(1, b"", f"error: action `{a.id}`: {e}\n".encode()))
        for path in a.inputs:
            if path in self.plan.generated:
                write_if_changed(os.path.join(self.plan.execroot, path), self.plan.generated[path])
        res = self._head_result(a)
        if res is None:
            with self.local_slots or nullcontext():
                res = self.runner.run(coloured(a) if self.reporter.compiler_colour else a)
        outcome = Outcome(run=res)
        if res.exit_code == 0 and all(_present(self._abs(o)) for o in a.outputs):
            for o in a.outputs:
                path = self._abs(o)
                if o.endswith("/"):
                    _read_only(path)
                    outcome.modes[o] = 0o555 if os.stat(path).st_mode & 0o111 else 0o444
                    try:
                        outcome.outputs[o] = tree.capture(path, self.store)
                    except (tree.TreeError, OSError) as e:
                        outcome.outputs.clear()
                        outcome.pending.clear()
                        res.exit_code = 1
                        res.stderr += f"error: action `{a.id}`: output {o}{e}\n".encode()
                        break
                    continue
                # Hashed here (the dependents' keys need the digest); stored by the ingest.
                blob = take_output(path)
                if o not in self.staged_outputs:  # no copy for sandboxes (see __init__)
                    blob = replace(blob, materialize=False)
                outcome.outputs[o] = blob.digest
                outcome.modes[o] = 0o555 if blob.executable else 0o444
                outcome.pending.append(blob)
        if not self.ingest.inline and any(b.digest.size >= _STORE_EARLY for b in outcome.pending):
            # Stored from here, as soon as hashed: the compression of a large output (the
            # build's binary, whose action is usually the last) then overlaps its `finish` and
            # the records' save, which the answer waits for, instead of starting after them.
            # Every output present is stored, cached or not (`_finish_run`), so nothing there
            # decides otherwise; the entry that names them is submitted by `finish`, after this
            # job (one thread, in order). Small outputs (objects: a compression of well under a
            # millisecond) keep one job per action, which saves the ingest a wake-up each.
            pending, outcome.pending = outcome.pending, []
            self.ingest.submit(a.id, lambda: store_blobs(pending, self.store, self.mat))
        return outcome

    def _head_result(self, a: Action) -> RunResult | None:
        """The run of `a` begun before the schedule (waited for), when there is one to take."""
        head = self.head
        if head is None or head.action is None or head.action.id != a.id:
            return None
        if a.id == self.first_run:  # its process started long ago: the scheduler need not wait for it
            self.first_started.set()
        return head.take(a.id)

    def _restore_local(self, a: Action, defer: bool = False) -> Outcome | None:
        """The outputs restored from the local action cache, or None: no usable entry, or one
        whose blob was missing or corrupt (deleted here, so the action runs and stores its
        outputs again: the heal). `defer`: written by the `RestoreWriter` (`restore_here`)."""
        for key, discovered in self.candidates[a.id][1]:
            entry = self.ac.get(key)
            if entry is None or entry.exit_code != 0:
                continue
            if not self.trust.accepts_cached(entry.origin):
                continue  # fetched from a remote unverified: trusted keys now require a signature
            try:
                self._restore(a, entry, defer)
                return Outcome(entry=entry, key=key, discovered=discovered)
            except StoreError:
                # The verifying store already discarded the blob.
                self.ac.delete(key)
                self.counters.healed.append(a.id)
                return None
        return None

    def _remote_lookup(self, a: Action) -> Outcome | None:
        inputs, tools = self.remote_keys[a.id]
        platform = self.keys.platform_of(a)
        if not self.trust.accepts_remote(platform):  # never uploaded: no remote holds one
            return None
        hit = self.remote.lookup(a, platform, tools, inputs, self.keep_remote)
        if hit is None:
            return None
        try:
            self._restore(a, hit.entry)
        except StoreError:
            return None  # the blobs were just stored; losing one now means a broken local store
        return Outcome(entry=hit.entry, discovered=hit.discovered, remote=True)

    def _restore(self, a: Action, entry: ActionEntry, defer: bool = False) -> None:
        missing = self.store.find_missing([d for d, _ in entry.outputs.values()])
        kept: set[str] = set()  # outputs that stay on the server (`--remote-download`)
        if missing and self.keep_remote is not None and self.remote is not None:
            absent = set(missing)
            kept = {o for o, (d, _) in entry.outputs.items()
                    if d in absent and o in a.outputs and self.keep_remote(o) and self.remote.can_fetch(d)}
            needed = {d for o, (d, _) in entry.outputs.items() if o not in kept}
            missing = [d for d in missing if d in needed]
            # left on the server by an earlier build, wanted here now (a top-level artifact)
            if missing and self.remote.fetch(missing):
                missing = []
        if missing:
            raise StoreError(f"{len(missing)} blob(s) missing")
        for out in a.outputs:
            if out not in entry.outputs:
                raise StoreError(f"entry lacks {out}")
            if out.endswith("/"):  # a tree: every file it names must be here before any is written
                try:
                    missing = self.store.find_missing(tree.blobs(entry.outputs[out][0], self.store))
                except tree.TreeError as e:
                    raise StoreError(str(e)) from None
                if missing:
                    raise StoreError(f"{len(missing)} blob(s) of tree {out} missing")
        for out in a.outputs:
            digest, mode = entry.outputs[out]
            if out in kept:
                # Not in target/: a stale copy there must never be read in its place.
                try:
                    os.unlink(self._abs(out))
                except FileNotFoundError:
                    pass
                with self._bring_lock:
                    self.remote_only[out] = (digest, mode)
                continue
            if out.endswith("/"):
                tree.materialize(digest, self.store, self._abs(out),
                                 lambda d, p, x: self.mat.copy_into(d, p, executable=x))
                continue
            executable = bool(mode & 0o111)
            # read and verified here (a corrupt blob heals the action now), written meanwhile
            data = self.mat.copy_bytes(digest, executable) if defer else None
            if data is None:
                self.mat.copy_into(digest, self._abs(out), executable=executable)
            else:
                self.writer.put(out, self._abs(out), data, EXEC_MODE if executable else FILE_MODE, digest)

    def settle_writes(self) -> None:
        """Wait for the restored outputs being written (`RestoreWriter.settle`, which raises a
        write that failed); the stat cache learns each, as it learns an output restored here."""
        for rel, digest in self.writer.settle().items():
            self.state.remember_output(rel, digest)

    # -- outputs left on the server (worker threads) ------------------------------------------
    def _bring_inputs(self, a: Action) -> None:
        """Put every output `a` may read that was left on the server into target/: fetched and
        verified (`RemoteCache.fetch`), else made here by running the action that made it."""
        for path in (*a.inputs, *a.may_read, *a.tools):
            if path in self.remote_only:
                self._bring(path)

    def _bring(self, path: str) -> None:
        with self._bring_lock:
            lock = self._bring_locks.setdefault(path, threading.Lock())
        with lock:
            item = self.remote_only.get(path)
            if item is None:
                return  # another action brought it
            digest, mode = item
            if self.remote is not None and self.remote.fetch([digest]):
                self.mat.copy_into(digest, self._abs(path), executable=bool(mode & 0o111))
            else:
                self._rebuild(path, digest)
            with self._bring_lock:
                self.remote_only.pop(path, None)

    def _rebuild(self, path: str, digest: Digest) -> None:
        """Run the action that made `path` here (its blob is gone from the server, or the
        server is): its output must be the bytes its dependents were keyed on."""
        if self._producers is None:
            self._producers = {o: a for a in self.plan.actions for o in a.outputs}
        a = self._producers[path]
        self._bring_inputs(a)
        for p in a.inputs:
            if p in self.plan.generated:
                write_if_changed(os.path.join(self.plan.execroot, p), self.plan.generated[p])
        with self.local_slots or nullcontext():
            res = self.runner.run(a)
        if res.exit_code != 0 or not all(_present(self._abs(o)) for o in a.outputs if not o.endswith("/")):
            raise _Unavailable(f"`{path}` is gone from the remote cache and `{a.id}` failed to make it again")
        for o in a.outputs:
            if o.endswith("/"):
                continue
            _read_only(self._abs(o))
            made = self.store.put_file(self._abs(o))
            if o == path and made != digest:
                raise _Unavailable(f"`{path}` is gone from the remote cache and `{a.id}` made it again with "
                                   "other bytes than the cached result (the tool is not deterministic); "
                                   "build with --remote-download all, which runs it here for every dependent")
            if o != path:
                with self._bring_lock:
                    self.remote_only.pop(o, None)

    # -- scheduler thread -------------------------------------------------------------------
    def finish(self, action_id: str, outcome: Outcome) -> bool:
        a = self.by_id[action_id]
        if outcome.remote:
            return self._finish_remote(a, outcome)
        if outcome.entry is not None:
            return self._finish_cached(a, outcome)
        return self._finish_run(a, outcome)

    def _finish_remote(self, a: Action, outcome: Outcome) -> bool:
        """Record a remote hit locally (entry, header manifest), then finish it as a cache hit."""
        key = self.keys.key(a, outcome.discovered)
        outcome.key = key
        self.ac.put(key, outcome.entry)
        if a.depfile:
            self.ac.add_manifest(self.candidates[a.id][0], outcome.discovered)
        return self._finish_cached(a, outcome, status="remote")

    def _finish_cached(self, a: Action, outcome: Outcome, status: str = "cached") -> bool:
        entry = outcome.entry
        self._replay(a, entry)
        self.warned.set(a.id, outcome.key, entry.stdout is not None or entry.stderr is not None)
        # the stat cache learns an output being written once it is (`settle_writes`)
        self.keys.outputs_settled({out: digest for out, (digest, _mode) in entry.outputs.items()},
                                  self.remote_only or self.writer.unwritten)
        outputs = {out: str(digest) for out, (digest, _mode) in entry.outputs.items()}
        self.state.record(a.id, outcome.key, outcome.discovered, outputs)
        origin = event_origin(status, entry.origin)
        self.explain.record(a, outcome.key, self._keyed_inputs(a, outcome.discovered), self.keys,
                            origin=origin, outputs=outputs)
        if status == "remote":
            self.counters.remote_hits += 1
        else:
            self.counters.cache_hits += 1
            self._republish(a, outcome)
        self._event(a, status, origin=origin)
        return True

    def _republish(self, a: Action, outcome: Outcome) -> None:
        """With uploads on, a local hit is offered to the remote, which uploads it only if the
        server lacks its result (`RemoteCache.republish`, on an upload thread)."""
        if self.remote is None or not self.remote.upload_enabled or a.id not in self.remote_keys \
                or outcome.entry is None:
            return
        platform = self.keys.platform_of(a)
        if self.trust.uploads(platform):
            self.remote.republish(a, platform, self.remote_keys[a.id][1],
                                  self._keyed_inputs(a, outcome.discovered), outcome.discovered, outcome.entry)

    def _finish_run(self, a: Action, outcome: Outcome) -> bool:
        res = outcome.run
        assert res is not None, "an outcome neither restored nor run"
        raw = (res.stdout + res.stderr).decode("utf-8", "replace")
        text = shown(raw, self.plan.execroot)
        self._show(a, text)
        if not outcome.outputs and res.exit_code != 0:
            hint = link_hint(a, text, self.plan.prereqs.get(a.id, ()))
            if hint:
                self.reporter.raw_warning(hint)
            if "No such file or directory" in raw or "file not found" in raw:
                for line in hidden_file_hints(a, raw, self.plan.execroot, self.plan.package_of.get(a.id),
                                              self.package_dirs()):
                    self.reporter.raw_warning(line)
        if not outcome.outputs:
            self.state.forget(a.id)
            if res.exit_code == 0:
                missing = [o for o in a.outputs if not _present(self._abs(o))]
                declared = declared_where(self.plan, a.id)  # a build program's action: where it was declared
                where = f"{declared}: " if declared else ""
                self.reporter.error(f"{where}error: action `{a.id}` did not produce {', '.join(missing)} (as a file)")
            self.counters.failed += 1
            self._event(a, "failed", exit_code=res.exit_code, duration=round(res.duration, 3),
                        **({"worker": res.worker} if res.worker else {}))
            return False
        discovered: tuple[str, ...] = ()
        if a.depfile:
            # parsed once: by the sandbox's check where it ran one (the same bytes, moved here)
            deps = res.deps if res.deps is not None else \
                parse_depfile(read_depfile(self._abs(a.depfile), errors="replace"))
            discovered = discovered_from(deps, self.plan.execroot, set(a.inputs) | set(a.outputs), self.files_seen)
        self.keys.outputs_settled(outcome.outputs)
        later = self._stage_later(a)
        key = self.keys.key(a, discovered)
        inputs = self._keyed_inputs(a, discovered)
        texts = [pending_bytes(t) if t else None for t in (res.stdout, res.stderr)]
        entry = ActionEntry(
            outputs={o: (d, outcome.modes[o]) for o, d in outcome.outputs.items()},
            exit_code=0,
            stdout=texts[0].digest if texts[0] else None,
            stderr=texts[1].digest if texts[1] else None)
        blobs = outcome.pending + [t for t in texts if t]
        outcome.pending = []
        if not res.changed and not self.trust.stages_inputs:
            res.changed = self._saved_while_reading(a, discovered)
        origin = event_origin("executed", None, res.worker)
        if res.changed:
            self._keep_uncached(a, res, blobs, later)
        else:
            key1 = self.candidates[a.id][0] if a.depfile else None

            def ingest() -> None:
                # Blobs first, then the records that name them: an interrupted ingest leaves no
                # entry pointing at a missing blob, nor does one whose outputs' job (submitted
                # by the lane, before this one) failed.
                if self.ingest.failed(a.id):
                    return
                self._store_and_publish(blobs, later)
                self.ac.put(key, entry)
                if key1 is not None:
                    self.ac.add_manifest(key1, discovered)

            self.ingest.submit(a.id, ingest)
            self.warned.set(a.id, key, bool(res.stdout or res.stderr))
            if self.remote is not None and self.remote.upload_enabled:
                platform = self.keys.platform_of(a)
                if self.trust.uploads(platform):  # a result the sandbox cannot prove stays here (engine/trust/policy.py)
                    self.remote.upload(a, platform, self.remote_keys[a.id][1], inputs, discovered, entry)
            outputs = {o: str(d) for o, d in outcome.outputs.items()}
            self.state.record(a.id, key, discovered, outputs)
            self.explain.record(a, key, inputs, self.keys, origin=origin, outputs=outputs)
        self.counters.executed += 1
        self._event(a, "executed", exit_code=0, duration=round(res.duration, 3), origin=origin,
                    **({"worker": res.worker} if res.worker else {}))
        return True

    def _keep_uncached(self, a: Action, res: RunResult, blobs: list[PendingBlob], later: list[str]) -> None:
        """A run that read an input saved anew after the build hashed it (engine/exec/staging.py):
        its key names the old bytes, its outputs come from the new ones. Its outputs serve this
        build (stored for the actions that read them), but no cache entry, remote upload or
        state record names them: a later build with the old bytes back would take them as the
        old bytes' result. The next build runs it again, as Bazel's guard against concurrent
        changes does."""
        self.ingest.submit(a.id, lambda: self._store_and_publish(blobs, later))
        self.state.forget(a.id)
        names = ", ".join(f"`{rel}`" for rel in res.changed)
        self.reporter.warning(f"{names} changed during the build, after it was hashed: action `{a.id}` ran on "
                              "the new bytes and is not cached; the next build runs it again")

    def _store_and_publish(self, blobs: list[PendingBlob], later: list[str]) -> None:
        """The ingest's job for a run's outputs: store them, then queue those a later action
        stages for resolving (`_published`, drained by `idle`). In this order: the resolving
        then finds each in the store's area with one `stat`; queued before, the scheduling
        thread would copy the output into the area a second time beside this job's copy."""
        store_blobs(blobs, self.store, self.mat)
        self._published.extend(later)

    def _saved_while_reading(self, a: Action, discovered: tuple[str, ...]) -> tuple[str, ...]:
        """`--sandbox off`: the action read the real tree, not staged copies; a source whose stat
        is no longer the one its digest (the key's) was taken under may have been read with other
        bytes (saved before or while it ran), as Bazel's guard against concurrent changes checks.
        Only the build's own files, as Bazel's `lite` guard: the files the engine wrote
        (generated) and this build's outputs are not the user's to save, and headers outside the
        execroot (the system's, named by absolute path) are not edited during a build; skipping
        them leaves a compile a few stats instead of dozens."""
        produced, generated = self.keys.produced, self.plan.generated
        files = [(rel, self._abs(rel), bytes.fromhex(self.keys.digest_of(rel).hash))
                 for rel in dict.fromkeys(a.inputs + discovered)
                 if not (rel in produced or rel in generated or rel.endswith("/") or rel.startswith("/"))]
        held = set(self.state.stats.holding(files))
        return tuple(rel for rel, _path, _hash in files if rel not in held)

    def drain(self, result) -> None:
        """Wait for the background ingest (called once, after the last action); an action whose
        outputs could not be stored fails the build (`result.failed`) and runs again next time.
        A file system that refused the store (a file where `$MCPP_HOME/cas` belongs, a read-only
        or full disk) is one error naming what is in the way, not one per action."""
        refused: OSError | None = None
        for label, err in self.ingest.wait():
            self.state.forget(label)
            self.counters.failed += 1
            if label in result.succeeded:
                result.succeeded.remove(label)
            result.failed.append(label)
            if isinstance(err, OSError):
                refused = refused or err
            else:
                self.reporter.error(f"error: action `{label}`: its outputs could not be stored: {err}")
        if refused is not None:
            raise environment_error(refused)

    # -- helpers ----------------------------------------------------------------------------------
    def _keyed_inputs(self, a: Action, discovered: tuple[str, ...]) -> dict[str, Digest]:
        return {p: self.keys.digest_of(p) for p in sorted(set(a.inputs) | set(discovered))}

    def _replay(self, a: Action, entry: ActionEntry) -> None:
        text = b""
        for d in (entry.stdout, entry.stderr):
            if d is not None:
                try:
                    text += self.store.get(d)
                except StoreError:
                    pass
        if text:
            self._show(a, shown(text.decode("utf-8", "replace"), self.plan.execroot), replayed=True)

    def _replay_fresh(self, a: Action) -> None:
        """Say again what a fresh action printed when it last ran: its warnings stay on screen
        until fixed, as Cargo's do (only actions that printed something cost a lookup)."""
        key = self.warned.key_of(a.id)
        rec = self.state.recorded(a.id)
        if key is None or rec is None or rec[0] != key:
            return
        entry = self.ac.get(key)
        if entry is not None:
            self._replay(a, entry)

    def _show(self, a: Action, text: str, replayed: bool = False) -> None:
        """An action's output: verbatim for the user, one `compiler-message` event per diagnostic
        (with `file`, `line`, `column`, `severity`, `message` and its `rendered` text) for tools."""
        if not text:
            return
        self.reporter.diagnostics(text if self.reporter.compiler_colour else plain(text))
        extra = {"replayed": True} if replayed else {}
        for record in parse(plain(text)):
            self.reporter.event("compiler-message", id=a.id, package=self.plan.package_of[a.id], **record, **extra)

    def _event(self, a: Action, status: str, **extra) -> None:
        if self.timings is not None:
            self.timings.status(a.id, a.kind, self.plan.package_of[a.id], status)
        if extra:
            self.reporter.event("action-finished", id=a.id, kind=a.kind, package=self.plan.package_of[a.id],
                                status=status, **extra)
        else:
            self.reporter.action_finished(a.id, a.kind, self.plan.package_of[a.id], status)

    def _abs(self, rel: str) -> str:
        return os.path.join(self.plan.execroot, rel)



# Fresh outputs `idle` resolves between two looks at whether an action ended.
_PRESTAGE_CHUNK = 64
# An action with an output of this size or more has its outputs stored as soon as they are
# hashed (`_restore_or_run`), ahead of its `finish`.
_STORE_EARLY = 1 << 20
# How long the scheduling thread lets the first action to run have the interpreter to itself
# while that action's inputs are staged (`ActionPipeline._after_first`): a compile's take a
# few milliseconds; a link of thousands of objects is not waited for to the end.
_FIRST_WAIT_S = 0.02


class _Unavailable(Exception):
    """An output left on the server can be neither fetched nor made again."""


def _read_only(path: str) -> bool:
    """Give a produced output (each file of a tree output) the mode a restored one has, 0555 or
    0444, as Bazel does: a later action then sees the same mode under every sandbox, including
    `off`, which reads `target/` in place (a tar of a binary is the same bytes everywhere), and a
    stray write into `target/` fails instead of silently diverging from the cache. Returns
    whether a file output is executable (the stat taken here answers that too)."""
    paths = [path] if not path.endswith("/") else [
        os.path.join(d, f) for d, _, files in os.walk(path) for f in files]
    executable = False
    for p in paths:
        st = os.lstat(p)
        if not stat.S_ISLNK(st.st_mode):
            executable = bool(st.st_mode & 0o111)
            os.chmod(p, 0o555 if executable else 0o444)
    return executable


def _present(path: str) -> bool:
    """An output is there: a regular file, or for a tree output (`.../`) a directory."""
    return os.path.isdir(path) if path.endswith("/") else os.path.isfile(path)
