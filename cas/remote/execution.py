"""`RemoteExecutor`: run one action on a remote worker through REAPI `Execute`, or say "run it here".

What one remote run is:

1. the action's `Command`, its input root (every declared input and candidate header, as
   `Directory` trees) and its `Action` are encoded (`exec_messages.py`);
2. the files and messages not yet known to be on the server are uploaded, after a
   `FindMissingBlobs` when they are large (a second compile of the same package sends its one
   new source file and its new messages, in one request);
3. `Execute`, then the operation stream is read until the operation is done; the server queues
   the action, a worker leases it (`engine/bot/command.py`), runs it in its sandbox and reports
   the `ActionResult`;
4. the result is taken as a cache hit is (`RemoteStore.fetch`): every output, stdout and stderr
   is downloaded and verified against its digest before it is written into the execroot. The
   engine then stores the outputs, writes the local action cache entry (and uploads and signs
   it with `--remote-upload`) exactly as for a local run.

A failure of the *action* (exit code, stderr) is an answer like a local one. A failure of the
*service* never fails a build: `run` answers None, the engine runs the action here, and the
first such failure prints one warning and turns remote execution off for the rest of the build:

- the server unreachable or gone (`UNAVAILABLE`, a timeout): the build's `RemoteEndpoint`,
  shared with the remote cache, is turned off, with its one warning;
- the service refusing to run actions (a server that only caches, a refused request): remote
  execution alone is turned off, and the cache goes on;
- no worker making progress: when actions stay queued and no operation has started or finished
  for `worker_wait` seconds (every worker gone, or none matches these actions' platform), the
  queued operations are abandoned and what remains runs locally.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

import grpc

from . import exec_protocol as xp
from ..action import Action
from ..blobstore import BlobStore
from ..digest import Digest, digest_file
from .actions import relative_to, result_outputs, working_directory
from .client import BlobSource, RemoteClient, RemoteError, code_name, error_of
from .digests import BadDigest, DigestFunction, RemoteDigest
from .endpoint import RemoteEndpoint
from .exec_messages import exec_messages
from .memo import Memo
from .store import RemoteCorrupt, RemoteStore

if TYPE_CHECKING:
    # protobuf ships no types, and the REAPI classes are built at run time (protocol.py): to
    # the type checker a message is `Any`; the name says which kind of value it is.
    from google.protobuf.message import Message

DEFAULT_WORKER_WAIT = 30.0  # seconds without any progress before the workers count as gone
_DEADLINE_EXCEEDED = 4
_SEND_WITHOUT_ASKING = 64 << 10  # bytes of new input files sent without a FindMissingBlobs first
# Failures that mean the server is gone, for the cache too; any other is about execution alone
# (a server that caches but does not execute answers UNIMPLEMENTED).
_SERVER_GONE = ("UNAVAILABLE", "DEADLINE_EXCEEDED")


@dataclass
class ExecResult:
    """What the worker's run answered, with the outputs already written into the execroot."""

    exit_code: int
    stdout: bytes
    stderr: bytes
    duration: float
    timed_out: bool
    worker: str


@dataclass
class ExecCounters:
    executed: int = 0  # actions a worker ran (whatever their exit code)
    local: int = 0  # actions handed back to run here after remote execution was turned off


class RemoteExecutor:
    """Thread-safe: the engine's workers call `run` concurrently, one action each."""

    def __init__(self, endpoint: RemoteEndpoint, local: BlobStore, warn: Callable[[str], None],
                 worker_wait: float | None = None) -> None:
        """`endpoint`: the build's connection to the server (shared with the remote cache);
        `worker_wait`: seconds without progress before the workers count as gone (None: the
        default)."""
        self.endpoint = endpoint
        self.settings = endpoint.settings
        self.local = local
        self.warn = warn
        self.worker_wait = worker_wait if worker_wait is not None else DEFAULT_WORKER_WAIT
        self.counters = ExecCounters()
        self._lock = threading.Lock()
        self._client: RemoteClient | None = None
        self._store: RemoteStore | None = None
        self._off: str | None = None  # why execution alone was turned off (no workers, the service refused)
        self._file_digests: Memo[RemoteDigest] = Memo()  # (path, size, mtime) -> digest
        self._tool_digests: Memo[Digest] = Memo()
        self._present: set[RemoteDigest] = set()  # blobs the server said it has, this build
        self._queued: dict[int, Any] = {}  # id -> gRPC call of an operation not yet executing
        self._inflight: dict[int, list[Any]] = {}  # id -> [gRPC call, operation name, time of its last update]
        self._progress = time.monotonic()
        self._watchdog: threading.Thread | None = None
        self._closed = threading.Event()

    @property
    def url(self) -> str:
        return self.settings.url

    @property
    def disabled(self) -> str | None:
        return self._off or self.endpoint.disabled

    # --- one action (engine worker threads) -------------------------------------------------

    def run(self, action: Action, inputs: Mapping[str, str], execroot: str) -> ExecResult | None:
        """Run `action` remotely; `inputs` maps each execroot path it may read to a local file with
        its bytes. None: run it here (remote execution is off, or was just turned off)."""
        if not self._ready():
            return self._local()
        client, store = self._client, self._store
        assert client is not None and store is not None
        try:
            files = {rel: self._file(path) for rel, path in inputs.items()}
            tools = {t: self._tool(t) for t in action.tools}
            msgs = exec_messages(action, tools, files, client.digest_function)
        except (OSError, ValueError) as e:
            self.warn(f"remote execution of `{action.id}` impossible ({e}); the action runs locally")
            return self._local(counted=False)
        start = time.monotonic()
        try:
            self._upload(client, msgs.blobs, msgs.files)
            response = self._wait(client, msgs.action_digest)
            if response is None:
                return self._local()
            status = response.status
            if status.code not in (0, _DEADLINE_EXCEEDED):
                # The service could not run it (a lease retried until BuildGrid gave up, a platform
                # no worker offers): an answer about the service, not about the action.
                self._disable_with(f"{code_name(status.code)}: {status.message}")
                return self._local()
            result = response.result
            outputs = self._outputs(action, result) if result.exit_code == 0 and status.code == 0 else {}
            streams = {name: _stream_digest(result, name, store.fn) for name in ("stdout", "stderr")}
            # One download for the outputs and stdout/stderr (each checked against its digest).
            local = store.fetch([d for d, _x in outputs.values()] + [d for d in streams.values() if d])
            stdout, stderr = (bytes(getattr(result, f"{name}_raw")) if d is None else self.local.get(local[d])
                              for name, d in streams.items())
            self._write_outputs(outputs, local, execroot)
        except RemoteCorrupt as e:
            self.warn(f"remote execution at {self.url} sent a corrupt blob for `{action.id}` ({e.reason}); "
                      "the action runs locally")
            return self._local(counted=False)
        except BadDigest as e:  # the result names an output by something that is not a digest
            self.warn(f"remote execution at {self.url} sent a malformed result for `{action.id}` ({e}); "
                      "the action runs locally")
            return self._local(counted=False)
        except RemoteError as e:  # BlobMissing too: the server lost what it just named
            if e.code in _SERVER_GONE:
                self.endpoint.down(e, "remote execution")
            else:
                self._disable_with(str(e))
            return self._local()
        with self._lock:
            self.counters.executed += 1
        worker = result.execution_metadata.worker if result.HasField("execution_metadata") else ""
        return ExecResult(result.exit_code, stdout, stderr, time.monotonic() - start,
                          status.code == _DEADLINE_EXCEEDED, worker)

    def close(self) -> None:
        """Stop the watchdog; the endpoint, shared with the cache, is closed by the build."""
        self._closed.set()

    # --- steps ------------------------------------------------------------------------------

    def _upload(self, client: RemoteClient, blobs: dict[RemoteDigest, bytes], files: dict[RemoteDigest, str]) -> None:
        """Only what the server may lack: the files and messages not known present this build.
        When those files are small in all (the common case: a compile's own source, once the
        shared headers went up with the first action), they are sent with the new messages
        (this action's `Action`, `Command` and some `Directory`s, small and mostly new) without
        asking first: one request instead of two per action, and a request is what the server's
        CPU pays for (re-sending a few KiB it already has costs it less than a round trip).
        Larger sets ask `FindMissingBlobs` first, so a big input is never sent twice."""
        with self._lock:
            new_files = [d for d in files if d not in self._present]
            new_msgs = [d for d in blobs if d not in self._present]
        if not new_files and not new_msgs:
            return
        if sum(d.size for d in new_files) > _SEND_WITHOUT_ASKING:
            missing = client.find_missing(new_files + new_msgs)
        else:
            missing = new_files + new_msgs
        if missing:
            client.upload({d: blobs[d] if d in blobs else _opener(files[d]) for d in missing})
        with self._lock:
            self._present.update(new_files)
            self._present.update(new_msgs)

    def _wait(self, client: RemoteClient, action_digest: RemoteDigest) -> Message | None:
        """`Execute`, then follow the operation to its end; None when it was abandoned because no
        worker made progress (or the stream broke after remote execution was turned off)."""
        request = xp.ExecuteRequest(instance_name=client.instance, action_digest=action_digest.to_proto(),
                                    digest_function=client.digest_function.value,
                                    # With trusted keys, an unsigned result some other client's
                                    # execution left in the server's cache must not pass as a run.
                                    skip_cache_lookup=self.settings.trusted_keys is not None)
        call = client.execute(request)
        key = id(call)
        with self._lock:
            self._queued[key] = call
            self._inflight[key] = [call, "", time.monotonic()]
        try:
            for op in call:
                with self._lock:
                    self._inflight[key][1:] = [op.name, time.monotonic()]
                if op.HasField("metadata"):
                    meta = xp.ExecuteOperationMetadata()
                    if op.metadata.Unpack(meta):
                        with self._lock:
                            if meta.stage >= xp.STAGE_EXECUTING:
                                self._queued.pop(key, None)
                                self._progress = time.monotonic()
                            elif meta.stage == xp.STAGE_QUEUED:
                                # again, after a worker that had leased it was declared dead
                                self._queued[key] = call
                if op.done:
                    with self._lock:
                        self._queued.pop(key, None)
                        self._progress = time.monotonic()
                    if op.HasField("error") and op.error.code:
                        raise RemoteError(code_name(op.error.code), op.error.message)
                    response = xp.ExecuteResponse()
                    if not op.response.Unpack(response):
                        raise RemoteError("INTERNAL", f"operation {op.name} answered {op.response.type_url}")
                    return response
            raise RemoteError("UNAVAILABLE", "the operation stream ended before the operation was done")
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.CANCELLED and self.disabled:
                return None  # abandoned by the watchdog: it already warned
            raise error_of(e) from None
        finally:
            with self._lock:
                self._queued.pop(key, None)
                self._inflight.pop(key, None)

    def _stage_now(self, name: str) -> int | None:
        """The operation's stage as the server has it now: the first message of `WaitExecution`.
        BuildGrid does not always tell an open `Execute` stream that a lease whose worker died
        went back to the queue; asking again does."""
        client = self._client
        if client is None or not name:
            return None
        stream = client.wait_execution(name, timeout=5.0)
        try:
            for op in stream:
                meta = xp.ExecuteOperationMetadata()
                if op.done:
                    return xp.STAGE_COMPLETED
                if op.HasField("metadata") and op.metadata.Unpack(meta):
                    stage: int = meta.stage
                    return stage
                return None
        except grpc.RpcError:
            return None
        finally:
            stream.cancel()
        return None

    def _outputs(self, action: Action, result: Message) -> dict[str, tuple[RemoteDigest, bool]]:
        """execroot path -> (digest, executable) of every output the result names, the depfile
        included."""
        assert self._store is not None, "called by `run`, once connected"
        fn = self._store.fn
        outputs = dict(result_outputs(action, result, fn) or {})
        if action.depfile:
            cwd = working_directory(action.cwd)
            rel = relative_to(action.depfile, cwd)
            for f in result.output_files:
                if f.path == rel:
                    outputs[action.depfile] = (RemoteDigest.from_wire(f.digest, fn), False)
        return outputs

    def _write_outputs(self, outputs: dict[str, tuple[RemoteDigest, bool]], local: dict[RemoteDigest, Digest],
                       execroot: str) -> None:
        """Write every (fetched, verified) output where the action would have."""
        for path, (rd, executable) in outputs.items():
            target = os.path.join(execroot, path)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            tmp = f"{target}.mcpp-remote-{os.getpid()}-{threading.get_ident()}"
            with open(tmp, "wb") as f:
                f.write(self.local.get(local[rd]))
            os.chmod(tmp, 0o755 if executable else 0o644)
            os.replace(tmp, target)

    # --- digests --------------------------------------------------------------------------

    def _file(self, path: str) -> tuple[RemoteDigest, bool, str]:
        """(remote digest, executable, path) of a staged input. Staged files are the store's
        read-only materialized copies, so (path, size, mtime) names one content for the build."""
        st = os.stat(path)
        key = (path, st.st_size, st.st_mtime_ns)
        def digest() -> RemoteDigest:
            assert self._client is not None
            return self._client.digest_function.of_file(path)

        return self._file_digests.get(key, digest), bool(st.st_mode & 0o111), path

    def _tool(self, path: str) -> Digest:
        return self._tool_digests.get(path, lambda: digest_file(path))

    # --- connection and degradation --------------------------------------------------------

    def _ready(self) -> bool:
        """Connected (the endpoint's client, the store over it, the watchdog), or off."""
        if self._off:
            return False
        client = self.endpoint.client()
        if client is None:
            return False
        with self._lock:
            if self._off:
                return False
            if self._client is None:
                self._client = client
                self._store = RemoteStore(client, self.local, None)
                self._progress = time.monotonic()
                self._watchdog = threading.Thread(target=self._watch, name="mcpp-remote-exec-watchdog",
                                                  daemon=True)
                self._watchdog.start()
            return True

    def _watch(self) -> None:
        """Abandon the queued operations when no worker has made progress for `worker_wait` s."""
        while not self._closed.wait(0.5):
            now = time.monotonic()
            with self._lock:
                silent = [(key, entry[1]) for key, entry in self._inflight.items()
                          if key not in self._queued and now - entry[2] > self.worker_wait]
            for key, name in silent:  # "executing" without a word for a long time: still so?
                stage = self._stage_now(name)
                with self._lock:
                    entry = self._inflight.get(key)
                    if entry is None:
                        continue
                    entry[2] = time.monotonic()
                    if stage == xp.STAGE_QUEUED:
                        self._queued[key] = entry[0]
            with self._lock:
                if self.disabled:
                    return
                stalled = self._queued and time.monotonic() - self._progress > self.worker_wait
                if not stalled:
                    continue
                calls = list(self._queued.values())
                self._disable_locked(f"no worker took an action for {self.worker_wait:.0f}s", what="no workers")
            for call in calls:
                call.cancel()
            return

    def _local(self, counted: bool = True) -> ExecResult | None:
        """`run`'s answer for an action that runs here: None, counted as local unless not `counted`."""
        if counted:
            with self._lock:
                self.counters.local += 1
        return None

    def _disable_with(self, reason: str) -> None:
        with self._lock:
            self._disable_locked(reason)

    def _disable_locked(self, reason: str, what: str = "unavailable") -> None:
        """Turn remote execution alone off (the cache keeps the endpoint), with one warning."""
        if self.disabled:
            return
        reason = reason.splitlines()[0] if reason else what
        self._off = reason if len(reason) <= 200 else reason[:197] + "..."
        if what == "no workers":
            self.warn(f"remote execution at {self.url}: {self._off}; the remaining actions run locally")
        else:
            self.warn(f"remote execution at {self.url} unavailable ({self._off}); building locally")


def _stream_digest(result: Message, name: str, fn: DigestFunction) -> RemoteDigest | None:
    """The digest of the result's stdout or stderr to download; None when it is inline (or empty)."""
    if getattr(result, f"{name}_raw") or not result.HasField(f"{name}_digest"):
        return None
    d = getattr(result, f"{name}_digest")
    return RemoteDigest.from_wire(d, fn) if d.size_bytes else None


def _opener(path: str) -> BlobSource:
    size = os.path.getsize(path)
    if size <= (1 << 20):
        with open(path, "rb") as f:
            return f.read()
    return lambda: open(path, "rb")


