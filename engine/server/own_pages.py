"""A spare build child makes the server's memory its own while it waits for its request.

A build child (a spare, server/spare.py, or a child forked for a request) shares the server's
pages copy-on-write, and CPython writes to every object it reads (its reference count): the
build's first touch of each page of the server's plan, state and knowledge is a fault that copies
it. A no-op build of 1,000 units took ~3,000 such faults, more than half of the child's time
(bench/RESULTS.md: 30 ms from request to reply, 13-15 ms with its pages taken ahead).

`take_pages` asks the kernel to copy the private anonymous pages at once
(`madvise(MADV_POPULATE_WRITE)`, Linux 5.14: as if each page were written, without writing it),
a slice at a time, until `stop()` says a request came. The spare runs it while it waits, on a
thread that runs only when a core is otherwise idle (`take_in_background`, SCHED_IDLE: at 10,000
units the copy is ~150 MB and ~100 ms of a core, which the user's other work, or the peers a
benchmark times meanwhile, does not give up), and stops it when its request comes: the build then
finds its pages its own. Not beside a build: the call holds the address space's lock that the
build's allocations need, and measured, a forked build with the copying on a thread beside it
took longer than one that took its faults. Only mappings mostly in memory are taken (the heap,
the allocator's arenas), not the reserve of a thread's stack: taking a page allocates it. A
kernel without the call, or a region gone meanwhile, is left as it was: the faults then come as
before.
"""
from __future__ import annotations

import ctypes
import os
import signal
import threading
from typing import Callable

_MADV_POPULATE_WRITE = 23
SLICE = 1 << 20  # bytes copied between two looks at `stop`: well under a millisecond


def _load_madvise():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
    except (OSError, AttributeError):
        return None
    madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    madvise.restype = ctypes.c_int
    return madvise


# Loaded by the server that imports this module: a child it forks does not load it again.
_MADVISE = _load_madvise()


def private_regions(smaps: str) -> list[tuple[int, int]]:
    """(start, end) of each private anonymous writable mapping in a `/proc/PID/smaps` text
    that is at least half resident (a page taken is a page allocated), but the main stack."""
    regions: list[tuple[int, int]] = []
    current: tuple[int, int] | None = None
    for line in smaps.splitlines():
        head = line.split(None, 5)
        if not head:
            continue
        if "-" in head[0] and len(head) >= 5:  # a mapping's first line: range perms offset dev inode [path]
            current = None
            path = head[5].strip() if len(head) > 5 else ""
            if head[1] == "rw-p" and head[4] == "0" and path in ("", "[heap]"):
                start, end = (int(x, 16) for x in head[0].split("-"))
                current = (start, end)
        elif current is not None and head[0] == "Rss:":
            if int(head[1]) * 1024 * 2 >= current[1] - current[0]:
                regions.append(current)
            current = None
    return regions


def take_pages(stop: Callable[[], bool] = lambda: False) -> int:
    """Copy this process's private pages now (see the module's note), `SLICE` bytes at a time,
    until all are taken or `stop()` is true; the bytes taken."""
    if _MADVISE is None:
        return 0
    try:
        with open("/proc/self/smaps", encoding="ascii", errors="replace") as f:
            regions = private_regions(f.read())
    except OSError:
        return 0
    taken = 0
    for start, end in regions:
        for at in range(start, end, SLICE):
            if stop():
                return taken
            size = min(SLICE, end - at)
            if _MADVISE(at, size, _MADV_POPULATE_WRITE) != 0:
                break  # not supported here, or the region changed: the faults come as before
            taken += size
    return taken


class Taking:
    """The pages being taken on a thread of the lowest priority (`take_in_background`)."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self.thread: threading.Thread | None = None
        self.idle_policy = False  # the thread ran under SCHED_IDLE
        self.taken = 0

    def stop(self) -> None:
        """Take no more (the build starts): the thread stops after the slice it is taking."""
        self._stop.set()

    def wait(self, timeout: float | None = None) -> bool:
        """True once the thread is done (or none was started)."""
        if self.thread is not None:
            self.thread.join(timeout)
        return self.thread is None or not self.thread.is_alive()

    def _run(self) -> None:
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))  # this thread only
            self.idle_policy = True
        except (OSError, AttributeError):
            pass
        self.taken = take_pages(self._stop.is_set)


def take_in_background() -> Taking:
    """Take this process's private pages on a thread that runs only when a core is otherwise
    idle (SCHED_IDLE: the copying takes no time from the user's other work, nor from the peers a
    benchmark runs meanwhile), until `stop()`. The thread takes no signal: those the spare holds
    for its main thread (server/spare.py) stay pending there."""
    taking = Taking()
    if _MADVISE is None:
        return taking
    held = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    try:
        taking.thread = threading.Thread(target=taking._run, name="own-pages", daemon=True)
        taking.thread.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
    return taking
