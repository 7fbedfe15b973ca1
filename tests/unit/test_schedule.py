"""The scheduler, driven deterministically with fakes (no processes)."""
from __future__ import annotations

import threading
import time

import pytest

from mcpp.engine.exec.schedule import run_graph

GRAPH = {"a": (), "b": (), "c": ("a", "b"), "d": ("c",), "e": ()}


def run(graph=GRAPH, fresh=(), fail=(), jobs=2, keep_going=False, delay=0.0):
    started, lock = [], threading.Lock()
    active = {"now": 0, "max": 0}

    def execute(i):
        with lock:
            started.append(i)
            active["now"] += 1
            active["max"] = max(active["max"], active["now"])
        time.sleep(delay)
        with lock:
            active["now"] -= 1
        return i not in fail

    result = run_graph(list(graph), graph, jobs=jobs, check=lambda i: i in fresh, execute=execute,
                       finish=lambda i, ok: ok, keep_going=keep_going)
    return result, started, active["max"]


def test_runs_everything_in_dependency_order():
    result, started, _ = run()
    assert result.ok and sorted(result.succeeded) == list("abcde")
    assert started.index("c") > max(started.index("a"), started.index("b"))
    assert started.index("d") > started.index("c")


def test_fresh_actions_do_not_run():
    result, started, _ = run(fresh={"a", "b", "c"})
    assert sorted(started) == ["d", "e"] and sorted(result.fresh) == ["a", "b", "c"]


def test_never_more_than_jobs_at_once():
    _, _, peak = run(graph={str(i): () for i in range(8)}, jobs=3, delay=0.02)
    assert peak == 3


def test_first_failure_stops_new_work_and_skips_dependents():
    result, started, _ = run(fail={"a"}, jobs=1)
    assert result.failed == ["a"] and not result.ok
    assert "c" not in started and "d" not in started
    assert set(result.skipped) >= {"c", "d"}


def test_keep_going_runs_everything_not_downstream_of_a_failure():
    result, started, _ = run(fail={"a"}, jobs=1, keep_going=True)
    assert sorted(started) == ["a", "b", "e"]
    assert sorted(result.skipped) == ["c", "d"]


def test_before_wait_runs_each_time_the_scheduler_blocks():
    """The reporter flushes the lines it held at `before_wait`: it must come after the fresh
    actions checked so far and before the scheduler blocks on a running action."""
    log = []
    run_graph(list(GRAPH), GRAPH, jobs=1, check=lambda i: log.append(f"check {i}") or i in {"a", "e"},
              execute=lambda i: True, finish=lambda i, ok: log.append(f"done {i}") or ok,
              before_wait=lambda: log.append("wait"))
    # a is fresh, b is handed to the one lane and e (fresh) checked as the action queued behind
    # it; then the scheduler waits for b, then c, then d
    assert log == ["check a", "check b", "check e", "wait", "done b", "check c", "wait", "done c",
                   "check d", "wait", "done d"]


def test_a_lane_starts_its_next_action_while_the_last_one_is_finished():
    """The scheduling thread's `finish` (depfile, key, the reported line) is off the lane's
    path: with one lane, b starts while a is still being finished."""
    b_started = threading.Event()
    seen = {}

    def execute(i):
        if i == "b":
            b_started.set()
        return True

    def finish(i, ok):
        if i == "a":
            seen["b started during a's finish"] = b_started.wait(timeout=10)
        return ok

    result = run_graph(["a", "b"], {}, jobs=1, check=lambda i: False, execute=execute, finish=finish)
    assert result.ok and seen == {"b started during a's finish": True}


def test_a_lane_whose_action_failed_starts_nothing_before_the_verdict():
    """b is queued behind a on the one lane; a fails (`proceed` says so on the lane), so the lane
    waits for the scheduling thread, which stops the build: b never starts."""
    started = []
    result = run_graph(["a", "b"], {}, jobs=1, check=lambda i: False,
                       execute=lambda i: started.append(i) or i != "a", finish=lambda i, ok: ok,
                       proceed=bool)
    assert started == ["a"] and result.failed == ["a"] and result.skipped == ["b"]


def test_a_failure_with_keep_going_lets_the_lane_go_on():
    started = []
    result = run_graph(["a", "b", "c"], {}, jobs=1, check=lambda i: False, keep_going=True,
                       execute=lambda i: started.append(i) or i != "a", finish=lambda i, ok: ok,
                       proceed=bool)
    assert started == ["a", "b", "c"] and result.failed == ["a"] and sorted(result.succeeded) == ["b", "c"]


def test_an_exception_in_an_action_reaches_the_caller_and_no_lane_is_left():
    def execute(i):
        if i == "a":
            raise RuntimeError("boom")
        return True

    before = set(threading.enumerate())  # an earlier schedule's idle lanes may still be ending
    try:
        run_graph(["a", "b", "c"], {}, jobs=2, check=lambda i: False, execute=execute,
                  finish=lambda i, ok: ok)
    except RuntimeError as e:
        assert str(e) == "boom"
    else:
        raise AssertionError("the exception was swallowed")
    assert not [t for t in threading.enumerate() if t not in before]


def test_a_schedule_that_ran_to_its_end_does_not_wait_for_its_idle_lanes(monkeypatch):
    """After the last action (an edit's link) no lane is in an action: the build goes on without
    waiting for two threads to wake up and end; an interrupted schedule still waits for them."""
    joined = []
    monkeypatch.setattr(threading.Thread, "join", lambda self, timeout=None: joined.append(self.name))
    result = run_graph(["a", "b"], {"b": ("a",)}, jobs=2, check=lambda i: False, execute=lambda i: True,
                       finish=lambda i, ok: ok)
    assert result.succeeded == ["a", "b"] and joined == []

    def execute(i):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        run_graph(["a"], {}, jobs=2, check=lambda i: False, execute=execute, finish=lambda i, ok: ok)
    assert joined == ["mcpp-lane-0", "mcpp-lane-1"]


def test_a_graph_whose_every_action_is_fresh_starts_no_lane(monkeypatch):
    """A no-op build checks every action and runs none: it starts no thread (nor waits for one)."""
    started = []
    real = threading.Thread.start
    monkeypatch.setattr(threading.Thread, "start", lambda self: started.append(self.name) or real(self))
    result, ran, _ = run(fresh=set(GRAPH))
    assert sorted(result.fresh) == sorted(GRAPH) and ran == [] and started == []
    result, ran, _ = run(fresh={"a", "b", "c", "d"})
    assert ran == ["e"] and started == ["mcpp-lane-0", "mcpp-lane-1"]


def test_an_action_satisfied_on_the_scheduling_thread_needs_no_lane(monkeypatch):
    """`here` satisfies an action where it was checked (a restore from the store): `finish` takes
    its outcome as a lane's, its dependents go on, and a graph satisfied so starts no thread."""
    started = []
    real = threading.Thread.start
    monkeypatch.setattr(threading.Thread, "start", lambda self: started.append(self.name) or real(self))
    finished = {}

    def execute(i):
        raise AssertionError(f"{i} was handed to a lane")

    result = run_graph(list(GRAPH), GRAPH, jobs=2, check=lambda i: False, execute=execute,
                       finish=lambda i, outcome: finished.setdefault(i, outcome) is not None,
                       here=lambda i: f"restored {i}")
    assert sorted(result.succeeded) == sorted(GRAPH) and result.ok and started == []
    assert finished == {i: f"restored {i}" for i in GRAPH}

    # None hands the action to a lane; an outcome `finish` refuses fails it and skips its dependents
    ran = []
    result = run_graph(list(GRAPH), GRAPH, jobs=2, check=lambda i: False, execute=lambda i: ran.append(i) or "ran",
                       finish=lambda i, outcome: i != "c", here=lambda i: None if i == "e" else "restored",
                       keep_going=True)
    assert ran == ["e"] and result.failed == ["c"] and result.skipped == ["d"]


def test_a_ctrl_c_between_two_lane_starts_reaches_the_caller_as_itself(monkeypatch):
    """A KeyboardInterrupt while the lanes are being started (the CI failure: it landed between
    the first and second `start`) must reach the caller as a KeyboardInterrupt, not as
    "cannot join thread before it is started" from the clean-up."""
    real = threading.Thread.start
    calls = []

    def start(self):
        calls.append(self.name)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    try:
        run(jobs=2)
    except KeyboardInterrupt:
        pass
    else:
        raise AssertionError("the interrupt was swallowed")
    assert calls == ["mcpp-lane-0", "mcpp-lane-1"]


def test_a_ctrl_c_just_after_the_scheduling_thread_took_the_lanes_lock_does_not_hang_the_build(monkeypatch):
    """CPython runs a signal's handler right after a C call returns: a Ctrl-C landing just after
    `Condition.__enter__` acquired the lanes' lock, before the `with` began, raises with the lock
    still held. The clean-up must give it back, or the lanes never get it and `close` waits for
    them forever (seen: a first build interrupted one second in, hung in `_Lanes.close`)."""
    from mcpp.engine.exec import schedule

    def settled(self, action_id):
        self._cond.acquire()  # taken; the interrupt comes before the `with` could release it
        raise KeyboardInterrupt

    monkeypatch.setattr(schedule._Lanes, "settled", settled)
    outcome: list[BaseException] = []

    def build():
        try:
            run(graph={str(n): () for n in range(8)}, jobs=2, delay=0.01)
        except BaseException as e:  # noqa: BLE001 - the test looks at it
            outcome.append(e)

    scheduler = threading.Thread(target=build, daemon=True)
    scheduler.start()
    scheduler.join(10)
    assert not scheduler.is_alive(), "the interrupted schedule hung waiting for its lanes"
    assert len(outcome) == 1 and isinstance(outcome[0], KeyboardInterrupt)



def _last_running_calls(graph, fresh=(), fail=(), keep_going=False):
    """(the result, what had finished at each call of `last_running`) for one schedule of `graph`."""
    finished, seen = [], []

    def execute(i):
        time.sleep(0.02)
        return i not in fail

    def finish(i, ok):
        finished.append(i)
        return ok

    result = run_graph(list(graph), graph, jobs=2, check=lambda i: i in fresh, execute=execute,
                       finish=finish, keep_going=keep_going, last_running=lambda: seen.append(list(finished)))
    return result, seen


def test_last_running_is_called_once_when_the_last_action_runs_alone():
    # a link after four compiles: told once, when every compile has finished and the link is handed over
    graph = {"c1": (), "c2": (), "c3": (), "c4": (), "link": ("c1", "c2", "c3", "c4")}
    result, seen = _last_running_calls(graph)
    assert result.ok and len(seen) == 1 and sorted(seen[0]) == ["c1", "c2", "c3", "c4"]


def test_last_running_is_not_called_while_other_actions_are_still_to_run():
    # two independent actions: the one that ends second runs alone only after the other finished
    _, seen = _last_running_calls({"a": (), "b": ()})
    assert all(len(s) == 1 for s in seen) and len(seen) <= 1
    # an edit-one: the compile runs (the link waits for it), then the link alone
    _, seen = _last_running_calls({"c1": (), "c2": (), "link": ("c1", "c2")}, fresh={"c2"})
    assert seen == [["c1"]]
    # a chain: never while an action is still waiting for its prerequisites
    _, seen = _last_running_calls({"a": (), "b": ("a",), "c": ("b",)})
    assert seen == [["a", "b"]]


def test_last_running_counts_skipped_actions_as_left_behind():
    # c1 fails with keep_going: the link is skipped; `other` (after c2) is the last to run
    graph = {"c1": (), "c2": (), "link": ("c1", "c2"), "other": ("c2",)}
    result, seen = _last_running_calls(graph, fail={"c1"}, keep_going=True)
    assert "link" in result.skipped and len(seen) == 1 and set(seen[0]) == {"c1", "c2"}
