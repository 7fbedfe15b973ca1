"""`RemoteCache`: what one build asks of a remote cache, and what happens when it fails.

The engine calls two things: `lookup` on a local miss (worker threads) and `upload` after a
successful local run (queued to background threads, so a build never waits on the network
between actions; `close` waits for the queue). Everything else is the policy of this module:

- *Lazy*: the channel (`endpoint.py`, shared with remote execution) opens and
  `GetCapabilities` is read at the first lookup or upload, so a build with nothing to do
  never touches the network.
- *Degrade, do not fail*: the first transport error (server down, timeout, refused request)
  turns the endpoint off for the rest of the build, with its one warning; the build goes on
  locally. A cache must never fail a build that could simply run the action.
- *Verify*: a blob whose bytes do not match its digest is rejected with a warning and the
  action runs locally (`RemoteStore.fetch`).
- *Trust only what a trusted key signed* (with `trusted-keys`): a result that is unsigned, signed
  by another key, or altered after signing is a miss (`trust.SignaturePolicy`); with `sign-key`,
  every uploaded result is signed (`signing.py`).
- *Publish only what was built from what was keyed*: inputs are re-hashed for the remote key
  from the blob the local store holds under the digest the local key used; when a file no
  longer matches that digest (edited during the build) nothing is uploaded.

A remote hit comes back as a local `ActionEntry` whose blobs are already in the local store, so
the engine writes it to its local action cache and the next build is a local hit. The entry
keeps its origin (server, signing key), so it never passes for a result built here.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping

from google.protobuf.message import DecodeError

from ..action import Action, Platform
from ..action_cache import ActionEntry
from ..blobstore import BlobStore, StoreError
from ..digest import Digest, digest_bytes
from ..home import Home

from . import protocol as pb
from . import tree_codec
from .action_cache import RemoteActionCache
from .actions import action_result, remote_action, result_local_digests, result_outputs
from .client import BlobMissing, RemoteError, ServerInfo
from .digests import BLAKE3, BadDigest, RemoteDigest
from .endpoint import REFUSED, RemoteEndpoint, reason
from .memo import Memo
from .side_index import SideIndex
from .signing import sign
from .store import RemoteCorrupt, RemoteStore
from .trust import REMOTE_CACHE, Origin, SignaturePolicy

if TYPE_CHECKING:
    # protobuf ships no types, and the REAPI classes are built at run time (protocol.py): to
    # the type checker a message is `Any`; the name says which kind of value it is.
    from google.protobuf.message import Message

SIDE_INDEX = os.path.join("remote", "sha256.idx")
# blake3 -> SHA-256 of outputs left on the server (`--remote-download toplevel|minimal`), as the
# result that named them claimed (signed, with trusted keys); used only to ask for the bytes,
# which are then verified against both digests (`fetch`).
CLAIMS = os.path.join("remote", "claimed.idx")
_UPLOAD_WORKERS = 2


@dataclass(frozen=True, slots=True)
class RemoteHit:
    entry: ActionEntry  # local digests, blobs already in the local store (`inputs` left empty)
    discovered: tuple[str, ...]  # the header set whose key hit


@dataclass
class RemoteCounters:
    hits: int = 0
    misses: int = 0
    uploaded: int = 0
    republished: int = 0  # of `uploaded`: local hits the remote lacked (`republish`)
    rejected: int = 0  # remote results refused because a blob was corrupt
    refused: int = 0  # remote results refused because no trusted key signed them
    kept: int = 0  # outputs of hits left on the server (`--remote-download toplevel|minimal`)
    fetched: int = 0  # of those, fetched later because a local action or the command needed them


class _InputChanged(Exception):
    """An input's bytes no longer match the digest its local key was computed from."""


class RemoteCache:
    def __init__(self, endpoint: RemoteEndpoint, home: Home, local: BlobStore,
                 content_of: Callable[[str], bytes], warn: Callable[[str], None],
                 note: Callable[[str], None] | None = None) -> None:
        """`endpoint` is the build's connection to the server (shared with remote execution);
        `content_of(path)` answers an execroot-relative input's bytes (generated files too);
        `warn(text)` shows a warning (a corrupt result, uploads refused); `note(text)` a remark
        (that remote results are not verified, once per build)."""
        self.endpoint = endpoint
        self.settings = endpoint.settings
        self.local = local
        self.content_of = content_of
        self.warn = warn
        self.index = SideIndex(home.root / SIDE_INDEX)
        self.claims = SideIndex(home.root / CLAIMS)
        self.counters = RemoteCounters()
        self.upload_enabled = self.settings.upload
        self.trust = SignaturePolicy(self.settings.url, self.settings.trusted_keys, warn, note)
        self._lock = threading.Lock()
        self._store: RemoteStore | None = None
        self._ac: RemoteActionCache | None = None
        self._memo: Memo[RemoteDigest] = Memo()  # discovered input path -> digest, this build
        self._pool: ThreadPoolExecutor | None = None
        self._pending: list[Future[None]] = []

    @property
    def url(self) -> str:
        return self.settings.url

    @property
    def info(self) -> ServerInfo | None:
        return self.endpoint.info

    @property
    def disabled(self) -> str | None:
        """Why the remote was turned off for this build, or None."""
        return self.endpoint.disabled

    # --- lookup (worker threads) ----------------------------------------------------------

    def lookup(self, action: Action, platform: Platform, tools: Mapping[str, Digest],
               inputs: Mapping[str, Digest], keep: Callable[[str], bool] | None = None) -> RemoteHit | None:
        """The remote result of `action`, fetched, verified and stored locally; None on a miss.

        `inputs` maps each of `action.inputs` to the blake3 digest the local key used; `tools`
        each tool to its digest. An output file for which `keep(path)` holds stays on the
        server when the result says its blake3 (local_digests.py): the entry names it, the
        local store lacks it until `fetch` brings it.
        """
        if not self._ready():
            return None
        store, ac = self._store, self._ac
        assert store is not None and ac is not None
        try:
            try:
                declared = {p: self._input_digest(p, d) for p, d in inputs.items()}
                first = remote_action(action, platform, tools, declared, store.fn)
            except (_InputChanged, OSError, StoreError, ValueError):
                return self._miss()
            sets = ac.get_manifest(first) if action.depfile else [()]
            for headers in sets:
                candidate = first
                if headers:
                    try:
                        extra = {p: self._discovered_digest(p) for p in headers if p not in declared}
                        candidate = remote_action(action, platform, tools, {**declared, **extra}, store.fn)
                    except (OSError, ValueError):
                        continue  # a header of that set is gone here: this set cannot match
                result = ac.get(candidate)
                if result is None or result.exit_code != 0:
                    continue
                origin = self.trust.accept(action.id, candidate.digest, result)
                if origin is None:
                    with self._lock:
                        self.counters.refused += 1
                    continue
                hit = self._fetch(action, result, headers, origin, keep)
                if hit is not None:
                    with self._lock:
                        self.counters.hits += 1
                    return hit
            return self._miss()
        except RemoteCorrupt as e:
            with self._lock:
                self.counters.rejected += 1
            self.warn(f"remote cache at {self.url} sent a corrupt blob for `{action.id}` ({e.reason}); "
                      "the action runs locally")
            return None
        except BadDigest as e:  # a result naming a blob by something that is not a digest
            with self._lock:
                self.counters.rejected += 1
            self.warn(f"remote cache at {self.url} sent a malformed result for `{action.id}` ({e}); "
                      "the action runs locally")
            return None
        except BlobMissing:
            return self._miss()  # the result names a blob the server evicted
        except RemoteError as e:
            self._disable(e)
            return None

    def _fetch(self, action: Action, result: Message, headers: tuple[str, ...], origin: Origin,
               keep: Callable[[str], bool] | None) -> RemoteHit | None:
        store = self._store
        assert store is not None
        outputs = result_outputs(action, result, store.fn)
        if outputs is None:
            return None
        kept: dict[str, Digest] = {}  # output path -> its blake3, left on the server
        if keep is not None:
            claims = result_local_digests(action, result) if store.fn is not BLAKE3 else \
                {p: Digest(d.hash, d.size) for p, (d, _) in outputs.items() if not p.endswith("/")}
            for p, ld in claims.items():
                rd = outputs[p][0]
                if keep(p) and ld.size == rd.size:
                    kept[p] = ld
                    if store.fn is not BLAKE3:
                        self.claims.add(ld, rd)
        wanted = [d for p, (d, _) in outputs.items() if p not in kept]
        streams: dict[str, Digest | RemoteDigest] = {}  # remote ones until fetched
        for name in ("stdout", "stderr"):
            raw, digest = getattr(result, f"{name}_raw"), getattr(result, f"{name}_digest")
            d = RemoteDigest.from_wire(digest, store.fn) if result.HasField(f"{name}_digest") else None
            if raw:
                if d is not None and store.fn.mismatch(d, raw):
                    raise RemoteCorrupt(d, f"inlined {name} does not match its digest")
                streams[name] = self.local.put(raw)
            elif d is not None and d.size:
                wanted.append(d)
                streams[name] = d
        local = store.fetch(wanted)
        for p, (d, _x) in outputs.items():
            if p.endswith("/"):  # the fetched Tree names remote digests: fetch its files, recode it
                try:
                    local[d] = self._local_tree(local[d])
                except (ValueError, DecodeError):  # not a well-formed tree: a miss, run it here
                    return None
        fetched: dict[str, Digest] = {}
        for name, value in streams.items():
            fetched[name] = local[value] if isinstance(value, RemoteDigest) else value
        entry = ActionEntry(
            outputs={p: (kept.get(p) or local[d], 0o555 if executable else 0o444) for p, (d, executable) in outputs.items()},
            exit_code=0, stdout=fetched.get("stdout"), stderr=fetched.get("stderr"), origin=origin)
        if kept:
            with self._lock:
                self.counters.kept += len(kept)
        return RemoteHit(entry, headers)

    # --- outputs left on the server (--remote-download toplevel|minimal) -------------------

    def can_fetch(self, d: Digest) -> bool:
        """Whether `fetch` knows the server's name for the local blob `d` (no network, except
        to learn the server's digest function)."""
        if self.claims.get(d) is not None or self.index.get(d) is not None:
            return True
        return self._ready() and self._store is not None and self._store.fn is BLAKE3

    def fetch(self, ds: list[Digest]) -> bool:
        """Bring the blobs `ds` (local digests of outputs left on the server) into the local
        store, each verified against the server's digest *and* its blake3; False when one cannot
        be had (not known, evicted, corrupt, the remote off): the caller rebuilds instead."""
        if not self._ready():
            return False
        store = self._store
        assert store is not None
        named = {}
        for d in ds:
            rd = store.known(d) or self.claims.get(d)
            if rd is None:
                return False
            named[rd] = d
        try:
            got = store.fetch(list(named))
        except RemoteCorrupt as e:
            self.warn(f"remote cache at {self.url} sent a corrupt blob ({e.reason}); the action that made it runs locally")
            return False
        except BlobMissing:
            return False  # evicted: rebuilt here
        except RemoteError as e:
            self._disable(e)
            return False
        for rd, d in named.items():
            if got.get(rd) != d:  # the SHA-256 matched, the blake3 the result claimed does not
                with self._lock:
                    self.counters.rejected += 1
                self.warn(f"remote cache at {self.url} sent blob {rd} whose blake3 is not the one its result "
                          "claimed; the action that made it runs locally")
                return False
        with self._lock:
            self.counters.fetched += len(ds)
        return True

    def _miss(self) -> RemoteHit | None:
        """`lookup`'s answer for a miss: None, counted."""
        with self._lock:
            self.counters.misses += 1
        return None

    # --- upload (background threads) ------------------------------------------------------

    def upload(self, action: Action, platform: Platform, tools: Mapping[str, Digest],
               inputs: Mapping[str, Digest], discovered: tuple[str, ...], entry: ActionEntry) -> None:
        """Queue the upload of a successful local run: its blobs first, then its result, then its
        header set. `inputs` covers `action.inputs` and `discovered`, with the local key's digests."""
        self._queue(action, platform, tools, inputs, discovered, entry, False)

    def republish(self, action: Action, platform: Platform, tools: Mapping[str, Digest],
                  inputs: Mapping[str, Digest], discovered: tuple[str, ...], entry: ActionEntry) -> None:
        """Queue the upload of a local cache hit built on this machine, if the remote lacks it:
        a server that lost its action cache (BuildGrid keeps it in memory) is filled again by
        the next uploading build instead of never. The check is one `GetActionResult`, on an
        upload thread; a result that came from a remote is never republished (it would travel
        under this machine's signature)."""
        if entry.origin is not None and entry.origin.get("kind") == REMOTE_CACHE:
            return
        self._queue(action, platform, tools, inputs, discovered, entry, True)

    def _queue(self, action: Action, platform: Platform, tools: Mapping[str, Digest],
               inputs: Mapping[str, Digest], discovered: tuple[str, ...], entry: ActionEntry,
               if_missing: bool) -> None:
        if not self.upload_enabled or self.endpoint.disabled:
            return
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max(_UPLOAD_WORKERS, self.settings.jobs // 2),
                                                thread_name_prefix="mcpp-remote-upload")
            self._pending.append(self._pool.submit(
                self._upload, action, platform, dict(tools), dict(inputs), discovered, entry, if_missing))

    def _upload(self, action: Action, platform: Platform, tools: dict[str, Digest],
                inputs: dict[str, Digest], discovered: tuple[str, ...], entry: ActionEntry,
                if_missing: bool = False) -> None:
        if not self._ready() or not self.upload_enabled:
            return
        store, ac = self._store, self._ac
        assert store is not None and ac is not None
        try:
            try:
                names = {p: self._input_digest(p, d) for p, d in inputs.items()}
                first = remote_action(action, platform, tools, {p: names[p] for p in action.inputs}, store.fn)
                full = remote_action(action, platform, tools, names, store.fn) if discovered else first
                blobs = entry.blobs()
                outputs = {}
                for p, (d, mode) in entry.outputs.items():
                    if p.endswith("/"):
                        d, files = self._remote_tree(d)
                        blobs |= files | {d}
                    outputs[p] = (store.remote_digest(d), bool(mode & 0o111))
                stdout = store.remote_digest(entry.stdout) if entry.stdout else None
                stderr = store.remote_digest(entry.stderr) if entry.stderr else None
            except (_InputChanged, OSError, StoreError, ValueError):
                return  # an input changed or a blob vanished: publish nothing rather than a guess
            if if_missing and ac.get(full) is not None:
                return  # the remote has a result for this key: nothing to republish
            local = {p: d for p, (d, _mode) in entry.outputs.items() if not p.endswith("/")}
            result = action_result(action, outputs, stdout, stderr, local if store.fn is not BLAKE3 else None)
            if self.settings.sign_key is not None:
                sign(result, full.digest, self.settings.sign_key)
            ac.record(full, result, blobs,
                      headers=(first, discovered) if action.depfile else None)
            with self._lock:
                self.counters.uploaded += 1
                self.counters.republished += if_missing
        except StoreError:
            return
        except RemoteError as e:
            if e.code in REFUSED:
                self._refuse_uploads(e)  # a read-only credential: keep reading, stop writing
            else:
                self._disable(e)

    def _refuse_uploads(self, e: RemoteError) -> None:
        with self._lock:
            if not self.upload_enabled:
                return
            self.upload_enabled = False
        self.warn(f"remote cache at {self.url} refused an upload ({reason(e)}); "
                  "this build uploads nothing more (are its credentials read-only?)")

    def summary(self) -> dict[str, object]:
        """What the remote did for this build, for the `build-finished` event and the `Remote`
        line: results taken, missed and uploaded, blob bytes moved, retries, results refused
        (by reason, with the key names their signatures claimed), and why it was turned off."""
        c, wire = self.counters, self.endpoint.wire
        return {"url": self.url, "hits": c.hits, "misses": c.misses, "uploads": c.uploaded,
                "republished": c.republished,
                "bytes_down": wire.bytes_down if wire else 0, "bytes_up": wire.bytes_up if wire else 0,
                "retries": self.endpoint.retries, "retried_codes": self.endpoint.retried_codes, "corrupt": c.rejected,
                "download": self.settings.download, "kept_remote": c.kept, "fetched_later": c.fetched,
                "refused": {"count": sum(self.trust.refused.values()), "reasons": dict(self.trust.refused),
                            "keys": sorted(self.trust.refused_keys)},
                "disabled": self.disabled}

    def close(self, wait: bool = True) -> None:
        """Finish (or, with `wait=False`, abandon) queued uploads; save the side index."""
        with self._lock:
            pool, pending = self._pool, list(self._pending)
            self._pool = None
        if pool is not None:
            if wait:
                for f in pending:
                    f.exception()  # errors were handled inside; this only waits
            pool.shutdown(wait=wait, cancel_futures=not wait)
        self.index.flush()
        self.claims.flush()

    # --- tree outputs (cas/tree.py) ----------------------------------------------------------

    def _remote_tree(self, d: Digest) -> tuple[Digest, set[Digest]]:
        """The local tree `d` re-encoded with the server's digests, put in the local store (so it
        uploads like any blob); returns its local digest and the file blobs it names."""
        store = self._store
        assert store is not None
        local = pb.Tree()
        local.ParseFromString(self.local.get(d))
        files = {Digest(h, size) for h, size in tree_codec.file_digests(local)}
        by_local = {(f.hash, f.size): store.remote_digest(f) for f in files}

        def remote_file(h: str, size: int) -> tuple[str, int]:
            rd = by_local[(h, size)]
            return rd.hash, rd.size

        remote = tree_codec.recode(local, _local_dir, remote_file, self._remote_dir)
        return self.local.put(tree_codec.encode(remote)), files

    def _remote_dir(self, data: bytes) -> tuple[str, int]:
        """A `Directory` message's digest in the server's function."""
        assert self._store is not None, "used while fetching, once connected"
        rd = self._store.fn.of_bytes(data)
        return rd.hash, rd.size

    def _local_tree(self, fetched: Digest) -> Digest:
        """A Tree fetched from the server (stored locally as `fetched`): fetch the files it names
        and store it re-encoded with local digests; returns the local tree's digest."""
        store = self._store
        assert store is not None
        remote = pb.Tree()
        remote.ParseFromString(self.local.get(fetched))
        # the server's names for the files: raises BadDigest (a ValueError: a miss) on a bad one
        named = {(h, size): RemoteDigest.from_wire(pb.Digest(hash=h, size_bytes=size), store.fn)
                 for h, size in tree_codec.file_digests(remote)}
        local = store.fetch(named.values())

        def local_file(h: str, size: int) -> tuple[str, int]:
            ld = local[named[(h, size)]]
            return ld.hash, ld.size

        return self.local.put(tree_codec.encode(tree_codec.recode(remote, self._remote_dir, local_file, _local_dir)))

    # --- digests of inputs ----------------------------------------------------------------

    def _input_digest(self, path: str, d: Digest) -> RemoteDigest:
        """The remote digest of an input whose local digest is `d`, reading bytes only when the
        side index (or, for an output left on the server, the result that named it) does not
        know it: from the local store if it has the blob, else the file."""
        store = self._store
        assert store is not None
        rd = store.known(d) or self.claims.get(d)  # claims: an output left on the server
        if rd is not None:
            return rd
        if self.local.has(d):
            try:
                return store.remote_digest(d)
            except StoreError:
                pass
        data = self.content_of(path)
        if digest_bytes(data) != d:
            raise _InputChanged(path)
        return store.of_bytes(data, d)

    def _discovered_digest(self, path: str) -> RemoteDigest:
        """A discovered input's remote digest (its local digest is not at hand in a worker)."""
        def digest() -> RemoteDigest:
            assert self._store is not None
            return self._store.of_bytes(self.content_of(path))

        return self._memo.get(path, digest)

    # --- connection -----------------------------------------------------------------------

    def _ready(self) -> bool:
        """Connected (the endpoint's client, and this cache's store over it), or off."""
        client = self.endpoint.client()
        if client is None:
            return False
        with self._lock:
            if self._store is not None:
                return True
            info = self.endpoint.info
            self._store = RemoteStore(client, self.local, self.index)
            self._ac = RemoteActionCache(client, self._store, self.settings.sign_key, self.trust)
            if self.upload_enabled and info is not None and not info.update_enabled:
                self.upload_enabled = False
                self.warn(f"remote cache at {self.url} does not accept action results "
                          "(its capabilities say update_enabled = false); nothing is uploaded")
            return True

    def _disable(self, e: RemoteError) -> None:
        self.endpoint.down(e, "remote cache")


def _local_dir(data: bytes) -> tuple[str, int]:
    """A `Directory` message's digest in the local store's function (blake3)."""
    ld = digest_bytes(data)
    return ld.hash, ld.size
