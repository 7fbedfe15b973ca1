"""A background thread started without waiting for it to run.

`threading.Thread.start` returns only once the new thread has been scheduled and has said so: on
two cores busy with a compiler and the server, that wait is 0.1-2 ms, and a build's first steps
start several threads (in a freshly forked build child, the sandbox warm-up's alone waited 2.1 ms
before the build could begin, bench/RESULTS.md). A thread nobody joins, that reports what it did
through its own means (an Event, a count under a condition), need not be waited for:
`start_unwaited` hands its function to the interpreter's thread starter (`_thread`) and returns.
Used for the sandbox warm-up's thread (engine/exec/sandbox_warm_up.py), the discard thread
(engine/exec/discard.py) and the store ingest's (cas/ingest.py), whose waits count what is left.

Such a thread is as a daemon thread: not joined at exit, named only by `threading`'s dummy name.
Its function must catch what it raises (an escaped exception is printed, not re-raised anywhere).
"""
from __future__ import annotations

import _thread
from typing import Any, Callable


def start_unwaited(function: Callable[..., object], *args: Any) -> None:
    """Run `function(*args)` on a new thread; return at once."""
    _thread.start_new_thread(function, args)
