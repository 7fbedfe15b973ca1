"""RemoteClient against a real BuildGrid server: capabilities, batches, ByteStream, action cache."""
from __future__ import annotations

import os
import time

import pytest

from mcpp.cas.remote import protocol as pb
from mcpp.cas.remote.client import CHUNK, BlobMissing, RemoteClient, RemoteError
from mcpp.cas.remote.digests import SHA256, RemoteDigest


def blobs(*sizes: int) -> dict[RemoteDigest, bytes]:
    out = {}
    for n in sizes:
        data = os.urandom(n)
        out[SHA256.of_bytes(data)] = data
    return out


class Spy:
    """Wraps one of the client's gRPC callables and records the requests that pass through."""

    def __init__(self, client: RemoteClient, attr: str):
        self.inner = getattr(client, attr)
        self.requests: list = []
        setattr(client, attr, self)

    def __call__(self, request, **kw):
        if hasattr(request, "__next__"):  # a request stream
            def record(it):
                for r in it:
                    self.requests.append(r)
                    yield r
            return self.inner(record(request), **kw)
        self.requests.append(request)
        return self.inner(request, **kw)


def test_capabilities_choose_sha256_and_a_batch_limit_under_the_message_limit(client):
    assert client.info.digest_functions == ("SHA256",)
    assert client.fn is SHA256
    assert client.info.update_enabled
    assert 0 < client.batch_limit < 4 << 20 <= client.info.max_batch_total_size_bytes + (4 << 20)


def test_find_missing_upload_download_round_trip(client):
    small = blobs(10, 1000, 100_000)
    assert sorted(client.find_missing(small)) == sorted(small)
    client.upload(small)
    assert client.find_missing(small) == []
    assert client.download(small) == small


def test_every_request_names_the_digest_function(client):
    spies = [Spy(client, a) for a in ("_find_missing", "_batch_update", "_batch_read", "_ac_get", "_ac_update")]
    b = blobs(64)
    client.find_missing(b)
    client.upload(b)
    client.download(b)
    client.get_action_result(SHA256.of_bytes(b"no such action"))
    client.update_action_result(SHA256.of_bytes(b"an action"), pb.ActionResult(exit_code=0))
    for spy in spies:
        assert spy.requests and all(r.digest_function == pb.DIGEST_FUNCTION["SHA256"] for r in spy.requests)


def test_batches_stay_under_the_server_limit(client):
    many = blobs(*([900_000] * 10), *([10] * 50))  # ~9 MB in all: three batches at least
    spy = Spy(client, "_batch_update")
    client.upload(many)
    assert len(spy.requests) >= 3
    assert all(r.ByteSize() < 4 << 20 for r in spy.requests)  # BuildGrid refuses larger messages
    read = Spy(client, "_batch_read")
    assert client.download(many) == many
    assert len(read.requests) >= 3


def test_large_blobs_go_through_bytestream_in_chunks_of_at_most_1_mib(client):
    big = blobs(9 << 20 | 123)
    spy = Spy(client, "_bs_write")
    client.upload(big)
    sizes = [len(r.data) for r in spy.requests]
    assert len(sizes) == 10 and max(sizes) <= CHUNK
    assert spy.requests[0].resource_name.startswith("uploads/") and spy.requests[-1].finish_write
    assert client.find_missing(big) == []
    assert client.download(big) == big  # read back through ByteStream (too large for a batch)


def test_bytestream_write_from_a_stream_and_of_the_empty_blob(client, tmp_path):
    data = os.urandom(5 << 20)
    path = tmp_path / "blob"
    path.write_bytes(data)
    d = SHA256.of_bytes(data)
    client.write_stream(d, lambda: open(path, "rb"))
    assert b"".join(client.read_stream(d)) == data
    empty = SHA256.of_bytes(b"")
    client.write_stream(empty, b"")
    assert client.download([empty]) == {empty: b""}


def test_a_missing_blob_is_reported_as_such(client):
    ghost = SHA256.of_bytes(b"never uploaded")
    with pytest.raises(BlobMissing):
        client.download([ghost])
    big_ghost = RemoteDigest("0" * 64, 8 << 20)
    with pytest.raises(BlobMissing):
        client.download([big_ghost])


def test_a_blob_that_does_not_match_its_digest_is_refused(client):
    d = SHA256.of_bytes(b"the real bytes")
    with pytest.raises(RemoteError, match="INVALID_ARGUMENT"):
        client.upload({d: b"other bytes!!!"})


def test_action_results_miss_then_hit(client):
    action = SHA256.of_bytes(b"action " + os.urandom(8))
    assert client.get_action_result(action) is None
    out = blobs(2000)
    client.upload(out)
    result = pb.ActionResult(exit_code=0)
    (d, _), = out.items()
    result.output_files.add(path="a.o", digest=d.to_proto())
    client.update_action_result(action, result)
    got = client.get_action_result(action)
    assert got.exit_code == 0 and [f.path for f in got.output_files] == ["a.o"]


def test_a_server_that_is_not_there_fails_fast(tmp_path):
    client = RemoteClient(f"unix:{tmp_path}/nothing.sock", timeout=30)
    start = time.monotonic()
    with pytest.raises(RemoteError) as e:
        client.connect()
    assert e.value.code == "UNAVAILABLE"
    assert time.monotonic() - start < 10
    client.close()
