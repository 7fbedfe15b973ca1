"""The BLAKE3 path, against a minimal in-process REAPI server that offers BLAKE3.

BuildGrid 0.4.4 (the real server the other tests run) speaks SHA-256 only, so it cannot show
that mcpp prefers BLAKE3 where a server offers it. This test double implements just the cache
services over dicts, checks every digest it receives with the digest function the request
names, and records the requests and ByteStream resource names it sees.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from concurrent import futures

import blake3
import grpc
import pytest

from mcpp.cas.action import Action, Platform
from mcpp.cas.action_cache import ActionEntry
from mcpp.cas.digest import digest_bytes
from mcpp.cas.home import Home
from mcpp.cas.local_store import LocalZstdStore
from mcpp.cas.remote import protocol as pb
from mcpp.cas.remote.cache import SIDE_INDEX, RemoteCache
from mcpp.cas.remote.endpoint import RemoteEndpoint
from mcpp.cas.remote.client import RemoteClient
from mcpp.cas.remote.config import RemoteSettings
from mcpp.cas.remote.digests import BLAKE3
from mcpp.cas.verifying_store import VerifyingStore

_HASH = {pb.DIGEST_FUNCTION["BLAKE3"]: blake3.blake3, pb.DIGEST_FUNCTION["SHA256"]: hashlib.sha256}


class Blake3Server:
    def __init__(self) -> None:
        self.blobs: dict[tuple[str, int], bytes] = {}
        self.results: dict[tuple[str, int], bytes] = {}
        self.functions: list[int] = []  # digest_function of every CAS/AC request
        self.resources: list[str] = []  # ByteStream resource names
        self.dir = tempfile.mkdtemp(prefix="b3-", dir="/tmp")
        self.url = f"unix:{self.dir}/s.sock"
        self.server = grpc.server(futures.ThreadPoolExecutor(4))
        u = grpc.unary_unary_rpc_method_handler

        def h(fn, req):
            return u(fn, request_deserializer=req.FromString, response_serializer=lambda m: m.SerializeToString())

        re_ = "build.bazel.remote.execution.v2"
        self.server.add_generic_rpc_handlers([
            grpc.method_handlers_generic_handler(f"{re_}.Capabilities", {"GetCapabilities": h(self.caps, pb.GetCapabilitiesRequest)}),
            grpc.method_handlers_generic_handler(f"{re_}.ContentAddressableStorage", {
                "FindMissingBlobs": h(self.find_missing, pb.FindMissingBlobsRequest),
                "BatchUpdateBlobs": h(self.batch_update, pb.BatchUpdateBlobsRequest),
                "BatchReadBlobs": h(self.batch_read, pb.BatchReadBlobsRequest)}),
            grpc.method_handlers_generic_handler(f"{re_}.ActionCache", {
                "GetActionResult": h(self.get_result, pb.GetActionResultRequest),
                "UpdateActionResult": h(self.update_result, pb.UpdateActionResultRequest)}),
            grpc.method_handlers_generic_handler("google.bytestream.ByteStream", {
                "Read": grpc.unary_stream_rpc_method_handler(
                    self.read, request_deserializer=pb.ReadRequest.FromString,
                    response_serializer=lambda m: m.SerializeToString()),
                "Write": grpc.stream_unary_rpc_method_handler(
                    self.write, request_deserializer=pb.WriteRequest.FromString,
                    response_serializer=lambda m: m.SerializeToString())}),
        ])
        self.server.add_insecure_port(self.url)
        self.server.start()

    def check(self, fn: int, d, data: bytes) -> bool:
        return len(data) == d.size_bytes and _HASH[fn](data).hexdigest() == d.hash

    def caps(self, req, ctx):
        caps = pb.ServerCapabilities()
        caps.cache_capabilities.digest_functions.extend([pb.DIGEST_FUNCTION["SHA256"], pb.DIGEST_FUNCTION["BLAKE3"]])
        caps.cache_capabilities.max_batch_total_size_bytes = 4 << 20
        caps.cache_capabilities.action_cache_update_capabilities.update_enabled = True
        return caps

    def find_missing(self, req, ctx):
        self.functions.append(req.digest_function)
        return pb.FindMissingBlobsResponse(missing_blob_digests=[
            d for d in req.blob_digests if (d.hash, d.size_bytes) not in self.blobs])

    def batch_update(self, req, ctx):
        self.functions.append(req.digest_function)
        resp = pb.BatchUpdateBlobsResponse()
        for r in req.requests:
            ok = self.check(req.digest_function, r.digest, r.data)
            if ok:
                self.blobs[(r.digest.hash, r.digest.size_bytes)] = r.data
            resp.responses.add(digest=r.digest, status=pb.Status(code=0 if ok else 3))
        return resp

    def batch_read(self, req, ctx):
        self.functions.append(req.digest_function)
        resp = pb.BatchReadBlobsResponse()
        for d in req.digests:
            data = self.blobs.get((d.hash, d.size_bytes))
            resp.responses.add(digest=d, data=data or b"", status=pb.Status(code=0 if data is not None else 5))
        return resp

    def get_result(self, req, ctx):
        self.functions.append(req.digest_function)
        data = self.results.get((req.action_digest.hash, req.action_digest.size_bytes))
        if data is None:
            ctx.abort(grpc.StatusCode.NOT_FOUND, "miss")
        return pb.ActionResult.FromString(data)

    def update_result(self, req, ctx):
        self.functions.append(req.digest_function)
        self.results[(req.action_digest.hash, req.action_digest.size_bytes)] = req.action_result.SerializeToString()
        return req.action_result

    def _parse(self, name: str):
        self.resources.append(name)
        m = re.search(r"blobs/(?:(blake3|sha256)/)?([0-9a-f]{64})/(\d+)$", name)
        fn = pb.DIGEST_FUNCTION["BLAKE3"] if m.group(1) == "blake3" else pb.DIGEST_FUNCTION["SHA256"]
        return fn, pb.Digest(hash=m.group(2), size_bytes=int(m.group(3)))

    def read(self, req, ctx):
        _, d = self._parse(req.resource_name)
        data = self.blobs[(d.hash, d.size_bytes)]
        for i in range(0, len(data), 1 << 20):
            yield pb.ReadResponse(data=data[i:i + (1 << 20)])

    def write(self, requests, ctx):
        first = next(requests)
        fn, d = self._parse(first.resource_name)
        data = first.data + b"".join(r.data for r in requests)
        if not self.check(fn, d, data):
            ctx.abort(grpc.StatusCode.INVALID_ARGUMENT, "digest mismatch")
        self.blobs[(d.hash, d.size_bytes)] = data
        return pb.WriteResponse(committed_size=len(data))

    def stop(self) -> None:
        self.server.stop(0)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def blake3_server():
    server = Blake3Server()
    yield server
    server.stop()


def test_the_client_prefers_blake3_and_names_it_in_resource_names(blake3_server):
    client = RemoteClient(blake3_server.url)
    assert client.connect().digest_functions == ("SHA256", "BLAKE3")
    assert client.fn is BLAKE3
    big = os.urandom(6 << 20)
    d = BLAKE3.of_bytes(big)
    assert (d.hash, d.size) == (digest_bytes(big).hash, digest_bytes(big).size)  # the local digest
    client.upload({d: big})
    assert client.download([d]) == {d: big}
    written, read = blake3_server.resources
    assert re.fullmatch(rf"uploads/[0-9a-f-]+/blobs/blake3/{d.hash}/{d.size}", written)
    assert read == f"blobs/blake3/{d.hash}/{d.size}"
    small = {BLAKE3.of_bytes(b"small"): b"small"}
    assert client.find_missing(small) == list(small)
    client.upload(small)
    assert client.download(small) == small
    assert blake3_server.functions and set(blake3_server.functions) == {pb.DIGEST_FUNCTION["BLAKE3"]}
    client.close()


def test_a_build_shared_over_blake3_needs_no_side_index(blake3_server, tmp_path):
    action = Action(id="compile b3", argv=("/usr/bin/g++", "-c", "b3.cpp", "-o", "b3.o"), outputs=("b3.o",),
                    inputs=("b3.cpp",), tools=("/usr/bin/g++",))
    platform, tools = Platform("gcc", "x86_64-linux-gnu"), {"/usr/bin/g++": digest_bytes(b"g++")}
    src = b"int b3;\n"

    def machine(name: str, upload: bool):
        home = Home(tmp_path / name)
        local = VerifyingStore(LocalZstdStore(home.cas))
        warnings: list[str] = []
        settings = RemoteSettings(url=blake3_server.url, target=blake3_server.url, upload=upload)
        endpoint = RemoteEndpoint(settings, warnings.append)
        return home, local, warnings, RemoteCache(endpoint, home, local, lambda rel: src, warnings.append)

    home, local, warnings, ci = machine("ci", True)
    entry = ActionEntry(outputs={"b3.o": (local.put(b"\x7fELF object"), 0o444)})
    ci.upload(action, platform, tools, {"b3.cpp": digest_bytes(src)}, (), entry)
    ci.close()
    assert ci.counters.uploaded == 1 and warnings == []
    assert (entry.outputs["b3.o"][0].hash, entry.outputs["b3.o"][0].size) in blake3_server.blobs

    home2, local2, warnings2, laptop = machine("laptop", False)
    hit = laptop.lookup(action, platform, tools, {"b3.cpp": digest_bytes(src)})
    laptop.close()
    assert hit is not None and hit.entry.outputs == entry.outputs and warnings2 == []
    assert local2.get(entry.outputs["b3.o"][0]) == b"\x7fELF object"
    for h in (home, home2):
        assert not (h.root / SIDE_INDEX).exists()  # blake3 everywhere: nothing to translate
