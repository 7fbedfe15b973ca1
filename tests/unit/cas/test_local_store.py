"""LocalZstdStore: layout, round trips, streaming, atomic writes (including a killed writer)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import tracemalloc

import pytest
import zstandard

from mcpp.cas.blobstore import BlobNotFound, BlobStore, CorruptBlob, SupportsDelete
from mcpp.cas.digest import digest_bytes
from mcpp.cas.local_store import LocalZstdStore, content_size
from mcpp.cas.maintenance import gc, verify
from cas_testdata import object_like, pseudo_random


def final_names(root) -> list[str]:
    return sorted(
        os.path.join(d, f)
        for d, _, files in os.walk(root)
        for f in files
        if not f.startswith(".")
    )


def temp_names(root) -> list[str]:
    return [os.path.join(d, f) for d, _, files in os.walk(root) for f in files if f.startswith(".tmp-")]


def test_implements_the_protocols(local):
    assert isinstance(local, BlobStore)
    assert isinstance(local, SupportsDelete)


def test_small_blob_round_trip_and_layout(local):
    data = b"int main() { return 0; }\n"
    d = local.put(data)
    assert d == digest_bytes(data)
    path = os.path.join(local.root, d.hash[:2], d.hash[2:])
    assert local.path_of(d) == path and os.path.isfile(path)
    assert zstandard.ZstdDecompressor().decompress(open(path, "rb").read()) == data
    assert content_size(path) == len(data)  # uncompressed size is readable from the header
    assert local.has(d)
    assert local.get(d) == data
    with local.open(d) as f:
        assert f.read() == data


def test_empty_blob_round_trip(local):
    d = local.put(b"")
    assert d.size == 0 and local.get(d) == b""
    with local.open(d) as f:
        assert f.read() == b""


def test_put_is_idempotent(local):
    data = object_like(10_000)
    d1 = local.put(data)
    d2 = local.put(data)
    assert d1 == d2
    assert len(final_names(local.root)) == 1


def test_large_blob_put_file_is_streamed(local, tmp_path):
    data = object_like(9 << 20, seed=1) + pseudo_random(3 << 20, seed=2)  # 12 MiB, > 8 MiB
    src = tmp_path / "big.o"
    src.write_bytes(data)
    tracemalloc.start()
    try:
        d = local.put_file(src)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, f"put_file held {peak} bytes: the file was not streamed"
    assert d == digest_bytes(data)
    assert content_size(local.path_of(d)) == len(data)
    with local.open(d) as f:
        chunks = []
        while chunk := f.read(1 << 20):
            chunks.append(chunk)
    assert b"".join(chunks) == data
    assert local.get(d) == data
    assert temp_names(local.root) == []


def test_large_in_memory_blob_round_trip(local):
    data = object_like(9 << 20, seed=3)
    d = local.put(data)
    assert local.get(d) == data
    assert content_size(local.path_of(d)) == len(data)


def test_put_file_small_and_large_agree_with_put(local, tmp_path):
    for n in (0, 1, 4 << 20, (4 << 20) + 1):
        data = object_like(n, seed=n)
        p = tmp_path / f"f{n}"
        p.write_bytes(data)
        assert local.put_file(p) == local.put(data) == digest_bytes(data)


def test_missing_blob(local):
    d = digest_bytes(b"never stored")
    assert not local.has(d)
    with pytest.raises(BlobNotFound):
        local.get(d)
    with pytest.raises(BlobNotFound):
        local.open(d)


def test_find_missing_dedups_in_order(local):
    a, b, c = (digest_bytes(x) for x in (b"a", b"b", b"c"))
    local.put(b"b")
    assert local.find_missing([c, a, b, c, a]) == [c, a]


def test_delete(local):
    d = local.put(b"x")
    assert local.delete(d) and not local.has(d)
    assert not local.delete(d)


def test_undecodable_blob_is_corrupt(local):
    d = local.put(b"hello" * 100)
    path = local.path_of(d)
    os.chmod(path, 0o644)
    with open(path, "wb") as f:
        f.write(b"not a zstd frame at all")
    with pytest.raises(CorruptBlob):
        local.get(d)
    with pytest.raises(CorruptBlob):
        with local.open(d) as f:
            f.read()


def test_header_disagreeing_with_digest_is_rejected_before_decompressing(local):
    d = local.put(b"small")
    # A header claiming another size (it could claim gigabytes) must not steer the allocation.
    bogus = zstandard.ZstdCompressor().compress(b"\0" * 1000)
    os.chmod(local.path_of(d), 0o644)
    with open(local.path_of(d), "wb") as f:
        f.write(bogus)
    with pytest.raises(CorruptBlob, match="frame header says 1000 bytes, digest says 5"):
        local.get(d)


@pytest.mark.parametrize("tmpfile", [True, False], ids=["O_TMPFILE", "named-temp"])
def test_failed_write_leaves_no_final_and_no_temp(local, monkeypatch, tmpfile):
    from mcpp.cas import atomic

    def boom(src, dst, **kw):
        raise OSError("disk full")

    monkeypatch.setattr(atomic, "_tmpfile_works", tmpfile and atomic._tmpfile_works)
    monkeypatch.setattr(os, "link", boom)  # the one call that publishes a blob
    with pytest.raises(OSError, match="disk full"):
        local.put(b"will not land")
    monkeypatch.undo()
    assert final_names(local.root) == []
    assert temp_names(local.root) == []


def test_read_bumps_mtime_once_per_process(local):
    d = local.put(b"lru")
    path = local.path_of(d)
    local2 = LocalZstdStore(local.root)  # a fresh "process"
    os.utime(path, (1000, 1000))
    local2.get(d)
    assert os.stat(path).st_mtime > 1000
    os.utime(path, (1000, 1000))
    local2.get(d)
    assert os.stat(path).st_mtime == 1000  # not touched a second time


def test_blobs_are_read_only(local):
    d = local.put(b"immutable")
    assert os.stat(local.path_of(d)).st_mode & 0o777 == 0o444


_WRITER_PAUSED_BEFORE_RENAME = textwrap.dedent(
    """
    import os, sys, time
    from mcpp.cas.local_store import LocalZstdStore
    store = LocalZstdStore(sys.argv[1])
    def stall(src, dst):
        print("renaming", flush=True)
        time.sleep(60)
    os.replace = stall
    store.put_file(sys.argv[2])
    """
)


def test_writer_killed_before_rename_leaves_no_partial_blob(home, tmp_path):
    src = tmp_path / "big.bin"
    data = object_like(6 << 20)
    src.write_bytes(data)
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER_PAUSED_BEFORE_RENAME, str(home.cas), str(src)],
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout.readline() == b"renaming\n"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert final_names(home.cas) == []  # the compressed bytes exist only under a temp name
    assert len(temp_names(home.cas)) == 1
    report = gc(home, now=time.time() + 7200)
    assert report.temp_removed == 1 and temp_names(home.cas) == []
    store = LocalZstdStore(home.cas)
    assert store.put_file(src) == digest_bytes(data)  # a retry lands normally


_WRITER_LOOP = textwrap.dedent(
    """
    import sys
    from mcpp.cas.local_store import LocalZstdStore
    store = LocalZstdStore(sys.argv[1])
    i = 0
    while True:
        store.put(i.to_bytes(8, "little") * (600_000 + i))  # ~5 MiB each: streamed puts
        i += 1
        if i == 2:
            print("running", flush=True)
    """
)


def test_writer_killed_at_random_leaves_only_intact_blobs(home):
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER_LOOP, str(home.cas)], stdout=subprocess.PIPE
    )
    try:
        assert proc.stdout.readline() == b"running\n"
        time.sleep(0.15)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert len(final_names(home.cas)) >= 2
    assert verify(home) == []  # every blob under a final name decodes to its digest


def test_concurrent_writers_of_one_blob_all_succeed(home, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    data = object_like(6 << 20, seed=11)
    src = tmp_path / "same.bin"
    src.write_bytes(data)
    stores = [LocalZstdStore(home.cas) for _ in range(4)]  # as if four builds

    def write(i: int):
        s = stores[i % 4]
        return s.put_file(src) if i % 2 else s.put(data)

    with ThreadPoolExecutor(8) as pool:
        digests = set(pool.map(write, range(16)))
    assert digests == {digest_bytes(data)}
    assert len(final_names(home.cas)) == 1 and temp_names(home.cas) == []
    assert stores[0].get(digest_bytes(data)) == data
