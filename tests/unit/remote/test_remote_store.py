"""RemoteStore: the server's CAS as a BlobStore layer over the local store (real BuildGrid)."""
from __future__ import annotations

import os

import pytest

from mcpp.cas.blobstore import BlobNotFound, BlobStore
from mcpp.cas.digest import digest_bytes
from mcpp.cas.remote.client import RemoteClient
from mcpp.cas.remote.digests import SHA256
from mcpp.cas.remote.side_index import SideIndex
from mcpp.cas.remote.store import RemoteCorrupt, RemoteStore


@pytest.fixture
def remote(client, local, home) -> RemoteStore:
    return RemoteStore(client, local, SideIndex(home.root / "remote" / "sha256.idx"))


def test_it_is_a_blob_store(remote):
    assert isinstance(remote, BlobStore)
    data = os.urandom(3000)
    d = remote.put(data)
    assert d == digest_bytes(data)
    assert remote.has(d) and remote.get(d) == data and remote.open(d).read() == data
    other = digest_bytes(b"not there")
    assert remote.find_missing([d, other]) == [other]
    with pytest.raises(BlobNotFound):
        remote.get(other)


def test_push_uploads_only_what_is_missing_and_fetch_verifies_into_another_home(remote, client, tmp_path):
    from mcpp.cas.local_store import LocalZstdStore
    from mcpp.cas.verifying_store import VerifyingStore

    small, large = os.urandom(5000), os.urandom(6 << 20)
    ds = [remote.local.put(small), remote.local.put(large)]
    names = remote.push(ds)
    assert names == {ds[0]: SHA256.of_bytes(small), ds[1]: SHA256.of_bytes(large)}
    assert client.find_missing(names.values()) == []
    assert remote.index.get(ds[0]) == names[ds[0]]  # the pair is remembered: no second hash

    # Another machine: an empty local store and an empty side index.
    other_local = VerifyingStore(LocalZstdStore(tmp_path / "other" / "cas"))
    other = RemoteStore(client, other_local, SideIndex(tmp_path / "other" / "idx"))
    got = other.fetch(names.values())
    assert got == {names[d]: d for d in ds}
    assert other_local.get(ds[0]) == small and other_local.get(ds[1]) == large
    assert other.index.get(ds[1]) == names[ds[1]]


def test_a_blob_corrupted_on_the_server_is_rejected_and_not_kept(disk_buildgrid, tmp_path):
    from mcpp.cas.local_store import LocalZstdStore
    from mcpp.cas.verifying_store import VerifyingStore

    client = RemoteClient(disk_buildgrid.url, timeout=10)
    client.connect()
    local = VerifyingStore(LocalZstdStore(tmp_path / "cas"))
    store = RemoteStore(client, local, SideIndex(tmp_path / "idx"))
    data = b"object code " * 100
    d = local.put(data)
    rd, = store.push([d]).values()
    path = disk_buildgrid.blob_path(rd.hash)
    path.write_bytes(data.replace(b"object", b"OBJECT"))  # same size, other bytes, behind the server's back

    fresh = VerifyingStore(LocalZstdStore(tmp_path / "fresh"))
    with pytest.raises(RemoteCorrupt, match="hashes to"):
        RemoteStore(client, fresh, SideIndex(tmp_path / "idx2")).fetch([rd])
    assert not fresh.has(d)
    client.close()
