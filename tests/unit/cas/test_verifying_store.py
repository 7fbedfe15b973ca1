"""VerifyingStore: corrupt blobs are detected on read, removed, reported, and then heal."""
from __future__ import annotations

import os

import pytest
import zstandard

from mcpp.cas.blobstore import BlobNotFound, BlobStore, CorruptBlob
from mcpp.cas.digest import digest_bytes
from cas_testdata import flip_byte, object_like


def test_good_blob_passes_and_calls_delegate(store):
    assert isinstance(store, BlobStore)
    data = object_like(50_000)
    d = store.put(data)
    assert store.has(d) and store.get(d) == data
    with store.open(d) as f:
        assert f.read() == data
    assert store.find_missing([d, digest_bytes(b"other")]) == [digest_bytes(b"other")]
    assert store.healed == []


def test_flipped_byte_is_detected_and_the_blob_removed(store, local):
    data = object_like(200_000)
    d = store.put(data)
    path = local.path_of(d)
    flip_byte(path, os.path.getsize(path) // 2)
    with pytest.raises(CorruptBlob) as e:
        store.get(d)
    assert e.value.digest == d
    assert not os.path.exists(path)
    assert store.healed == [d] and store.corrupt_count == 1
    with pytest.raises(BlobNotFound):  # the caller now treats it as a miss and re-runs
        store.get(d)
    assert store.put(data) == d and store.get(d) == data  # healed


def test_same_size_wrong_content_is_a_hash_mismatch(store, local):
    d = store.put(b"A" * 4096)
    impostor = zstandard.ZstdCompressor(level=3).compress(b"B" * 4096)  # decodes fine
    os.chmod(local.path_of(d), 0o644)
    with open(local.path_of(d), "wb") as f:
        f.write(impostor)
    assert local.get(d) == b"B" * 4096  # the local store alone does not verify...
    with pytest.raises(CorruptBlob, match="hashes to"):
        store.get(d)  # ...the decorator does
    assert not local.has(d)


def test_truncated_blob_is_corrupt(store, local):
    d = store.put(object_like(100_000))
    path = local.path_of(d)
    os.chmod(path, 0o644)
    os.truncate(path, os.path.getsize(path) // 2)
    with pytest.raises(CorruptBlob):
        store.get(d)
    assert not local.has(d) and store.healed == [d]


def test_streamed_read_of_a_corrupt_large_blob_raises_and_heals(store, local, tmp_path):
    data = object_like(9 << 20, seed=5)
    src = tmp_path / "big"
    src.write_bytes(data)
    d = store.put_file(src)
    path = local.path_of(d)
    flip_byte(path, os.path.getsize(path) - 100)
    with pytest.raises(CorruptBlob):
        with store.open(d) as f:
            while f.read(1 << 20):
                pass
    assert not local.has(d) and store.healed == [d]


def test_streamed_read_keeps_failing_after_corruption(store, local):
    d = store.put(b"x" * 10_000)
    impostor = zstandard.ZstdCompressor().compress(b"y" * 10_000)
    os.chmod(local.path_of(d), 0o644)
    with open(local.path_of(d), "wb") as f:
        f.write(impostor)
    f = store.open(d)
    with pytest.raises(CorruptBlob):
        f.read()
    with pytest.raises(CorruptBlob):  # no later read may look like a clean end of stream
        f.read()
    assert store.healed == [d]
