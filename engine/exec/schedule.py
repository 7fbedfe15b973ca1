"""A parallel scheduler over a DAG of actions.

The scheduler knows nothing of compilers or caches. It is handed three callables, so that unit
tests can drive it deterministically with fakes (ninja's DiskInterface idea):

- `check(id) -> bool`: runs on the scheduling thread once all prerequisites are done; True means
  the action is already satisfied (up to date or restored from a cache) and need not run.
- `execute(id) -> object`: runs on a lane thread (`jobs` lanes, one action at a time each);
  returns an outcome.
- `finish(id, outcome) -> bool`: runs on the scheduling thread; False marks the action failed.

`here(id) -> outcome or None`, if given, runs on the scheduling thread for an action that is not
fresh, before it would be handed to a lane: an outcome means the action was satisfied there (a
restore from the store, which needs no process) and goes to `finish` as a lane's would; None
hands it to a lane. A build whose actions are all restored (a fresh clone, `rm -rf target`)
then wakes no thread per action.

`before_wait()`, if given, runs on the scheduling thread each time it is about to block until a
running action completes (the reporter flushes the lines it held back then). `last_running()`, if
given, runs there once, after it, when the action running is the last one left (a build's link):
a core is free then for work the build would otherwise do after that action.

A lane does not wait for the scheduling thread between two actions. The scheduling thread keeps
up to `jobs` checked actions queued ahead of the lanes, and a lane whose action succeeded
(`proceed(outcome)`) takes the next one at once, while the scheduling thread finishes the last
(reads its depfile, records its key, prints its line). On small compiles that handoff (two
thread wake-ups and a `finish` on a machine whose cores are busy with compilers) would otherwise
leave the lane idle for a measurable share of each compile (bench/RESULTS.md).

On the first failure no new action starts (running ones finish; a lane whose action failed waits
for the scheduling thread's verdict before it takes another) unless `keep_going` is set, in which
case everything that does not depend on a failed action still runs.
"""
from __future__ import annotations

import queue
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterable


@dataclass
class ScheduleResult:
    """Which actions succeeded, were fresh, failed or did not run."""
    succeeded: list[str] = field(default_factory=list)  # executed and succeeded
    fresh: list[str] = field(default_factory=list)  # satisfied without running
    failed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # never started (a prerequisite failed, or stopped)

    @property
    def ok(self) -> bool:
        return not self.failed and not self.skipped


class _Lanes:
    """`jobs` threads running queued actions; completions go to one queue, in the order they end."""

    def __init__(self, jobs: int, execute: Callable[[str], object], proceed: Callable[[object], bool]):
        self._execute, self._proceed = execute, proceed
        self._cond = threading.Condition()
        self._queued: deque[str] = deque()
        self._settled: set[str] = set()  # finished by the scheduling thread (see `_run`)
        self._closing = False
        # (id, outcome, exception or None), in the order the actions end
        # (a SimpleQueue: its put takes no Python-level lock and notifies no Condition)
        self.completions: "queue.SimpleQueue[tuple[str, object, BaseException | None]]" = queue.SimpleQueue()
        self._jobs = jobs
        # Started with the first action handed over: a build whose every action is fresh (a
        # no-op) starts no thread.
        self._threads: list[threading.Thread] = []

    def put(self, action_id: str) -> None:
        with self._cond:
            self._queued.append(action_id)
            self._cond.notify()
        if not self._threads:
            # Queued first: the first lane takes the action as soon as it runs, while the
            # others are still starting.
            # Each thread is listed only once started: a Ctrl-C between two starts must leave
            # `close` nothing it cannot join.
            for n in range(self._jobs):
                t = threading.Thread(target=self._run, name=f"mcpp-lane-{n}", daemon=True)
                t.start()
                self._threads.append(t)

    def settled(self, action_id: str) -> None:
        """The scheduling thread has finished `action_id` (and stopped the build if it must)."""
        with self._cond:
            self._settled.add(action_id)
            self._cond.notify_all()

    def drop_queued(self) -> list[str]:
        """Take back every action no lane has started."""
        with self._cond:
            dropped = list(self._queued)
            self._queued.clear()
            return dropped

    def close(self, wait: bool = True) -> None:
        """No more work: lanes end after their current action; `wait` for them. A schedule that
        ran to its end has no lane in an action (each waits for the next one): they end on their
        own, and the build's last step (after its link) does not wait for two thread wake-ups."""
        with self._cond:
            self._closing = True
            self._queued.clear()
            self._cond.notify_all()
        # A Ctrl-C can leave this thread holding the lock: CPython runs the signal's handler as
        # soon as the C acquire in `Condition.__enter__` returns, before the `with` begins, so
        # nothing releases it. The lanes would wait for it, and the join below for them, forever.
        while self._cond._is_owned():  # type: ignore[attr-defined]
            self._cond.release()
        if wait:
            for t in self._threads:
                t.join()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queued and not self._closing:
                    self._cond.wait()
                if not self._queued:
                    return
                action_id = self._queued.popleft()
            try:
                outcome = self._execute(action_id)
            except BaseException as e:  # the scheduling thread re-raises it
                outcome, error = None, e
            else:
                error = None
            self.completions.put((action_id, outcome, error))
            if error is not None or not self._proceed(outcome):
                # A failure may stop the build: this lane starts nothing before the verdict.
                with self._cond:
                    while action_id not in self._settled and not self._closing:
                        self._cond.wait()


def run_graph(
    order: Iterable[str],
    prereqs: dict[str, tuple[str, ...]],
    *,
    jobs: int,
    check: Callable[[str], bool],
    execute: Callable[[str], object],
    finish: Callable[[str, object], bool],
    keep_going: bool = False,
    on_start: Callable[[str], None] = lambda _id: None,
    on_progress: Callable[[int, int, list[str]], None] = lambda done, total, running: None,
    before_wait: Callable[[], None] = lambda: None,
    proceed: Callable[[object], bool] = lambda _outcome: True,
    on_abort: Callable[[], None] = lambda: None,
    here: Callable[[str], object | None] = lambda _id: None,
    last_running: Callable[[], None] = lambda: None,
) -> ScheduleResult:
    ids = list(order)
    waiting = {i: len(prereqs.get(i, ())) for i in ids}
    dependents: dict[str, list[str]] = {i: [] for i in ids}
    for i in ids:
        for p in prereqs.get(i, ()):
            dependents[p].append(i)
    result = ScheduleResult()
    ready = [i for i in ids if waiting[i] == 0]
    ready.reverse()  # pop() from the end keeps the plan's order
    in_flight: dict[str, None] = {}  # handed to the lanes (queued or running), not yet finished
    stopped = False
    done_count = 0
    total = len(ids)
    jobs = max(1, jobs)

    def settle(i: str) -> None:
        nonlocal done_count
        done_count += 1
        for d in dependents[i]:
            waiting[d] -= 1
            if waiting[d] == 0:
                ready.append(d)

    def poison(i: str) -> None:
        # Everything downstream of a failure is skipped, transitively.
        todo = list(dependents[i])
        while todo:
            d = todo.pop()
            if waiting[d] >= 0:
                waiting[d] = -1
                result.skipped.append(d)
                todo.extend(dependents[d])

    def concluded(i: str, outcome: object) -> bool:
        nonlocal done_count
        if finish(i, outcome):
            result.succeeded.append(i)
            settle(i)
            return True
        result.failed.append(i)
        done_count += 1
        poison(i)
        return False

    lanes = _Lanes(jobs, execute, proceed)
    ended = False  # every action handed to a lane came back: no lane is in one
    last_told = False  # `last_running` was called
    try:
        while True:
            # Each lane's action plus one queued behind it.
            while ready and not stopped and len(in_flight) < 2 * jobs:
                i = ready.pop()
                if waiting[i] < 0:
                    continue
                if check(i):
                    result.fresh.append(i)
                    settle(i)
                    continue
                on_start(i)
                outcome = here(i)
                if outcome is not None:
                    if not concluded(i, outcome) and not keep_going:
                        stopped = True
                    on_progress(done_count, total, list(in_flight))
                    continue
                in_flight[i] = None
                lanes.put(i)
                on_progress(done_count, total, list(in_flight))
            if not in_flight:
                ended = True
                break
            before_wait()
            if not last_told and len(in_flight) == 1 and done_count + 1 + len(result.skipped) == total:
                last_told = True
                last_running()
            i, outcome, error = lanes.completions.get()
            del in_flight[i]
            try:
                if error is not None:
                    raise error
                if not concluded(i, outcome) and not keep_going:
                    stopped = True
            except BaseException:
                stopped = True
                raise
            finally:
                if stopped:  # what no lane has started stays unstarted
                    for j in lanes.drop_queued():
                        del in_flight[j]
                lanes.settled(i)
            on_progress(done_count, total, list(in_flight))
    except BaseException:
        on_abort()  # interrupted: before the lanes are waited for, end what they wait on
        raise
    finally:
        lanes.close(wait=not ended)
    if stopped:
        finished = set(result.succeeded) | set(result.fresh) | set(result.failed) | set(result.skipped)
        result.skipped += [i for i in ids if i not in finished]
    return result
