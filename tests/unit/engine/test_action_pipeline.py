"""ActionPipeline over a two-action plan with a fake ActionRunner: what each build runs, restores
or leaves alone, and what it writes to the action cache and the build state."""
from __future__ import annotations

import io
import json
import os
import shutil
import threading
import time

import pytest
from engine_testdata import write

from mcpp.cas.action import Action, Platform
from mcpp.cas.home import Home
from mcpp.cas.statcache import StatCache
from mcpp.engine.exec.action_runner import RunResult, SandboxRunner, prepare_outputs
from mcpp.engine.core.errors import BuildFailed
from mcpp.engine.exec.explain import ExplainLog, load_records
from mcpp.engine.state.incremental import BuildState, KeyComputer
from mcpp.engine.package.layout import Layout
from mcpp.engine.exec.pipeline import _PRESTAGE_CHUNK, ActionPipeline
from mcpp.engine.plan.planner import Plan
from mcpp.engine.report.reporter import Reporter
from mcpp.engine.exec.schedule import run_graph
from mcpp.engine.exec.stores import Stores

PLATFORM = Platform("fake 1 x86_64-linux-gnu", "x86_64-linux-gnu")
UPPER = Action(id="upper a", argv=("upper", "src/in.txt"), inputs=("src/in.txt",),
               outputs=("target/dev/a.txt",))
JOIN = Action(id="join b", argv=("join", "target/dev/a.txt", "gen/msg.txt"),
              inputs=("target/dev/a.txt", "gen/msg.txt"), outputs=("target/dev/b.txt",),
              may_read=("src/extra.h",), depfile="target/dev/b.d")


class FakeRunner:
    """Does in Python what a compiler would: reads the inputs, writes the outputs (and, for
    JOIN, a depfile naming a header it read), and counts what it ran."""

    def __init__(self, root: str):
        self.root = root
        self.ran: list[str] = []

    def run(self, action: Action) -> RunResult:
        self.ran.append(action.id)
        prepare_outputs(self.root, action)
        read = lambda rel: open(os.path.join(self.root, rel)).read()  # noqa: E731
        if action is UPPER:
            write(self.root, "target/dev/a.txt", read("src/in.txt").upper())
            return RunResult(0, b"", b"")
        text = read("target/dev/a.txt") + read("gen/msg.txt") + read("src/extra.h")
        write(self.root, "target/dev/b.txt", text)
        write(self.root, "target/dev/b.d", "target/dev/b.txt: target/dev/a.txt src/extra.h\n")
        return RunResult(0, b"", b"warning: joined\n")


@pytest.fixture
def ws(execroot):
    write(execroot, "src/in.txt", "hello ")
    write(execroot, "src/extra.h", "!")
    return execroot


def build(ws, home: Home, runner: FakeRunner, refused: list | None = None):
    """One build of the plan as `build._run_plan` does it: fresh state objects from disk."""
    layout = Layout(str(ws), str(ws / "target"), str(ws), "dev")
    plan = Plan(layout.execroot, generated={"gen/msg.txt": b"world"})
    plan.add(UPPER, "p", [])
    plan.add(JOIN, "p", [UPPER.id])
    refused = [] if refused is None else refused
    stats = StatCache(layout.stat_cache)
    state = BuildState(layout.action_state, layout.execroot, stats)
    out = io.StringIO()
    stores = Stores.open(home)
    pipeline = ActionPipeline(plan, state, KeyComputer(state, PLATFORM, plan.generated), runner, stores,
                              Reporter(json_mode=True, out=out, err=io.StringIO()),
                              ExplainLog(layout.explain_log, "fake"))
    result = run_graph([a.id for a in plan.actions], plan.prereqs, jobs=2, check=pipeline.check,
                       execute=pipeline.restore_or_run, finish=pipeline.finish, before_wait=pipeline.idle,
                       here=pipeline.restore_here)
    pipeline.settle_writes()
    try:
        pipeline.drain(result)
    except BuildFailed as e:  # the store's file system refused (named once, as the command line shows it)
        refused.append(e.message)
    state.save()
    pipeline.explain.save()
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    status = {e["id"]: e["status"] for e in events if e["reason"] == "action-finished"}
    return status, state, stores, layout, result.ok


def test_executed_then_fresh_then_cached_then_rerun_on_a_header_change(ws, tmp_path):
    home = Home(tmp_path / "home")
    runner = FakeRunner(str(ws))

    # 1. Nothing recorded: both actions run; the generated input is written first.
    status, state, stores, layout, ok = build(ws, home, runner)
    assert ok
    assert status == {UPPER.id: "executed", JOIN.id: "executed"}
    assert runner.ran == [UPPER.id, JOIN.id]
    assert (ws / "gen/msg.txt").read_text() == "world"
    assert (ws / "target/dev/b.txt").read_text() == "HELLO world!"
    for a in (UPPER, JOIN):
        key, discovered, outputs = state.recorded(a.id)
        entry = stores.ac.get(key)
        assert entry is not None and entry.exit_code == 0
        assert {o: str(d) for o, (d, _mode) in entry.outputs.items()} == outputs
        assert set(load_records(layout.explain_log)[a.id][-1]["inputs"]) == set(a.inputs) | set(discovered)
    assert state.discovered(JOIN.id) == ("src/extra.h",)
    key, _, _ = state.recorded(JOIN.id)
    assert stores.blobs.get(stores.ac.get(key).stderr) == b"warning: joined\n"
    first_level = KeyComputer(state, PLATFORM, {"gen/msg.txt": b"world"}).key(JOIN, ())
    assert stores.ac.get_manifest(first_level) == [("src/extra.h",)]
    assert set(load_records(layout.explain_log)) == {UPPER.id, JOIN.id}

    # 2. Same inputs, outputs intact: both fresh, nothing runs or is restored.
    status, *_ = build(ws, home, runner)
    assert status == {UPPER.id: "fresh", JOIN.id: "fresh"}
    assert len(runner.ran) == 2

    # 3. target/ gone (outputs and state): both come back from the action cache, restored by
    # the scheduler's thread (no lane is started for a restore).
    shutil.rmtree(ws / "target")
    started = []
    real = threading.Thread.start
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(threading.Thread, "start", lambda self: started.append(self.name) or real(self))
        status, state, *_ = build(ws, home, runner)
    assert status == {UPPER.id: "cached", JOIN.id: "cached"}
    assert not [name for name in started if name.startswith("mcpp-lane")]
    assert len(runner.ran) == 2
    assert (ws / "target/dev/b.txt").read_text() == "HELLO world!"
    assert state.discovered(JOIN.id) == ("src/extra.h",)  # from the header manifest

    # 4. A header the depfile named changes: only the action that read it runs again.
    write(ws, "src/extra.h", "?")
    status, *_ = build(ws, home, runner)
    assert status == {UPPER.id: "fresh", JOIN.id: "executed"}
    assert runner.ran[2:] == [JOIN.id]
    assert (ws / "target/dev/b.txt").read_text() == "HELLO world?"


def test_a_failed_action_is_forgotten_and_not_cached(ws, tmp_path):
    class Failing(FakeRunner):
        def run(self, action):
            res = super().run(action)
            return RunResult(1, b"", b"error: no\n") if action is JOIN else res

    status, state, stores, _, ok = build(ws, Home(tmp_path / "home"), Failing(str(ws)))
    assert not ok
    assert status == {UPPER.id: "executed", JOIN.id: "failed"}
    assert state.recorded(JOIN.id) is None and state.recorded(UPPER.id) is not None
    assert sum(1 for f in stores.ac.iter_files() if not f.manifest) == 1


# -- the store ingest runs behind the build (cas/ingest.py) -------------------------------------

import threading  # noqa: E402

from mcpp.cas.digest import digest_bytes  # noqa: E402
from mcpp.engine.exec import pipeline as pipeline_mod  # noqa: E402


def _no_entry_names_a_missing_blob(stores) -> int:
    """Every action-cache entry's blobs are in the store; answers how many entries there are."""
    n = 0
    for f in stores.ac.iter_files():
        if not f.manifest:
            entry = stores.ac.get(f.key)
            assert stores.blobs.find_missing(entry.blobs()) == [], f"entry {f.key} names a missing blob"
            n += 1
    return n


def test_a_dependent_starts_before_its_inputs_are_stored(ws, tmp_path, monkeypatch):
    """JOIN runs while UPPER's output is still only in target/ (hashed, not yet compressed into
    the store); both are stored, with their entries, by the time the build returns."""
    home = Home(tmp_path / "home")
    gate = threading.Event()
    real = pipeline_mod.store_blobs

    def held(blobs, store, mat):
        assert gate.wait(10), "the dependent never ran while the ingest was held"
        real(blobs, store, mat)

    monkeypatch.setattr(pipeline_mod, "store_blobs", held)
    a_txt = digest_bytes(b"HELLO ")
    seen = {}

    class Watching(FakeRunner):
        def run(self, action):
            if action is JOIN:
                seen["upper stored when join ran"] = Stores.open(home).blobs.has(a_txt)
                gate.set()
            return super().run(action)

    status, state, stores, _, ok = build(ws, home, Watching(str(ws)))
    assert ok and status == {UPPER.id: "executed", JOIN.id: "executed"}
    assert seen == {"upper stored when join ran": False}
    assert stores.blobs.get(a_txt) == b"HELLO "
    assert _no_entry_names_a_missing_blob(stores) == 2


@pytest.mark.parametrize("early", [False, True], ids=["one-job", "outputs-stored-early"])
def test_a_failed_ingest_fails_the_build_and_the_action_runs_again(ws, tmp_path, monkeypatch, early):
    """Also where the lane stores the outputs in a job of their own (`_STORE_EARLY`, as for a
    large binary): the entry, a later job, is not written when they could not be stored."""
    if early:
        monkeypatch.setattr(pipeline_mod, "_STORE_EARLY", 0)
    home = Home(tmp_path / "home")
    real = pipeline_mod.store_blobs

    def disk_full(blobs, store, mat):
        if any(b.data == b"HELLO world!" for b in blobs):
            raise OSError(28, "No space left on device")
        real(blobs, store, mat)

    monkeypatch.setattr(pipeline_mod, "store_blobs", disk_full)
    runner = FakeRunner(str(ws))
    refused: list[str] = []
    status, state, stores, _, ok = build(ws, home, runner, refused)
    assert not ok and refused == ["No space left on device (errno 28)"]
    assert state.recorded(JOIN.id) is None and state.recorded(UPPER.id) is not None
    assert _no_entry_names_a_missing_blob(stores) == 1  # UPPER's entry only
    monkeypatch.undo()
    status, *_ = build(ws, home, runner)
    assert status == {UPPER.id: "fresh", JOIN.id: "executed"}


@pytest.mark.parametrize("early", [False, True], ids=["one-job", "outputs-stored-early"])
def test_an_interrupted_build_leaves_no_entry_naming_a_missing_blob(ws, tmp_path, monkeypatch, early):
    """Ctrl-C while ingest jobs wait: `abandon` drops the jobs not started; whatever was
    written is whole (blobs before entries). Where the lane stored UPPER's outputs in a job of
    their own (`_STORE_EARLY`), that is the job running at the stop: the entry, a later job, is
    dropped."""
    if early:
        monkeypatch.setattr(pipeline_mod, "_STORE_EARLY", 0)
    home = Home(tmp_path / "home")
    started = threading.Event()
    release = threading.Event()
    real = pipeline_mod.store_blobs

    def slow(blobs, store, mat):
        started.set()
        release.wait(10)
        real(blobs, store, mat)

    monkeypatch.setattr(pipeline_mod, "store_blobs", slow)

    class Interrupted(FakeRunner):
        def run(self, action):
            if action is JOIN:
                started.wait(10)
                threading.Timer(0.2, release.set).start()  # the running job finishes after the stop
                raise KeyboardInterrupt
            return super().run(action)

    layout = Layout(str(ws), str(ws / "target"), str(ws), "dev")
    plan = Plan(layout.execroot, generated={"gen/msg.txt": b"world"})
    plan.add(UPPER, "p", [])
    plan.add(JOIN, "p", [UPPER.id])
    state = BuildState(layout.action_state, layout.execroot, StatCache(layout.stat_cache))
    stores = Stores.open(home)
    pipeline = ActionPipeline(plan, state, KeyComputer(state, PLATFORM, plan.generated), Interrupted(str(ws)),
                              stores, Reporter(json_mode=True, out=io.StringIO(), err=io.StringIO()),
                              ExplainLog(layout.explain_log, "fake"))
    with pytest.raises(KeyboardInterrupt):
        try:
            run_graph([a.id for a in plan.actions], plan.prereqs, jobs=2, check=pipeline.check,
                      execute=pipeline.restore_or_run, finish=pipeline.finish)
        finally:
            pipeline.ingest.abandon()
    assert _no_entry_names_a_missing_blob(stores) == (0 if early else 1)  # the running job finished, whole
    assert stores.blobs.get(digest_bytes(b"HELLO ")) == b"HELLO "
    tmp_names = [n for d, _, fs in os.walk(home.root) for n in fs if n.startswith(".tmp-")]
    assert tmp_names == []


class ParsedRunner(FakeRunner):
    """A runner whose sandbox parsed JOIN's depfile already (`RunResult.deps`, as the bwrap and
    dir sandboxes hand over the parse of their depfile check)."""

    def __init__(self, root: str, deps: list[str]):
        super().__init__(root)
        self.deps = deps

    def run(self, action: Action) -> RunResult:
        res = super().run(action)
        if action is JOIN:
            res.deps = self.deps
        return res


def test_the_pipeline_takes_the_depfile_parse_the_runner_hands_over(ws, tmp_path):
    """The pipeline reads no depfile the sandbox parsed: what the runner hands over is what is
    recorded (here it names the header the depfile on disk leaves out: the read would not)."""
    write(ws, "src/other.h", "?")
    runner = ParsedRunner(str(ws), ["target/dev/a.txt", "src/extra.h", "src/other.h"])
    status, state, *_ = build(ws, Home(tmp_path / "home"), runner)
    assert status[JOIN.id] == "executed"
    assert state.discovered(JOIN.id) == ("src/extra.h", "src/other.h")


class _Staging(SandboxRunner):
    """A `SandboxRunner` that runs actions as `FakeRunner` does, logging each `stage` call and
    each run in one sequence. With `prestages`, a run lasts until something was staged (up to
    a few seconds), as a compile lasts while the scheduler waits for it."""

    def __init__(self, root: str, prestages: bool):
        self.fake = FakeRunner(root)
        self.log: list[str] = []
        self.staged = threading.Event()

        def stage(rel: str) -> str:
            self.log.append("stage " + rel)
            self.staged.set()
            return rel

        super().__init__(lambda: None, root, stage, prestages=prestages)

    def run(self, action: Action) -> RunResult:
        if self.prestages:
            self.staged.wait(5)
        self.log.append("run " + action.id)
        return self.fake.run(action)


@pytest.mark.parametrize("prestages", [True, False])
def test_fresh_outputs_a_later_action_stages_are_resolved_while_the_scheduler_waits(ws, tmp_path, prestages):
    """An edit that re-runs JOIN only: UPPER is fresh, and its output, which JOIN stages, is
    resolved for staging while the scheduler waits for JOIN, before JOIN runs (in an edit-one
    build, the link's thousand unchanged objects while the edited compile runs); never where
    the sandbox stages nothing (`--sandbox off`)."""
    home = Home(tmp_path / "home")
    build(ws, home, FakeRunner(str(ws)))
    (ws / "src/extra.h").write_text("?")
    runner = _Staging(str(ws), prestages)
    status, *_ , ok = build(ws, home, runner)
    assert ok and status == {UPPER.id: "fresh", JOIN.id: "executed"}
    if prestages:
        assert runner.log == ["stage target/dev/a.txt", "run " + JOIN.id]
    else:
        assert runner.log == ["run " + JOIN.id]



class _StagingAtOnce(_Staging):
    """`_Staging` that resolves ahead and runs each action at once (the test drives the waits)."""

    def run(self, action: Action) -> RunResult:
        self.log.append("run " + action.id)
        return self.fake.run(action)


def test_an_output_made_in_this_build_is_resolved_for_its_stager_once_the_ingest_has_stored_it(ws, tmp_path):
    """A clean build: UPPER runs, and its output, which JOIN stages, is resolved for staging in
    one of the scheduler's waits (not by JOIN when it starts: a clean build's link, every object
    after the last compile with both cores idle), and only once the ingest has put it into the
    materialization area: resolved before, the scheduler's thread read, hashed and copied each
    object beside the ingest's own copy of it."""
    runner = _StagingAtOnce(str(ws), prestages=True)
    layout = Layout(str(ws), str(ws / "target"), str(ws), "dev")
    plan = Plan(layout.execroot, generated={"gen/msg.txt": b"world"})
    plan.add(UPPER, "p", [])
    plan.add(JOIN, "p", [UPPER.id])
    state = BuildState(layout.action_state, layout.execroot, StatCache(layout.stat_cache))
    stores = Stores.open(Home(tmp_path / "home"))
    pipeline = ActionPipeline(plan, state, KeyComputer(state, PLATFORM, plan.generated), runner, stores,
                              Reporter(json_mode=True, out=io.StringIO(), err=io.StringIO()),
                              ExplainLog(layout.explain_log, "fake"))
    held = threading.Event()
    pipeline.ingest.submit("held", lambda: held.wait(5))  # the ingest's thread is busy with an earlier job
    assert not pipeline.check(UPPER.id)
    pipeline.finish(UPPER.id, pipeline.restore_or_run(UPPER.id))
    pipeline.idle()
    assert runner.log == ["run " + UPPER.id]  # not stored yet: left to the ingest
    held.set()
    pipeline.ingest.wait()
    pipeline.idle()
    assert runner.log == ["run " + UPPER.id, "stage target/dev/a.txt"]
    digest = pipeline.keys.digest_of("target/dev/a.txt")
    assert os.path.isfile(stores.mat.path(digest))  # there when it was resolved


def test_the_resolving_ahead_yields_as_soon_as_an_action_ends(ws, tmp_path):
    """`idle` works in pieces and stops once an action has ended (the scheduler has a finish
    to do); what is left waits for its next wait."""
    home = Home(tmp_path / "home")
    layout = Layout(str(ws), str(ws / "target"), str(ws), "dev")
    plan = Plan(layout.execroot)
    plan.add(UPPER, "p", [])
    state = BuildState(layout.action_state, layout.execroot, StatCache(layout.stat_cache))
    pipeline = ActionPipeline(plan, state, KeyComputer(state, PLATFORM, {}), None, Stores.open(home),
                              Reporter(json_mode=True, out=io.StringIO(), err=io.StringIO()),
                              ExplainLog(layout.explain_log, "fake"))
    staged: list[str] = []

    def stage(rel: str) -> str:
        staged.append(rel)
        pipeline.ended += 1  # an action ends meanwhile
        return rel

    pipeline.runner = SandboxRunner(lambda: None, str(ws), stage, prestages=True)
    pipeline.prestage = [f"o{i}" for i in range(200)]
    want = [f"o{i}" for i in range(200)]
    pipeline.idle()
    assert staged == want[:_PRESTAGE_CHUNK] and pipeline.prestage == want[_PRESTAGE_CHUNK:]
    assert set(pipeline.keys.encoded) == set(staged)  # their key parts made ahead too
    pipeline.idle()  # the next wait goes on where this one stopped
    assert staged == want[:2 * _PRESTAGE_CHUNK] and pipeline.prestage == want[2 * _PRESTAGE_CHUNK:]


def _two_independent(ws, tmp_path, first: Action, second: Action, runner, log: list) -> bool:
    """Build two actions with no prerequisites through `runner` (a lane each), logging each
    check (`("check", id)`) to `log`; whether the build succeeded."""
    home = Home(tmp_path / "home")
    layout = Layout(str(ws), str(ws / "target"), str(ws), "dev")
    plan = Plan(layout.execroot)
    plan.add(first, "p", [])
    plan.add(second, "p", [])
    state = BuildState(layout.action_state, layout.execroot, StatCache(layout.stat_cache))
    keys = KeyComputer(state, PLATFORM, {})
    pipeline = ActionPipeline(plan, state, keys, runner, Stores.open(home),
                              Reporter(json_mode=True, out=io.StringIO(), err=io.StringIO()),
                              ExplainLog(layout.explain_log, "fake"))
    fresh = keys.fresh
    keys.fresh = lambda a: (log.append(("check", a.id)), fresh(a))[1]
    told = getattr(runner, "on_started", None)
    if told is not None:  # set by the pipeline: what the sandbox tells it, logged too
        runner.on_started = lambda action_id: (log.append(("started", action_id)), told(action_id))[1]
    result = run_graph([first.id, second.id], plan.prereqs, jobs=2, check=pipeline.check,
                       execute=pipeline.restore_or_run, finish=pipeline.finish, before_wait=pipeline.idle,
                       here=pipeline.restore_here)
    pipeline.settle_writes()
    pipeline.drain(result)
    return result.ok


def test_the_scheduler_checks_the_next_action_once_the_first_has_reached_its_process(ws, tmp_path):
    """The first action handed to a lane is prepared (sandbox, inputs) with the interpreter to
    itself: the scheduling thread checks the next action only after the first one's process is
    about to start (`SandboxSpec.started`), not beside its staging (an edit's compile would be
    staged at half speed while the other actions are checked)."""
    from mcpp.sandbox import LocalSandbox, SandboxPool

    first = Action(id="first", argv=("/bin/sh", "-c", "echo a > target/dev/a.txt"), outputs=("target/dev/a.txt",))
    second = Action(id="second", argv=("/bin/sh", "-c", "echo b > target/dev/b.txt"), outputs=("target/dev/b.txt",))
    log: list[tuple[str, str]] = []

    def make_sandbox():
        time.sleep(0.01)  # the first action's preparation takes a while
        return LocalSandbox(pool=SandboxPool(str(tmp_path / "work")))

    runner = SandboxRunner(make_sandbox, str(ws), lambda rel: rel)
    try:
        assert _two_independent(ws, tmp_path, first, second, runner, log)
    finally:
        runner.shutdown()
    assert log[:3] == [("check", "first"), ("started", "first"), ("check", "second")]


def test_where_the_first_action_is_not_staged_here_the_scheduler_does_not_wait_for_it(ws, tmp_path, monkeypatch):
    """A runner that is not this process's sandbox (remote execution's) tells nothing of when
    the action starts and stages nothing here: the next action is checked at once, not after
    the first one's end (the wait's bound made long, so that a wait would show)."""
    from mcpp.engine.exec import pipeline as pipeline_module

    monkeypatch.setattr(pipeline_module, "_FIRST_WAIT_S", 30.0)
    first = Action(id="first", argv=("x",), outputs=("target/dev/a.txt",))
    second = Action(id="second", argv=("y",), outputs=("target/dev/b.txt",))
    log: list[tuple[str, str]] = []

    class Remote:
        def run(self, action: Action) -> RunResult:
            if action is first:
                time.sleep(0.2)  # the remote takes its time
            log.append(("ran", action.id))
            prepare_outputs(str(ws), action)
            write(str(ws), action.outputs[0], action.id)
            return RunResult(0, b"", b"")

    assert _two_independent(ws, tmp_path, first, second, Remote(), log)
    assert log[:3] == [("check", "first"), ("check", "second"), ("ran", "second")]


def _slow_writes(monkeypatch, threads: set, delay: float = 0.0) -> None:
    """The restore writer's writes, each noted (its thread) and made `delay` seconds late."""
    from mcpp.engine.exec import restore_writer

    real = restore_writer.write_copy

    def write_copy(*args):
        threads.add(threading.get_ident())
        time.sleep(delay)
        real(*args)

    monkeypatch.setattr(restore_writer, "write_copy", write_copy)


def test_restored_outputs_are_written_off_the_scheduling_thread_and_known_once_written(ws, tmp_path, monkeypatch):
    """A rebuild from the cache: each output's bytes are written by the restore writer, not the
    scheduling thread; they are all there when the build's schedule is over, and the stat cache
    knows them (the next build hashes none of them)."""
    home = Home(tmp_path / "home")
    runner = FakeRunner(str(ws))
    assert build(ws, home, runner)[-1]
    shutil.rmtree(ws / "target")
    threads: set[int] = set()
    _slow_writes(monkeypatch, threads, delay=0.05)
    status, state, *_ = build(ws, home, runner)
    assert status == {UPPER.id: "cached", JOIN.id: "cached"}
    assert threads and threading.get_ident() not in threads
    assert (ws / "target/dev/a.txt").read_text() == "HELLO "
    assert (ws / "target/dev/b.txt").read_text() == "HELLO world!"
    status, state, *_ = build(ws, home, runner)
    assert status == {UPPER.id: "fresh", JOIN.id: "fresh"}
    assert state.files_hashed == 0


def test_an_action_that_runs_waits_for_the_restored_outputs_it_reads(ws, tmp_path, monkeypatch):
    """UPPER restored (its output written late), JOIN not cached (a header it read changed): JOIN's
    run reads UPPER's output from target/, so it goes to its lane once that write is made."""
    home = Home(tmp_path / "home")
    runner = FakeRunner(str(ws))
    assert build(ws, home, runner)[-1]
    shutil.rmtree(ws / "target")
    write(ws, "src/extra.h", "?")
    _slow_writes(monkeypatch, set(), delay=0.3)
    status, *_, ok = build(ws, home, runner)
    assert ok and status == {UPPER.id: "cached", JOIN.id: "executed"}
    assert (ws / "target/dev/b.txt").read_text() == "HELLO world?"
