"""`RemoteClient`: the gRPC conversation with one REAPI server (CAS, ByteStream, action cache,
Execution, Bots): its one channel and every stub on it.

This layer moves bytes and messages; it knows nothing of the local store or of actions. It
owns the transport rules every caller would otherwise get wrong:

- *Capabilities first*: `connect` reads `GetCapabilities`, picks the digest function (BLAKE3 where
  offered, else SHA-256) and the batch limit; every later request carries `digest_function`.
- *Message limits*: servers refuse gRPC messages over their limit (BuildGrid: 4 MiB). Blobs go in
  `BatchUpdateBlobs`/`BatchReadBlobs` requests whose payload stays under the server's
  `max_batch_total_size_bytes` (minus room for the message framing); a blob too large for any
  batch goes through ByteStream, written in chunks of at most 1 MiB.
- *Compression*: where `GetCapabilities` lists ZSTD among `supported_compressors`, blobs travel
  zstd-compressed (`compressed-blobs/zstd/...` ByteStream resources, `compressor` in batches);
  otherwise, as with BuildGrid 0.4.4, plain. A compressed blob is decompressed to at most its
  digest's size; the caller verifies the bytes against the digest as always.
- *Errors*: every gRPC failure becomes `RemoteError` with the status code's name, except the one
  that is an answer rather than a failure: `NOT_FOUND` from `GetActionResult` (a cache miss).

The stubs are plain `grpc.Channel.unary_unary/unary_stream/stream_unary` callables over the
message classes of `protocol.py` and `exec_protocol.py`; there is no generated service code.
All of them are made here, on the client's one channel: the remote cache, remote execution
(through one `endpoint.RemoteEndpoint`) and `mcpp worker` call methods, never the channel.
"""
from __future__ import annotations

import io
import os
import threading
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, NamedTuple, TypeVar, Union, cast

# gRPC's C core logs connection events (a server going away) to stderr at INFO; the cache
# reports what matters itself, once. The variable is read when grpc initializes, and is removed
# again so that it does not leak into the environment of programs mcpp runs (`mcpp run`).
_QUIET = "GRPC_VERBOSITY" not in os.environ
if _QUIET:
    os.environ["GRPC_VERBOSITY"] = "ERROR"
import grpc  # noqa: E402
import zstandard  # noqa: E402

if _QUIET:
    del os.environ["GRPC_VERBOSITY"]

from . import exec_protocol as xp
from . import protocol as pb
from .coalesce import Coalescer
from .config import ChannelSecurity, RemoteSettings
from .digests import DigestFunction, RemoteDigest, choose, function_names
from .errors import RemoteError as RemoteError  # re-exported: callers name it from here
from .retry import Retrier

if TYPE_CHECKING:
    # protobuf ships no types, and the REAPI classes are built at run time (protocol.py): to
    # the type checker a message is `Any`; the name says which kind of value it is.
    from google.protobuf.message import Message

CHUNK = 1 << 20  # ByteStream chunk size (at most 1 MiB per message)
DEFAULT_BATCH_LIMIT = 4 << 20  # the gRPC default message size: the limit when a server names none
_FRAMING = 4 << 10  # room left in a batch for the request's own fields
_PER_BLOB = 160  # per-blob overhead in a batch: digest, status, field tags
_FIND_MISSING_CHUNK = 4096  # digests per FindMissingBlobs request (~100 bytes each)
# How long the first of several lookup threads waits for others to ask for blobs in the same
# BatchReadBlobs / FindMissingBlobs call (coalesce.py): short next to any round trip.
COALESCE_WINDOW = 0.002

T = TypeVar("T")

# A blob to upload: its bytes, or a function that opens a stream of them (for large blobs).
BlobSource = Union[bytes, Callable[[], io.BufferedIOBase]]


class BlobMissing(RemoteError):
    """The server's CAS lacks a blob an action result named (it may have been evicted)."""

    def __init__(self, d: RemoteDigest) -> None:
        super().__init__("NOT_FOUND", f"blob {d} not found")
        self.digest = d


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """What `GetCapabilities` said that this client uses."""

    digest_functions: tuple[str, ...]
    max_batch_total_size_bytes: int  # 0: the server sets no limit of its own
    update_enabled: bool  # the server accepts `UpdateActionResult`
    api: str  # e.g. "2.0-2.2"
    zstd: bool = False  # blobs travel zstd-compressed


@dataclass
class WireCounts:
    """What this client moved: blob bytes read and written (the `data` of batches and ByteStream
    messages, which is what a proxy in between can count too)."""

    bytes_down: int = 0
    bytes_up: int = 0


class RemoteClient:
    """One channel to one server. Thread-safe: gRPC channels and callables are."""

    def __init__(self, target: str, instance_name: str = "", timeout: float = 60.0,
                 security: ChannelSecurity | None = None, retrier: Retrier | None = None,
                 headers: tuple[tuple[str, str], ...] = ()) -> None:
        """`headers`: metadata sent with every call (--remote-header, the credential helper's)."""
        self.target = target
        self.instance = instance_name
        self.timeout = timeout
        # transient failures are retried (retry.py); without one, every failure is final
        self.retrier = retrier
        self.wire = WireCounts()
        self._wire_lock = threading.Lock()
        self.fn: DigestFunction | None = None
        self.batch_limit = DEFAULT_BATCH_LIMIT - _FRAMING
        self.zstd = False  # the server takes and sends zstd-compressed blobs (its capabilities say so)
        self.info: ServerInfo | None = None
        # what concurrent lookups ask for, one call per window (coalesce.py)
        self._reads: Coalescer[RemoteDigest, bytes] = Coalescer(
            self._read_answers, COALESCE_WINDOW, lambda ds: self._batch_cost(ds) <= self.batch_limit)
        self._finds: Coalescer[RemoteDigest, bool] = Coalescer(
            self._find_answers, COALESCE_WINDOW, lambda ds: len(ds) <= _FIND_MISSING_CHUNK)
        self._channel = _open_channel(target, security, [
            ("grpc.max_receive_message_length", 64 << 20),
            ("grpc.max_send_message_length", 64 << 20),
            ("grpc.enable_http_proxy", 0),
        ])
        if headers:
            self._channel = grpc.intercept_channel(self._channel, _Headers(headers))
        ch = self._channel
        self._caps = ch.unary_unary(pb.CAPABILITIES_GET, request_serializer=_ser,
                                    response_deserializer=pb.ServerCapabilities.FromString)
        self._find_missing = ch.unary_unary(pb.CAS_FIND_MISSING, request_serializer=_ser,
                                            response_deserializer=pb.FindMissingBlobsResponse.FromString)
        self._batch_update = ch.unary_unary(pb.CAS_BATCH_UPDATE, request_serializer=_ser,
                                            response_deserializer=pb.BatchUpdateBlobsResponse.FromString)
        self._batch_read = ch.unary_unary(pb.CAS_BATCH_READ, request_serializer=_ser,
                                          response_deserializer=pb.BatchReadBlobsResponse.FromString)
        self._ac_get = ch.unary_unary(pb.AC_GET, request_serializer=_ser,
                                      response_deserializer=pb.ActionResult.FromString)
        self._ac_update = ch.unary_unary(pb.AC_UPDATE, request_serializer=_ser,
                                         response_deserializer=pb.ActionResult.FromString)
        self._bs_read = ch.unary_stream(pb.BYTESTREAM_READ, request_serializer=_ser,
                                        response_deserializer=pb.ReadResponse.FromString)
        self._bs_write = ch.stream_unary(pb.BYTESTREAM_WRITE, request_serializer=_ser,
                                         response_deserializer=pb.WriteResponse.FromString)
        self._execute = ch.unary_stream(xp.EXECUTE, request_serializer=_ser,
                                        response_deserializer=xp.Operation.FromString)
        self._wait_execution = ch.unary_stream(xp.WAIT_EXECUTION, request_serializer=_ser,
                                               response_deserializer=xp.Operation.FromString)
        self._create_bot_session = ch.unary_unary(xp.CREATE_BOT_SESSION, request_serializer=_ser,
                                                  response_deserializer=xp.BotSession.FromString)
        self._update_bot_session = ch.unary_unary(xp.UPDATE_BOT_SESSION, request_serializer=_ser,
                                                  response_deserializer=xp.BotSession.FromString)
        if retrier is not None:
            retrier.on_cancel(self.close)  # an interrupted build ends the calls in flight too

    def close(self) -> None:
        self._channel.close()

    # --- capabilities ---------------------------------------------------------------------

    def connect(self, timeout: float | None = None) -> ServerInfo:
        """Read the server's capabilities and settle the digest function and batch limit."""
        # A server that does not answer the first call in time is not waited on again: its
        # deadline is not retried (a refused or reset connection is).
        caps = self._call(self._caps, pb.GetCapabilitiesRequest(instance_name=self.instance),
                          timeout=min(self.timeout, 10.0) if timeout is None else timeout)
        cache = caps.cache_capabilities
        offered = list(cache.digest_functions)
        fn = choose(offered)
        if fn is None:
            raise RemoteError("UNIMPLEMENTED", "the server offers no digest function mcpp speaks "
                              f"(offered: {', '.join(function_names(offered))}; mcpp needs BLAKE3 or SHA256)")
        self.fn = fn
        limit = cache.max_batch_total_size_bytes or DEFAULT_BATCH_LIMIT
        self.batch_limit = min(limit, DEFAULT_BATCH_LIMIT) - _FRAMING
        low, high = caps.low_api_version, caps.high_api_version
        self.zstd = pb.COMPRESSOR["ZSTD"] in cache.supported_compressors
        self.info = ServerInfo(tuple(function_names(offered)) or ("SHA256",), cache.max_batch_total_size_bytes,
                               cache.action_cache_update_capabilities.update_enabled,
                               f"{low.major}.{low.minor}-{high.major}.{high.minor}", self.zstd)
        return self.info

    @property
    def digest_function(self) -> DigestFunction:
        if self.fn is None:
            raise RuntimeError("RemoteClient.connect() must be called first")
        return self.fn

    # --- CAS ------------------------------------------------------------------------------

    def find_missing(self, digests: Iterable[RemoteDigest]) -> list[RemoteDigest]:
        """The digests of `digests` the server lacks (each once). A few asked from several
        threads at once travel in one call (`Coalescer`)."""
        unique = list(dict.fromkeys(digests))
        if 0 < len(unique) <= _FIND_MISSING_CHUNK:
            lacks = self._finds.ask(unique)
            return [d for d in unique if lacks[d]]
        missing: list[RemoteDigest] = []
        for i in range(0, len(unique), _FIND_MISSING_CHUNK):
            chunk = unique[i:i + _FIND_MISSING_CHUNK]
            resp = self._call(self._find_missing, pb.FindMissingBlobsRequest(
                instance_name=self.instance, blob_digests=[d.to_proto() for d in chunk],
                digest_function=self.digest_function.value), read=True)
            missing += _asked(chunk, resp.missing_blob_digests)
        return missing

    def upload(self, blobs: Mapping[RemoteDigest, BlobSource]) -> None:
        """Store every blob on the server: small ones batched, large ones through ByteStream."""
        batch: list[tuple[RemoteDigest, bytes]] = []
        used = 0
        for d, source in blobs.items():
            cost = d.size + _PER_BLOB
            if cost > self.batch_limit:
                self.write_stream(d, source)
                continue
            data = source if isinstance(source, (bytes, bytearray, memoryview)) else _read_all(source)
            if batch and used + cost > self.batch_limit:
                self._update_batch(batch)
                batch, used = [], 0
            batch.append((d, bytes(data)))
            used += cost
        if batch:
            self._update_batch(batch)

    def _find_answers(self, ds: list[RemoteDigest]) -> dict[RemoteDigest, bool]:
        """One FindMissingBlobs for a coalesced batch: whether the server lacks each."""
        resp = self._call(self._find_missing, pb.FindMissingBlobsRequest(
            instance_name=self.instance, blob_digests=[d.to_proto() for d in ds],
            digest_function=self.digest_function.value), read=True)
        lacks = set(_asked(ds, resp.missing_blob_digests))
        return {d: d in lacks for d in ds}

    def _batch_cost(self, ds: list[RemoteDigest]) -> int:
        return sum(d.size + _PER_BLOB for d in ds)

    def download(self, digests: Iterable[RemoteDigest]) -> dict[RemoteDigest, bytes]:
        """The bytes of every blob (unverified: the caller checks them against their digests).
        A few small ones asked from several threads at once travel in one call (`Coalescer`).

        Raises `BlobMissing` for a blob the server lacks.
        """
        wanted = [d for d in dict.fromkeys(digests)]
        if wanted and all(d.size for d in wanted) and self._batch_cost(wanted) <= self.batch_limit:
            return self._reads.ask(wanted)
        out: dict[RemoteDigest, bytes] = {}
        batch: list[RemoteDigest] = []
        used = 0
        for d in dict.fromkeys(digests):
            if d.size == 0:
                out[d] = b""  # REAPI: the empty blob is always present and never needs a request
                continue
            cost = d.size + _PER_BLOB
            if cost > self.batch_limit:
                out[d] = self._retried(lambda d=d: b"".join(self.read_stream(d)), read=True)  # type: ignore[misc]
                continue
            if batch and used + cost > self.batch_limit:
                out.update(self._read_batch(batch))
                batch, used = [], 0
            batch.append(d)
            used += cost
        if batch:
            out.update(self._read_batch(batch))
        return out

    def read_stream(self, d: RemoteDigest) -> Iterator[bytes]:
        """ByteStream `Read` of one blob, as the chunks the server sends (decompressed)."""
        fn = self.digest_function
        zstd = self.zstd
        request = pb.ReadRequest(resource_name=fn.compressed_read_resource(self.instance, d) if zstd
                                 else fn.read_resource(self.instance, d))
        seen = 0
        # compressed: a zstd frame never needs much more room than its content
        limit = 2 * d.size + (1 << 20) if zstd else d.size
        packed: list[bytes] = []
        try:
            for resp in self._bs_read(request, timeout=self._stream_timeout(d.size)):
                self._count(down=len(resp.data))
                seen += len(resp.data)
                if seen > limit:
                    raise RemoteError("OUT_OF_RANGE", f"blob {d}: server sent more than {limit} bytes")
                if zstd:
                    packed.append(resp.data)
                else:
                    yield resp.data
            if zstd:
                yield _inflated(d, b"".join(packed))
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.NOT_FOUND:
                raise BlobMissing(d) from None
            raise error_of(e) from None

    def write_stream(self, d: RemoteDigest, source: BlobSource) -> None:
        """ByteStream `Write` of one blob in chunks of at most `CHUNK` bytes."""
        fn = self.digest_function
        zstd = self.zstd
        sent = [0]

        def requests() -> Iterator[Message]:
            # a retry writes the blob again from its start, under a new upload name
            resource = (fn.compressed_write_resource if zstd else fn.write_resource)(
                self.instance, str(uuid.uuid4()), d)
            sent[0] = 0
            chunks = _compressed_chunks(source) if zstd else _chunks(source)
            offset = 0
            first = True
            for chunk, last in chunks:
                yield pb.WriteRequest(resource_name=resource if first else "", write_offset=offset,
                                      data=chunk, finish_write=last)
                first = False
                offset += len(chunk)
            sent[0] = offset
            if first:  # an empty blob
                yield pb.WriteRequest(resource_name=resource, write_offset=0, finish_write=True)

        resp = self._call(self._bs_write, requests, timeout=self._stream_timeout(d.size))
        if resp.committed_size not in (d.size, -1) and not (zstd and resp.committed_size == sent[0]):
            raise RemoteError("DATA_LOSS", f"blob {d}: server committed {resp.committed_size} bytes")
        self._count(up=sent[0])

    # --- action cache ---------------------------------------------------------------------

    def get_action_result(self, action: RemoteDigest, inline_outputs: Iterable[str] = ()) -> Message | None:
        """The cached `ActionResult` for the Action with digest `action`, or None on a miss."""
        request = pb.GetActionResultRequest(
            instance_name=self.instance, action_digest=action.to_proto(), inline_stdout=True,
            inline_stderr=True, inline_output_files=list(inline_outputs),
            digest_function=self.digest_function.value)
        def get() -> Message | None:
            try:
                return self._ac_get(request, timeout=self.timeout)
            except grpc.RpcError as e:
                if e.code() == grpc.StatusCode.NOT_FOUND:
                    return None
                raise error_of(e) from None

        return self._retried(get, read=True)

    def update_action_result(self, action: RemoteDigest, result: Message) -> None:
        """Record `result` for `action`. The caller must have uploaded every blob it names."""
        self._call(self._ac_update, pb.UpdateActionResultRequest(
            instance_name=self.instance, action_digest=action.to_proto(), action_result=result,
            digest_function=self.digest_function.value))

    # --- execution and bots ---------------------------------------------------------------
    # These hand back gRPC's own call objects (a stream of `Operation`s that can be cancelled,
    # a `BotSession`) and let `grpc.RpcError` through: their callers tell a deadline or a
    # cancellation from a failure (`error_of` turns one into a `RemoteError`).

    def execute(self, request: Message, timeout: float | None = None) -> Any:
        """`Execute`: the operation stream of one action (iterate it; `cancel()` abandons it)."""
        return self._execute(request, timeout=timeout)

    def wait_execution(self, name: str, timeout: float) -> Any:
        """`WaitExecution` of the operation `name`: its stream, from the stage it is at now."""
        return self._wait_execution(xp.WaitExecutionRequest(name=name), timeout=timeout)

    def create_bot_session(self, request: Message, timeout: float) -> Message:
        return self._create_bot_session(request, timeout=timeout)

    def update_bot_session(self, request: Message, timeout: float) -> Message:
        return self._update_bot_session(request, timeout=timeout)

    # --- internals ------------------------------------------------------------------------

    def _update_batch(self, batch: list[tuple[RemoteDigest, bytes]]) -> None:
        """One `BatchUpdateBlobs`, retried whole when the call or one of its blobs failed
        transiently (a server may answer a full pool per blob)."""
        self._retried(lambda: self._update_batch_once(batch), read=False)

    def _update_batch_once(self, batch: list[tuple[RemoteDigest, bytes]]) -> None:
        if self.zstd:
            zstd = pb.COMPRESSOR["ZSTD"]
            packer = zstandard.ZstdCompressor()
            entries = [pb.BatchUpdateBlobsRequest.Request(digest=d.to_proto(), data=packer.compress(data),
                                                          compressor=zstd) for d, data in batch]
        else:
            entries = [pb.BatchUpdateBlobsRequest.Request(digest=d.to_proto(), data=data) for d, data in batch]
        resp = self._call(self._batch_update, pb.BatchUpdateBlobsRequest(
            instance_name=self.instance, digest_function=self.digest_function.value, requests=entries),
            retry=False)
        self._count(up=sum(len(e.data) for e in entries))
        failed = [r for r in resp.responses if r.status.code != 0]
        if failed:
            r = failed[0]
            raise RemoteError(code_name(r.status.code), f"upload of {r.digest.hash[:80]!r}/{r.digest.size_bytes} "
                              f"refused: {r.status.message} ({len(failed)} of {len(batch)} blobs refused)")

    def _read_batch(self, batch: list[RemoteDigest]) -> dict[RemoteDigest, bytes]:
        """One `BatchReadBlobs`, retried whole when the call or one of its blobs failed transiently."""
        # not lenient: every answer is bytes (a missing blob raised)
        return cast("dict[RemoteDigest, bytes]", self._retried(lambda: self._read_batch_once(batch), read=True))

    def _read_answers(self, batch: list[RemoteDigest]) -> dict[RemoteDigest, bytes | BaseException]:
        """One `BatchReadBlobs` (retried as `_read_batch`) for a coalesced batch: a blob the
        server lacks is that blob's `BlobMissing`, not the whole batch's."""
        return self._retried(lambda: self._read_batch_once(batch, lenient=True), read=True)

    def _read_batch_once(self, batch: list[RemoteDigest], lenient: bool = False
                         ) -> dict[RemoteDigest, bytes | BaseException]:
        resp = self._call(self._batch_read, pb.BatchReadBlobsRequest(
            instance_name=self.instance, digests=[d.to_proto() for d in batch],
            digest_function=self.digest_function.value,
            acceptable_compressors=[pb.COMPRESSOR["ZSTD"]] if self.zstd else []), retry=False)
        self._count(down=sum(len(r.data) for r in resp.responses))
        out: dict[RemoteDigest, bytes | BaseException] = {}
        asked = {(d.hash, d.size): d for d in batch}
        for r in resp.responses:
            d = asked.get((r.digest.hash, r.digest.size_bytes))
            if d is None:  # not a blob this request named: nothing to take from it
                continue
            if r.status.code == grpc.StatusCode.NOT_FOUND.value[0]:
                if lenient:
                    out[d] = BlobMissing(d)
                    continue
                raise BlobMissing(d)
            if r.status.code != 0:
                raise RemoteError(code_name(r.status.code), f"read of {d} failed: {r.status.message}")
            out[d] = _inflated(d, r.data) if r.compressor == pb.COMPRESSOR["ZSTD"] else r.data
        for d in batch:
            if d not in out:
                if not lenient:
                    raise BlobMissing(d)
                out[d] = BlobMissing(d)
        return out

    def _call(self, method: Callable[..., Message], request: Message | Callable[[], Iterator[Message]],
              timeout: float | None = None, read: bool = False, retry: bool = True) -> Message:
        """One call of `method`, retried when it fails transiently (`read`: it changes nothing
        on the server, so a timed-out one may be repeated too; `retry=False`: the caller retries
        around it). A request stream is given as the function that makes it, so that a retry
        sends it again from its start."""
        def once() -> Message:
            try:
                return method(request() if callable(request) else request,
                              timeout=self.timeout if timeout is None else timeout)
            except grpc.RpcError as e:
                raise error_of(e) from None

        return self._retried(once, read) if retry else once()

    def _retried(self, fn: Callable[[], T], read: bool) -> T:
        return fn() if self.retrier is None else self.retrier.call(fn, read)

    def _count(self, down: int = 0, up: int = 0) -> None:
        with self._wire_lock:
            self.wire.bytes_down += down
            self.wire.bytes_up += up

    def _stream_timeout(self, size: int) -> float:
        # The configured timeout plus a second per MiB: a large blob on a slow link is not a hang.
        return self.timeout + size / CHUNK


def _asked(asked: list[RemoteDigest], answered: Iterable[Message]) -> list[RemoteDigest]:
    """The digests of `asked` that the proto digests `answered` name: a server's answer can only
    pick among what it was asked about, never introduce a name of its own."""
    named = {(d.hash, d.size_bytes) for d in answered}
    return [d for d in asked if (d.hash, d.size) in named]


def _open_channel(target: str, security: ChannelSecurity | None, options: list[tuple[str, Any]]) -> Any:  # a grpc.Channel
    """Plain text unless TLS or a token is asked for. A token rides on call credentials, which
    gRPC sends only over a secure channel: TLS, or local credentials for a unix socket or
    loopback (config.py refuses a token for anything else)."""
    if security is None or not (security.tls or security.token):
        return grpc.insecure_channel(target, options=options)
    if security.tls:
        creds = grpc.ssl_channel_credentials(root_certificates=security.ca, private_key=security.key,
                                             certificate_chain=security.cert)
    else:
        kind = grpc.LocalConnectionType.UDS if target.startswith("unix:") else grpc.LocalConnectionType.LOCAL_TCP
        creds = grpc.local_channel_credentials(kind)
    if security.token:
        creds = grpc.composite_channel_credentials(creds, grpc.access_token_call_credentials(security.token))
    return grpc.secure_channel(target, creds, options=options)


class _Details(NamedTuple):
    method: str
    timeout: float | None
    metadata: Any
    credentials: Any
    wait_for_ready: bool | None
    compression: Any


_INTERCEPTORS: tuple[Any, ...] = (grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,
                                  grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor)


class _Headers(*_INTERCEPTORS):  # type: ignore[misc]
    """Adds the configured headers to every call's metadata."""

    def __init__(self, headers: tuple[tuple[str, str], ...]) -> None:
        self.headers = headers

    def _details(self, d: Any) -> Any:
        metadata = list(d.metadata or ()) + list(self.headers)
        return _CallDetails(d.method, d.timeout, metadata, d.credentials,
                            getattr(d, "wait_for_ready", None), getattr(d, "compression", None))

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_stream_unary(self, continuation: Any, details: Any, requests: Any) -> Any:
        return continuation(self._details(details), requests)

    def intercept_stream_stream(self, continuation: Any, details: Any, requests: Any) -> Any:
        return continuation(self._details(details), requests)


class _CallDetails(_Details, grpc.ClientCallDetails):  # type: ignore[misc]
    """`grpc.ClientCallDetails` is abstract: a named tuple gives it its fields."""


def _ser(message: Message) -> bytes:
    data: bytes = message.SerializeToString()
    return data


def error_of(e: grpc.RpcError) -> RemoteError:
    """A gRPC failure as a `RemoteError` named by its status code."""
    code = e.code() if hasattr(e, "code") else None
    details = e.details() if hasattr(e, "details") else str(e)
    return RemoteError(code.name if code is not None else "UNKNOWN", (details or "").strip())


def code_name(code: int) -> str:
    """The name of a numeric gRPC status code (a `google.rpc.Status` carries the number)."""
    for c in grpc.StatusCode:
        if c.value[0] == code:
            name: str = c.name
            return name
    return str(code)


def _inflated(d: RemoteDigest, data: bytes) -> bytes:
    """A zstd-compressed blob's bytes, at most `d.size` of them (a bomb stops there)."""
    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)) as r:
            out: bytes = r.read(d.size + 1)
    except zstandard.ZstdError as e:
        raise RemoteError("DATA_LOSS", f"blob {d}: not zstd: {e}") from None
    if len(out) > d.size:
        raise RemoteError("OUT_OF_RANGE", f"blob {d}: more than {d.size} bytes once decompressed")
    return out


def _compressed_chunks(source: BlobSource) -> Iterator[tuple[bytes, bool]]:
    """The zstd stream of `source` in chunks of at most `CHUNK` bytes, each with whether it is the last."""
    packer = zstandard.ZstdCompressor().compressobj()
    pending = b""
    for chunk, _last in _chunks(source):
        pending += packer.compress(chunk)
        while len(pending) > CHUNK:
            yield pending[:CHUNK], False
            pending = pending[CHUNK:]
    pending += packer.flush()
    while len(pending) > CHUNK:
        yield pending[:CHUNK], False
        pending = pending[CHUNK:]
    yield pending, True


def _chunks(source: BlobSource) -> Iterator[tuple[bytes, bool]]:
    """`source` in chunks of at most `CHUNK` bytes, each with whether it is the last (an empty
    source yields nothing)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        view = memoryview(source)
        for i in range(0, len(view), CHUNK):
            yield bytes(view[i:i + CHUNK]), i + CHUNK >= len(view)
        return
    with source() as f:
        chunk = f.read(CHUNK)
        while chunk:
            following = f.read(CHUNK)
            yield chunk, not following
            chunk = following


def _read_all(opener: Callable[[], io.BufferedIOBase]) -> bytes:
    with opener() as f:
        return f.read()


def open_client(settings: RemoteSettings, retrier: Retrier | None = None) -> tuple[RemoteClient, ServerInfo]:
    """A client for `settings`, connected (capabilities read); when the server cannot be reached
    the channel is closed before the RemoteError goes to the caller, which degrades."""
    headers = settings.security.headers
    if settings.security.credential_helper:
        from .credential_helper import helper_headers

        headers = (*headers, *helper_headers(settings.security.credential_helper, settings.url))
    client = RemoteClient(settings.target, settings.instance_name, settings.timeout, settings.security,
                          retrier, headers)
    try:
        return client, client.connect(settings.connect_timeout)
    except RemoteError:
        client.close()
        raise
