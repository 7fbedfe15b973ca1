"""A parallel scheduler over a DAG of actions.

The scheduler knows nothing of compilers or caches. It is handed three callables, so that unit
tests can drive it deterministically with fakes (ninja's DiskInterface idea):

- `check(id) -> bool`: runs on the scheduling thread once all prerequisites are done; True means
  the action is already satisfied (up to date or restored from a cache) and need not run.
- `execute(id) -> object`: runs on a worker thread (at most `jobs` at once); returns an outcome.
- `finish(id, outcome) -> bool`: runs on the scheduling thread; False marks the action failed.

`before_wait()`, if given, runs on the scheduling thread each time it is about to block until a
running action completes (the reporter flushes the lines it held back then).

On the first failure no new action starts (running ones finish) unless `keep_going` is set, in
which case everything that does not depend on a failed action still runs.
"""
from __future__ import annotations

import queue
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterable


@dataclass
class ScheduleResult:
    succeeded: list[str] = field(default_factory=list)  # executed and succeeded
    fresh: list[str] = field(default_factory=list)  # satisfied without running
    failed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # never started (a prerequisite failed, or stopped)

    @property
    def ok(self) -> bool:
        return not self.failed and not self.skipped


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
    completions: "queue.Queue[tuple[str, Future]]" = queue.Queue()
    running: dict[str, Future] = {}
    stopped = False
    done_count = 0
    total = len(ids)

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

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        while True:
            while ready and not stopped and len(running) < jobs:
                i = ready.pop()
                if waiting[i] < 0:
                    continue
                if check(i):
                    result.fresh.append(i)
                    settle(i)
                    continue
                on_start(i)
                fut = pool.submit(execute, i)
                running[i] = fut
                fut.add_done_callback(lambda f, i=i: completions.put((i, f)))
                on_progress(done_count, total, list(running))
            if not running:
                break
            before_wait()
            i, fut = completions.get()
            del running[i]
            try:
                outcome = fut.result()
                ok = finish(i, outcome)
            except BaseException:
                stopped = True
                for other in running.values():
                    other.cancel()
                raise
            if ok:
                result.succeeded.append(i)
                settle(i)
            else:
                result.failed.append(i)
                done_count += 1
                poison(i)
                if not keep_going:
                    stopped = True
            on_progress(done_count, total, list(running))
    if stopped:
        finished = set(result.succeeded) | set(result.fresh) | set(result.failed) | set(result.skipped)
        result.skipped += [i for i in ids if i not in finished]
    return result
