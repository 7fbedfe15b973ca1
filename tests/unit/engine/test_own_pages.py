"""A spare build child copies the server's pages while it waits (engine/server/own_pages.py): the
build it then runs reads the server's objects without a copy-on-write fault per page."""
from __future__ import annotations

import os
import resource
from typing import Callable

import pytest

from mcpp.engine.server import own_pages

SMAPS = """\
55d0a0000000-55d0a0900000 rw-p 00000000 00:00 0                          [heap]
Size:               9216 kB
Rss:                9000 kB
7f0000000000-7f0000800000 rw-p 00000000 00:00 0 
Size:               8192 kB
Rss:                7000 kB
7f0001000000-7f0001800000 rw-p 00000000 00:00 0 
Size:               8192 kB
Rss:                  40 kB
7f0002000000-7f0002100000 rw-p 00020000 08:01 123456                     /usr/lib/libpython3.11.so
Size:               1024 kB
Rss:                1024 kB
7f0003000000-7f0003100000 rw-s 00000000 00:01 77                         /dev/zero (deleted)
Size:               1024 kB
Rss:                1024 kB
7f0004000000-7f0004100000 r--p 00000000 00:00 0 
Size:               1024 kB
Rss:                1024 kB
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]
Size:                132 kB
Rss:                 132 kB
VmFlags: rd wr mr mw me gd ac
"""


def test_only_private_anonymous_writable_mappings_mostly_in_memory_are_taken():
    assert own_pages.private_regions(SMAPS) == [
        (0x55d0a0000000, 0x55d0a0900000),  # the heap
        (0x7f0000000000, 0x7f0000800000),  # an arena, mostly resident
    ]  # not: a thread stack's reserve (40 kB of 8 MB), a library's data, shared or read-only memory, the stack


def _in_fork(body: Callable[[], str]) -> str:
    """What `body()` returns in a forked child (whose pages are the parent's, copy-on-write)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(r)
            os.write(w, body().encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r) as f:
        answer = f.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return answer


def _faults_reading(objects: list) -> int:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for o in objects:  # each read writes the object's reference count
        len(o)
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def _faults_in_child(objects: list, take: bool, stop=lambda: False) -> tuple[int, int]:
    """(bytes taken, page faults) of a forked child that reads every object the parent made."""
    def body() -> str:
        taken = own_pages.take_pages(stop) if take else 0
        return f"{taken} {_faults_reading(objects)}"

    taken, faults = (int(n) for n in _in_fork(body).split())
    return taken, faults


def _kernel() -> tuple[int, int]:
    major, minor = os.uname().release.split(".")[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


@pytest.mark.skipif(_kernel() < (5, 14), reason="madvise(MADV_POPULATE_WRITE) came with Linux 5.14: "
                                                  "an older kernel takes the faults as before")
def test_a_child_that_took_its_pages_reads_the_parents_objects_without_faulting_them_in():
    objects = [f"object {i}" * 3 for i in range(300_000)]  # ~30 MB over thousands of pages
    _, faults_shared = _faults_in_child(objects, take=False)
    taken, faults_taken = _faults_in_child(objects, take=True)
    assert faults_shared > 2_000  # a copy-on-write fault per page read
    assert taken >= 20 << 20
    assert faults_taken < faults_shared // 10


def test_taking_stops_at_once_when_a_request_came():
    objects = [f"object {i}" * 3 for i in range(300_000)]
    taken, faults = _faults_in_child(objects, take=True, stop=lambda: True)
    assert taken == 0
    assert faults > 2_000  # nothing was copied: the build takes its faults as before


def _in_child(objects: list, stop_at_once: bool) -> tuple[int, bool, int]:
    """(bytes taken, whether the thread ran under SCHED_IDLE, page faults reading `objects` after)
    of a forked child that took its pages in the background."""
    def body() -> str:
        taking = own_pages.take_in_background()
        if stop_at_once:
            taking.stop()
        assert taking.wait(60)
        return f"{taking.taken} {int(taking.idle_policy)} {_faults_reading(objects)}"

    taken, idle, faults = (int(n) for n in _in_fork(body).split())
    return taken, bool(idle), faults


@pytest.mark.skipif(_kernel() < (5, 14), reason="madvise(MADV_POPULATE_WRITE) came with Linux 5.14: "
                                                  "an older kernel takes the faults as before")
def test_the_spares_thread_takes_the_pages_at_the_lowest_priority_and_stops_when_told():
    objects = [f"object {i}" * 3 for i in range(300_000)]
    _, faults_shared = _faults_in_child(objects, take=False)
    taken, idle, faults = _in_child(objects, stop_at_once=False)
    assert idle  # SCHED_IDLE: it runs only on a core nothing else wants
    assert taken >= 20 << 20 and faults < faults_shared // 10
    taken, _, faults = _in_child(objects, stop_at_once=True)
    assert taken <= own_pages.SLICE  # at most the slice it had begun
    assert faults > faults_shared // 2
