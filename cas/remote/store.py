"""`RemoteStore`: the server's CAS as one more `BlobStore` layer, tied to the local store.

Callers address blobs by their local (blake3) `Digest`, as with every other layer; this layer
translates to the server's digest space (identity under BLAKE3, the side index under SHA-256)
and moves bytes between the server and the local store it is composed with:

- `fetch(remote digests)`: download, **verify each blob against the digest that names it**,
  put it into the local store, remember the pair; a mismatch raises `RemoteCorrupt` and nothing
  of that blob is kept (the caller runs the action locally instead).
- `push(local digests)`: ask `FindMissingBlobs`, upload only what is missing, from the local store.

A server is shared and not ours to repair, so, unlike `VerifyingStore`, a corrupt remote blob is
reported, never deleted.
"""
from __future__ import annotations

import io
from typing import Iterable, Mapping

from ..blobstore import BlobNotFound, BlobStore, StoreError
from ..digest import Digest, digest_bytes
from .client import BlobMissing, BlobSource, RemoteClient
from .digests import BLAKE3, DigestFunction, RemoteDigest
from .side_index import SideIndex

_SMALL = 4 << 20  # local blobs up to this size are read whole for upload; larger ones stream


class RemoteCorrupt(StoreError):
    """The server sent bytes that do not match the digest they were asked for."""

    def __init__(self, d: RemoteDigest, reason: str) -> None:
        super().__init__(f"remote blob {d} is corrupt: {reason}")
        self.digest = d
        self.reason = reason


class RemoteStore:
    """A `BlobStore` over `client`'s CAS, addressed by local digests; `local` holds the bytes."""

    def __init__(self, client: RemoteClient, local: BlobStore, index: SideIndex | None) -> None:
        self.client = client
        self.local = local
        self.index = index  # unused when the server speaks BLAKE3

    @property
    def fn(self) -> DigestFunction:
        return self.client.digest_function

    # --- translation ----------------------------------------------------------------------

    def known(self, d: Digest) -> RemoteDigest | None:
        """The remote name of `d` if it is known without reading any bytes."""
        if self.fn is BLAKE3:
            return RemoteDigest(d.hash, d.size)
        return self.index.get(d) if self.index is not None else None

    def remember(self, d: Digest, rd: RemoteDigest) -> None:
        if self.fn is not BLAKE3 and self.index is not None:
            self.index.add(d, rd)

    def of_bytes(self, data: bytes, d: Digest | None = None) -> RemoteDigest:
        """The remote digest of `data` (whose local digest is `d`, computed when not given)."""
        if self.fn is BLAKE3:
            d = d or digest_bytes(data)
            return RemoteDigest(d.hash, d.size)
        rd = self.fn.of_bytes(data)
        self.remember(d or digest_bytes(data), rd)
        return rd

    def remote_digest(self, d: Digest) -> RemoteDigest:
        """The remote name of a blob the local store holds (hashing it once if needed)."""
        rd = self.known(d)
        if rd is not None:
            return rd
        h = self.fn.new()
        with self.local.open(d) as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        rd = RemoteDigest(h.hexdigest(), d.size)
        self.remember(d, rd)
        return rd

    # --- tiering --------------------------------------------------------------------------

    def fetch(self, digests: Iterable[RemoteDigest]) -> dict[RemoteDigest, Digest]:
        """Download, verify and store locally; answers each blob's local digest.

        Raises `RemoteCorrupt` on a mismatch, `BlobMissing`/`RemoteError` from the client.
        """
        out: dict[RemoteDigest, Digest] = {}
        wanted = list(dict.fromkeys(digests))
        for rd, data in self.client.download(wanted).items():
            reason = self.fn.mismatch(rd, data)
            if reason:
                raise RemoteCorrupt(rd, reason)
            d = self.local.put(data)
            self.remember(d, rd)
            out[rd] = d
        return out

    def push(self, digests: Iterable[Digest], extra: Mapping[RemoteDigest, bytes] | None = None) -> dict[Digest, RemoteDigest]:
        """Make sure the server holds every local blob of `digests` and every blob of `extra`
        (serialized messages that have no local copy); answers each local blob's remote name."""
        names = {d: self.remote_digest(d) for d in dict.fromkeys(digests)}
        local_of = {rd: d for d, rd in names.items()}
        extra = dict(extra or {})
        missing = self.client.find_missing(list(local_of) + list(extra))
        if missing:
            blobs: dict[RemoteDigest, BlobSource] = {}
            for rd in missing:
                if rd in extra:
                    blobs[rd] = extra[rd]
                elif rd in local_of:
                    blobs[rd] = self._source(local_of[rd])
            self.client.upload(blobs)
        return names

    def _source(self, d: Digest) -> BlobSource:
        if d.size <= _SMALL:
            return self.local.get(d)
        return lambda: self.local.open(d)

    # --- BlobStore ------------------------------------------------------------------------

    def has(self, d: Digest) -> bool:
        rd = self.known(d)
        return rd is not None and not self.client.find_missing([rd])

    def find_missing(self, ds: Iterable[Digest]) -> list[Digest]:
        ds = list(dict.fromkeys(ds))
        names = {d: self.known(d) for d in ds}
        missing = set(self.client.find_missing([rd for rd in names.values() if rd is not None]))
        return [d for d in ds if names[d] is None or names[d] in missing]

    def get(self, d: Digest) -> bytes:
        rd = self.known(d)
        if rd is None:
            raise BlobNotFound(d)
        try:
            data = self.client.download([rd])[rd]
        except BlobMissing:
            raise BlobNotFound(d) from None
        reason = self.fn.mismatch(rd, data)
        if reason:
            raise RemoteCorrupt(rd, reason)
        if self.fn is not BLAKE3 and digest_bytes(data) != d:
            raise RemoteCorrupt(rd, f"its blake3 is not {d.short} (the side index is wrong)")
        return data

    def open(self, d: Digest) -> io.BufferedIOBase:
        return io.BytesIO(self.get(d))

    def put(self, data: bytes) -> Digest:
        d = digest_bytes(data)
        rd = self.of_bytes(data, d)
        if self.client.find_missing([rd]):
            self.client.upload({rd: data})
        return d

    def put_file(self, path: str) -> Digest:
        with open(path, "rb") as f:
            return self.put(f.read())
