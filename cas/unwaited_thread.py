"""Background threads started without waiting for them to run.

`threading.Thread.start` returns only once the new thread has been scheduled and has said so: on
two cores busy with a compiler and the server, that wait is 0.1-2 ms, and a build's first steps
start several threads (in a freshly forked build child, the sandbox warm-up's alone waited 2.1 ms
before the build could begin, bench/RESULTS.md). A thread nobody joins, that reports what it did
through its own means (an Event, a count under a condition), need not be waited for:
`start_unwaited` hands its function to the interpreter's thread starter (`_thread`) and returns.
The sandbox warm-up's thread is one (engine/exec/sandbox_warm_up.py).

`SerialThread` is the other use: one such thread running the calls handed to it in order, whose
`wait` counts the calls left instead of joining the thread (a join also waits for the thread's
wake-up and exit: 0.9-2.2 ms after a build's last action). The discard of stale outputs
(engine/exec/discard.py) and the store ingest (cas/ingest.py) run on one each.

Such a thread is as a daemon thread: not joined at exit, named only by `threading`'s dummy name.
"""
from __future__ import annotations

import _thread
import queue
import threading
from typing import Any, Callable


def start_unwaited(function: Callable[..., object], *args: Any) -> None:
    """Run `function(*args)` on a new thread; return at once. `function` must catch what it
    raises (an escaped exception is printed, not re-raised anywhere)."""
    _thread.start_new_thread(function, args)


class SerialThread:
    """Runs the calls handed to it (`call`) one at a time, in order, on a thread started unwaited
    with the first of them; `first`, where given, runs on each thread it starts before the calls
    (a discard's sweep of what killed builds left). Several threads may hand calls over."""

    def __init__(self, first: Callable[[], None] | None = None) -> None:
        self._first = first
        self._calls: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._done = threading.Condition()
        self._running = False  # a thread started and not yet told to end
        self._left = 0  # calls handed over (and `first`) not yet run

    @property
    def running(self) -> bool:
        return self._running

    def call(self, function: Callable[[], None]) -> None:
        """Run `function()` after the calls handed over before it. It must report what it
        raises itself: an exception that escapes is dropped, and the next calls still run."""
        with self._done:
            if not self._running:
                start_unwaited(self._loop)  # the caller goes on meanwhile; if this raises, nothing is counted
                self._running = True
                self._left += self._first is not None
            self._left += 1
        self._calls.put(function)

    def wait(self) -> None:
        """Return once every call handed over so far has run; the thread then ends on its own."""
        with self._done:
            if not self._running:
                return
            self._running = False
        self._calls.put(None)
        with self._done:
            while self._left:
                self._done.wait()

    def _loop(self) -> None:
        if self._first is not None:
            self._run(self._first)
        while (function := self._calls.get()) is not None:
            self._run(function)

    def _run(self, function: Callable[[], None]) -> None:
        try:
            function()
        except BaseException:  # noqa: BLE001 - the caller's to report (see `call`); the rest still run
            pass
        finally:
            with self._done:
                self._left -= 1
                if not self._left:
                    self._done.notify_all()
