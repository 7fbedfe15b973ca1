"""cas/ingest.py: outputs hashed once on the worker, stored later in order by one thread."""
from __future__ import annotations

import os
import stat
import threading

from mcpp.cas.digest import digest_bytes
from mcpp.cas.ingest import Ingest, store_blobs, take_output
from mcpp.cas.local_store import LocalZstdStore
from mcpp.cas.materialize import Materializer
from mcpp.cas.verifying_store import VerifyingStore


def test_take_output_hashes_once_and_makes_the_file_read_only(tmp_path):
    plain, tool = tmp_path / "a.o", tmp_path / "tool"
    plain.write_bytes(b"object")
    tool.write_bytes(b"#!/bin/sh\n")
    tool.chmod(0o755)
    a, t = take_output(str(plain)), take_output(str(tool))
    assert a.digest == digest_bytes(b"object") and a.data == b"object" and not a.executable
    assert t.executable
    assert stat.S_IMODE(os.stat(plain).st_mode) == 0o444 and stat.S_IMODE(os.stat(tool).st_mode) == 0o555


def test_store_blobs_fills_the_store_and_the_area_without_hashing_again(tmp_path):
    store = VerifyingStore(LocalZstdStore(tmp_path / "cas"))
    mat = Materializer(store, tmp_path / "mat")
    (tmp_path / "out").write_bytes(b"bytes")
    blob = take_output(str(tmp_path / "out"))
    store_blobs([blob], store, mat)
    assert store.get(blob.digest) == b"bytes"
    assert open(mat.path(blob.digest), "rb").read() == b"bytes" and mat.created == 1


def test_jobs_run_in_order_and_failures_are_collected():
    ingest, seen = Ingest(), []
    ingest.submit("a", lambda: seen.append("a"))
    ingest.submit("b", lambda: (_ for _ in ()).throw(OSError("disk full")))
    ingest.submit("c", lambda: seen.append("c"))
    errors = ingest.wait()
    assert seen == ["a", "c"]
    assert [(label, str(e)) for label, e in errors] == [("b", "disk full")]


def test_abandon_lets_the_running_job_finish_and_drops_the_rest():
    ingest, seen = Ingest(), []
    running, release = threading.Event(), threading.Event()

    def first():
        running.set()
        release.wait(10)
        seen.append("first")

    ingest.submit("first", first)
    ingest.submit("second", lambda: seen.append("second"))
    running.wait(10)
    threading.Timer(0.1, release.set).start()
    ingest.abandon()
    assert seen == ["first"]


def test_a_ctrl_c_as_the_thread_starts_leaves_abandon_nothing_to_trip_on(monkeypatch):
    """A KeyboardInterrupt as the thread starts (it never ran) must leave the clean-up's
    `abandon` nothing to wait for (the job it was starting for is not counted)."""
    import mcpp.cas.unwaited_thread as threads_mod

    def start(function, *args):
        raise KeyboardInterrupt

    monkeypatch.setattr(threads_mod, "start_unwaited", start)
    ingest = Ingest()
    try:
        ingest.submit("a", lambda: None)
    except KeyboardInterrupt:
        pass
    else:
        raise AssertionError("the interrupt was swallowed")
    ingest.abandon()
    assert not ingest._thread.running and ingest._thread._left == 0


def test_first_submissions_from_two_threads_start_one_ingest_thread(monkeypatch):
    """A lane and the scheduler's thread both submit (outputs, then records): two first
    submissions at once must still start one thread, or jobs would no longer run in order."""
    import mcpp.cas.unwaited_thread as threads_mod

    made = []
    real = threads_mod.start_unwaited

    def slow_start(function, *args):
        made.append(function)
        threading.Event().wait(0.05)  # the other submitter arrives while this one starts
        real(function, *args)

    monkeypatch.setattr(threads_mod, "start_unwaited", slow_start)
    ingest, seen = Ingest(), []
    both = threading.Barrier(2)

    def submit(label):
        both.wait(10)
        ingest.submit(label, lambda: seen.append(label))

    submitters = [threading.Thread(target=submit, args=(n,)) for n in ("a", "b")]
    for t in submitters:
        t.start()
    for t in submitters:
        t.join(10)
    assert ingest.wait() == []
    assert len(made) == 1 and sorted(seen) == ["a", "b"]


def test_a_large_output_is_hashed_and_stored_from_a_mapping_of_the_file(tmp_path):
    """From `MAPPED` bytes on, the output is not read into memory: the digest and the stored
    bytes are the file's all the same, and the mapping is let go once stored."""
    import mmap

    from mcpp.cas.ingest import MAPPED

    body = os.urandom(MAPPED) + b"tail"
    (tmp_path / "app").write_bytes(body)
    blob = take_output(str(tmp_path / "app"))
    assert blob.mapped and isinstance(blob.data, mmap.mmap)
    assert blob.digest == digest_bytes(body)
    store = VerifyingStore(LocalZstdStore(tmp_path / "cas"))
    mat = Materializer(store, tmp_path / "mat")
    store_blobs([blob], store, mat)
    assert store.get(blob.digest) == body and open(mat.path(blob.digest), "rb").read() == body
    assert blob.data.closed
    small = tmp_path / "small.o"
    small.write_bytes(b"x" * (MAPPED - 1))
    assert not take_output(str(small)).mapped  # read: a mapping costs a small file more


def test_a_mapped_output_rewritten_before_it_is_stored_is_refused(tmp_path):
    """A mapping shows the file as it is now: bytes written after the hash are not stored
    under the digest of the old ones (nothing is stored at all)."""
    import pytest

    from mcpp.cas.ingest import MAPPED, IngestError

    path = tmp_path / "app"
    path.write_bytes(b"a" * MAPPED)
    blob = take_output(str(path))
    path.chmod(0o644)
    with open(path, "r+b") as f:  # the same inode, the same length: what the mapping shows
        f.write(b"b")
    store = VerifyingStore(LocalZstdStore(tmp_path / "cas"))
    with pytest.raises(IngestError, match="changed between being hashed and being stored"):
        store_blobs([blob], store, Materializer(store, tmp_path / "mat"))
    assert store.find_missing([blob.digest]) == [blob.digest]
