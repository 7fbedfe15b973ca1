"""`VerifyingStore`: re-hash every blob read from the layer below, and heal on mismatch.

Disks, interrupted copies and power cuts do corrupt caches, and a build that links a corrupt
object is worse than a slow build. So reads are checked against the digest that names them, and
a blob that fails (wrong hash, wrong size, or undecodable) is deleted from the inner store before
`CorruptBlob` is raised: the caller treats it as a miss and re-runs the action that produced it,
and the next build finds a good blob. `healed` lists what was removed so the engine can report it.

This is a decorator (Buildbarn style) rather than a flag on `LocalZstdStore`: a remote or tiered
store gets the same guarantee by being wrapped, and tests can observe a store with and without
verification.

Writes are not re-checked: `put` hashes the bytes it is given, so the digest is right by
construction.
"""
from __future__ import annotations

import io
import threading
from typing import TYPE_CHECKING, Iterable

import blake3

from .blobstore import BlobStore, CorruptBlob, SupportsDelete
from .digest import Digest

if TYPE_CHECKING:
    from typing_extensions import Buffer


class VerifyingStore:
    """A `BlobStore` wrapping `inner`; every `get`/`open` answers only bytes matching the digest."""

    def __init__(self, inner: BlobStore) -> None:
        self.inner = inner
        self._lock = threading.Lock()
        self._healed: list[Digest] = []

    @property
    def healed(self) -> list[Digest]:
        """Corrupt blobs seen (and removed from the inner store) by this instance, in order."""
        with self._lock:
            return list(self._healed)

    @property
    def corrupt_count(self) -> int:
        with self._lock:
            return len(self._healed)

    def has(self, d: Digest) -> bool:
        return self.inner.has(d)

    def find_missing(self, ds: Iterable[Digest]) -> list[Digest]:
        return self.inner.find_missing(ds)

    def put(self, data: bytes) -> Digest:
        return self.inner.put(data)

    def put_file(self, path: str) -> Digest:
        return self.inner.put_file(path)

    def put_digested(self, d: Digest, data: Buffer) -> Digest:
        """Store bytes the caller hashed itself (see `LocalZstdStore.put_digested`); a layer
        below without that shortcut hashes them again."""
        inner = getattr(self.inner, "put_digested", None)
        return inner(d, data) if inner is not None else self.inner.put(bytes(data))

    def delete(self, d: Digest) -> bool:
        return isinstance(self.inner, SupportsDelete) and self.inner.delete(d)

    def get(self, d: Digest) -> bytes:
        try:
            data = self.inner.get(d)
        except CorruptBlob as e:
            raise self._heal(d, e.reason) from None
        reason = mismatch(d, data)
        if reason:
            raise self._heal(d, reason)
        return data

    def open(self, d: Digest) -> io.BufferedIOBase:
        return io.BufferedReader(_VerifyingReader(self, d, self.inner.open(d)))

    def _heal(self, d: Digest, reason: str) -> CorruptBlob:
        """Remove the bad blob, remember it, and return the error to raise."""
        if isinstance(self.inner, SupportsDelete):
            self.inner.delete(d)
        with self._lock:
            self._healed.append(d)
        return CorruptBlob(d, reason)


def mismatch(d: Digest, data: bytes) -> str | None:
    """Why `data` is not the blob named `d`, or None when it is."""
    if len(data) != d.size:
        return f"{len(data)} bytes, expected {d.size}"
    actual = blake3.blake3(data).hexdigest()
    if actual != d.hash:
        return f"content hashes to {actual[:12]}"
    return None


class _VerifyingReader(io.RawIOBase):
    """Hashes bytes as they stream past; at end of stream, raises `CorruptBlob` on mismatch.

    A reader that stops before the end gets no verdict; materialization always reads to the end.
    """

    def __init__(self, store: VerifyingStore, d: Digest, inner: io.BufferedIOBase) -> None:
        self._store = store
        self._digest = d
        self._inner = inner
        self._hasher = blake3.blake3()
        self._seen = 0
        self._checked = False
        self._error: CorruptBlob | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, b: Buffer) -> int:
        if self._error is not None:
            raise self._error  # once corrupt, always corrupt: no later read may look clean
        try:
            n = self._inner.readinto(b)
        except CorruptBlob as e:
            raise self._fail(e.reason) from None
        if n:
            self._seen += n
            if self._seen > self._digest.size:
                raise self._fail(f"more than {self._digest.size} bytes")
            self._hasher.update(memoryview(b)[:n])
            return n
        if not self._checked:
            self._checked = True
            if self._seen != self._digest.size:
                raise self._fail(f"{self._seen} bytes, expected {self._digest.size}")
            actual = self._hasher.hexdigest()
            if actual != self._digest.hash:
                raise self._fail(f"content hashes to {actual[:12]}")
        return 0

    def _fail(self, reason: str) -> CorruptBlob:
        self._error = self._store._heal(self._digest, reason)
        return self._error

    def close(self) -> None:
        if not self.closed:
            self._inner.close()
        super().close()
