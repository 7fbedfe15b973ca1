"""A fault-injecting gRPC proxy for the remote-cache tests: it stands between `mcpp` and a real
BuildGrid, forwards every call as raw bytes, and can answer a fixed fraction of them with an
error of its choosing instead (before forwarding, so a refused call changes nothing upstream).

It counts what it forwarded, so a test can hold the build's own report against it: action
results served and missed, results written, and the blob bytes that crossed it each way (the
`data` of BatchReadBlobs/BatchUpdateBlobs entries and ByteStream messages). It also records
the metadata keys calls carried (the headers tests).

Served on 127.0.0.1 with plain text (`grpc://127.0.0.1:PORT`); upstream is any gRPC target.
"""
from __future__ import annotations

import collections
import hashlib
import io
import threading
import time
from concurrent import futures

import grpc
import zstandard

from mcpp.cas.remote import protocol as pb

_STREAM_OUT = ("/google.bytestream.ByteStream/Read", "/build.bazel.remote.execution.v2.Execution/Execute",
               "/build.bazel.remote.execution.v2.Execution/WaitExecution")
_STREAM_IN = ("/google.bytestream.ByteStream/Write",)


class FaultProxy:
    def __init__(self, upstream: str, fail: float = 0.0, code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE,
                 methods: tuple[str, ...] | None = None, delay: float = 0.0, zstd: bool = False,
                 workers: int = 64, refusals_per_request: int | None = None) -> None:
        """`fail`: the fraction of calls answered `code` (spread evenly, never twice in a row);
        `methods`: the method-name suffixes that may fail (None: any); `delay`: seconds added to
        every call (a long round trip); `zstd`: offer REAPI's zstd-compressed blobs to the client
        (in Capabilities) and translate to and from the plain blobs upstream; `workers`: calls it
        answers at once (each waits `delay` on its own thread); `refusals_per_request`: the most
        times one request (method and bytes) is refused (None: no limit), as a restarting server or
        a full pool refuses calls, not one call again and again; a stream's request is not limited."""
        self.fail, self.code, self.methods, self.delay, self.zstd = fail, code, methods, delay, zstd
        self.in_flight = collections.Counter()  # method -> calls being answered now
        self.most_in_flight = collections.Counter()  # method -> the most at once
        self.lock = threading.Lock()
        self.calls = 0
        self.failed = collections.Counter()  # method -> calls answered with `code`
        self.refusals_per_request = refusals_per_request
        self.refused_requests = collections.Counter()  # (method, request digest) -> times refused
        self.ok = collections.Counter()  # method -> calls forwarded and answered OK
        self.ac_hits = self.ac_misses = self.ac_updates = 0  # action results, manifests left out
        self.bytes_down = self.bytes_up = 0
        self.metadata_keys: set[str] = set()
        self.metadata: list[tuple[str, str]] = []
        self.instances: set[str] = set()  # the instance names GetCapabilities asked for
        # SHA-256 hashes of blobs the proxy says the server lacks (an eviction): FindMissingBlobs
        # lists them, reads answer NOT_FOUND
        self.evicted: set[str] = set()
        self.upstream = grpc.insecure_channel(upstream, options=[("grpc.max_receive_message_length", 64 << 20),
                                                                   ("grpc.max_send_message_length", 64 << 20)])
        self.server = grpc.server(futures.ThreadPoolExecutor(workers), handlers=[_Handler(self)],
                                  options=[("grpc.so_reuseport", 0), ("grpc.max_receive_message_length", 64 << 20),
                                           ("grpc.max_send_message_length", 64 << 20)])
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    @property
    def url(self) -> str:
        return f"grpc://127.0.0.1:{self.port}"

    def reset(self) -> None:
        with self.lock:
            self.calls = 0
            self.failed.clear()
            self.ok.clear()
            self.ac_hits = self.ac_misses = self.ac_updates = 0
            self.bytes_down = self.bytes_up = 0
            self.metadata_keys.clear()
            self.metadata.clear()
            self.instances.clear()

    def close(self) -> None:
        self.server.stop(0)
        self.upstream.close()

    def __enter__(self) -> "FaultProxy":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- what the handler asks ------------------------------------------------------------

    def admit(self, method: str, context, request: bytes | None = None) -> None:
        """Count the call; abort it with `code` when it is one of the `fail` fraction (and
        `request` has not been refused `refusals_per_request` times already)."""
        if self.delay:
            with self.lock:
                self.in_flight[method] += 1
                self.most_in_flight[method] = max(self.most_in_flight[method], self.in_flight[method])
            time.sleep(self.delay)
            with self.lock:
                self.in_flight[method] -= 1
        with self.lock:
            for k, v in context.invocation_metadata():
                self.metadata_keys.add(k)
                self.metadata.append((k, v))
            if self.methods is not None and not method.endswith(self.methods):
                return
            self.calls += 1
            n = self.calls
            refuse = int(n * self.fail) != int((n - 1) * self.fail)
            if refuse and request is not None and self.refusals_per_request is not None:
                asked = (method, hashlib.sha256(request).digest())
                refuse = self.refused_requests[asked] < self.refusals_per_request
                if refuse:
                    self.refused_requests[asked] += 1
            if refuse:
                self.failed[method] += 1
        if refuse:
            context.abort(self.code, "injected by the test proxy")

    def answered(self, method: str, request: bytes | list[bytes], response: bytes | list[bytes]) -> None:
        with self.lock:
            self.ok[method] += 1
            if method.endswith("/GetActionResult"):
                if not _is_manifest(pb.ActionResult.FromString(response)):
                    self.ac_hits += 1
            elif method.endswith("/UpdateActionResult"):
                result = pb.UpdateActionResultRequest.FromString(request).action_result
                if not _is_manifest(result):
                    self.ac_updates += 1
            elif method.endswith("/BatchReadBlobs"):
                self.bytes_down += sum(len(r.data) for r in pb.BatchReadBlobsResponse.FromString(response).responses)
            elif method.endswith("/BatchUpdateBlobs"):
                self.bytes_up += sum(len(r.data) for r in pb.BatchUpdateBlobsRequest.FromString(request).requests)
            elif method.endswith("ByteStream/Read"):
                self.bytes_down += sum(len(pb.ReadResponse.FromString(m).data) for m in response)
            elif method.endswith("ByteStream/Write"):
                self.bytes_up += sum(len(pb.WriteRequest.FromString(m).data) for m in request)

    # --- zstd translation (`zstd=True`) ----------------------------------------------------

    def unpacked(self, method: str, request: bytes) -> bytes:
        """The plain request upstream gets for the client's `request`."""
        if method.endswith("/BatchUpdateBlobs"):
            r = pb.BatchUpdateBlobsRequest.FromString(request)
            for entry in r.requests:
                if entry.compressor == pb.COMPRESSOR["ZSTD"]:
                    entry.data = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(entry.data)).read()
                    entry.compressor = 0
            return r.SerializeToString()
        return request

    def packed(self, method: str, request: bytes, response: bytes) -> bytes:
        """The client's answer for upstream's plain `response`."""
        if method.endswith("/GetCapabilities"):
            caps = pb.ServerCapabilities.FromString(response)
            caps.cache_capabilities.supported_compressors.append(pb.COMPRESSOR["ZSTD"])
            return caps.SerializeToString()
        if method.endswith("/BatchReadBlobs") and \
                pb.COMPRESSOR["ZSTD"] in pb.BatchReadBlobsRequest.FromString(request).acceptable_compressors:
            r = pb.BatchReadBlobsResponse.FromString(response)
            for entry in r.responses:
                entry.data = zstandard.ZstdCompressor().compress(entry.data)
                entry.compressor = pb.COMPRESSOR["ZSTD"]
            return r.SerializeToString()
        return response

    def evict(self, method: str, request: bytes, response: bytes) -> bytes:
        """`response` with the `evicted` blobs gone (unary calls)."""
        if method.endswith("/BatchReadBlobs"):
            r = pb.BatchReadBlobsResponse.FromString(response)
            for entry in r.responses:
                if entry.digest.hash in self.evicted:
                    entry.data = b""
                    entry.status.code = grpc.StatusCode.NOT_FOUND.value[0]
            return r.SerializeToString()
        if method.endswith("/FindMissingBlobs"):
            asked = pb.FindMissingBlobsRequest.FromString(request).blob_digests
            r = pb.FindMissingBlobsResponse.FromString(response)
            known = {d.hash for d in r.missing_blob_digests}
            r.missing_blob_digests.extend(d for d in asked if d.hash in self.evicted and d.hash not in known)
            return r.SerializeToString()
        return response

    def missed(self, method: str) -> None:
        with self.lock:
            if method.endswith("/GetActionResult"):
                self.ac_misses += 1


def _is_manifest(result) -> bool:
    """mcpp's header manifests are results too (cas/remote/actions.py): one output file of this name."""
    from mcpp.cas.remote.actions import MANIFEST_PATH

    return [f.path for f in result.output_files] == [MANIFEST_PATH]


class _Handler(grpc.GenericRpcHandler):
    def __init__(self, proxy: FaultProxy) -> None:
        self.proxy = proxy

    def service(self, details):
        method, proxy = details.method, self.proxy
        channel = proxy.upstream

        def forwarded_metadata(context):
            return [(k, v) for k, v in context.invocation_metadata() if not k.startswith(":")]

        def relay(e: grpc.RpcError, context):
            if e.code() == grpc.StatusCode.NOT_FOUND:
                proxy.missed(method)
            context.abort(e.code(), e.details() or "")

        if method in _STREAM_OUT:
            call = channel.unary_stream(method)

            def unary_stream(request, context):
                proxy.admit(method, context, request)
                out = []
                packed = False
                if proxy.zstd and method.endswith("ByteStream/Read"):
                    r = pb.ReadRequest.FromString(request)
                    if "compressed-blobs/zstd/" in r.resource_name:
                        r.resource_name = r.resource_name.replace("compressed-blobs/zstd/", "blobs/")
                        request, packed = r.SerializeToString(), True
                if method.endswith("ByteStream/Read") and any(
                        h in pb.ReadRequest.FromString(request).resource_name for h in proxy.evicted):
                    context.abort(grpc.StatusCode.NOT_FOUND, "evicted by the test proxy")
                try:
                    upstream = call(request, timeout=context.time_remaining(), metadata=forwarded_metadata(context))
                    if packed:
                        data = zstandard.ZstdCompressor().compress(
                            b"".join(pb.ReadResponse.FromString(m).data for m in upstream))
                        upstream = [pb.ReadResponse(data=data[i:i + (1 << 20)]).SerializeToString()
                                    for i in range(0, len(data), 1 << 20)]
                    for m in upstream:
                        out.append(m)
                        yield m
                except grpc.RpcError as e:
                    relay(e, context)
                proxy.answered(method, request, out)

            return grpc.unary_stream_rpc_method_handler(unary_stream)
        if method in _STREAM_IN:
            call = channel.stream_unary(method)

            def stream_unary(requests, context):
                proxy.admit(method, context)
                got = list(requests)
                sent = got
                first = pb.WriteRequest.FromString(got[0]) if got else None
                if proxy.zstd and first is not None and "/compressed-blobs/zstd/" in first.resource_name:
                    data = zstandard.ZstdDecompressor().stream_reader(
                        io.BytesIO(b"".join(pb.WriteRequest.FromString(m).data for m in got))).read()
                    resource = first.resource_name.replace("/compressed-blobs/zstd/", "/blobs/")
                    chunks = [data[i:i + (1 << 20)] for i in range(0, len(data), 1 << 20)] or [b""]
                    sent = [pb.WriteRequest(resource_name=resource if i == 0 else "", write_offset=i << 20, data=c,
                                            finish_write=i == len(chunks) - 1).SerializeToString()
                            for i, c in enumerate(chunks)]
                try:
                    resp = call(iter(sent), timeout=context.time_remaining(), metadata=forwarded_metadata(context))
                except grpc.RpcError as e:
                    relay(e, context)
                proxy.answered(method, got, resp)
                return resp

            return grpc.stream_unary_rpc_method_handler(stream_unary)
        call = channel.unary_unary(method)

        def unary_unary(request, context):
            if method.endswith("/GetCapabilities"):
                with proxy.lock:
                    proxy.instances.add(pb.GetCapabilitiesRequest.FromString(request).instance_name)
            proxy.admit(method, context, request)
            upstream_request = proxy.unpacked(method, request) if proxy.zstd else request
            try:
                resp = call(upstream_request, timeout=context.time_remaining(), metadata=forwarded_metadata(context))
            except grpc.RpcError as e:
                relay(e, context)
            if proxy.evicted:
                resp = proxy.evict(method, request, resp)
            if proxy.zstd:
                resp = proxy.packed(method, request, resp)
            proxy.answered(method, request, resp)
            return resp

        return grpc.unary_unary_rpc_method_handler(unary_unary)
