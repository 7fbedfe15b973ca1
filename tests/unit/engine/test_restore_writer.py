"""RestoreWriter: a restored output's bytes written into target/ on a thread of its own, settled
(waited for, failures raised) before anything reads them."""
from __future__ import annotations

import os
import stat
import threading

import pytest

from mcpp.cas.digest import digest_bytes
from mcpp.engine.exec import restore_writer
from mcpp.engine.exec.restore_writer import BATCH, RestoreWriter


def test_writes_are_made_off_the_calling_thread_and_settled_in_full(tmp_path, monkeypatch):
    threads = set()
    real = restore_writer.write_copy
    monkeypatch.setattr(restore_writer, "write_copy",
                        lambda *a: (threads.add(threading.get_ident()), real(*a))[1])
    w = RestoreWriter()
    want = {}
    for i in range(BATCH * 2 + 3):  # whole batches and a remainder that `settle` hands over
        rel = f"target/dev/obj/{i % 3}/f{i}.o"
        data = f"object {i}".encode()
        w.put(rel, str(tmp_path / rel), data, 0o555 if i == 0 else 0o444, digest_bytes(data))
        want[rel] = data
    written = w.settle()
    assert set(written) == set(want) and all(written[r] == digest_bytes(d) for r, d in want.items())
    for rel, data in want.items():
        assert (tmp_path / rel).read_bytes() == data  # the directories made as needed
    assert stat.S_IMODE(os.stat(tmp_path / "target/dev/obj/0/f0.o").st_mode) == 0o555
    assert stat.S_IMODE(os.stat(tmp_path / "target/dev/obj/1/f1.o").st_mode) == 0o444
    assert threads and threading.get_ident() not in threads
    assert w.settle() == {}  # nothing handed over since
    assert not [n for n in os.listdir(tmp_path / "target/dev/obj/0") if not n.endswith(".o")]  # no temporary left


def test_a_write_that_fails_is_raised_by_settle_and_dropped_by_close(tmp_path):
    (tmp_path / "target").write_text("a file where the directory belongs")
    w = RestoreWriter()
    w.put("target/dev/a.o", str(tmp_path / "target/dev/a.o"), b"a", 0o444, digest_bytes(b"a"))
    w.put("ok.o", str(tmp_path / "ok.o"), b"ok", 0o444, digest_bytes(b"ok"))
    with pytest.raises(OSError):
        w.settle()
    assert (tmp_path / "ok.o").read_bytes() == b"ok"  # the writes after it still made
    w.put("target/dev/b.o", str(tmp_path / "target/dev/b.o"), b"b", 0o444, digest_bytes(b"b"))
    w.close()  # waits, says nothing: the build is ending on another error
    assert w.settle() == {}
