"""The `BlobStore` protocol: the one interface every content-addressed store implements.

Stores are layered, not configured (Buildbarn's `pkg/blobstore`): `LocalZstdStore` keeps bytes on
disk, `VerifyingStore` re-hashes what the layer below returns, and a remote (REAPI) store or a
tiered store can wrap either. Every layer speaks these six methods, so a caller never knows how
many layers it talks to, and a feature (verification, metrics, remote fallback) is one decorator
in one file instead of a flag in every store.

Blobs are named by `Digest` (blake3 of the *uncompressed* bytes + size). A store may compress
what it keeps; `get` and `open` always answer the uncompressed bytes.
"""
from __future__ import annotations

import io
from typing import Iterable, Protocol, runtime_checkable

from .digest import Digest


class StoreError(Exception):
    """Base of the errors a blob store raises about its contents (not about the caller's files)."""


class BlobNotFound(StoreError, LookupError):
    """The store has no blob with this digest: the caller should treat it as a cache miss."""

    def __init__(self, digest: Digest) -> None:
        super().__init__(f"blob {digest} not found")
        self.digest = digest


class CorruptBlob(StoreError):
    """A stored blob does not decode to bytes with its digest.

    Raised by the layer that noticed (a decode error in the local store, a hash mismatch in
    `VerifyingStore`). By the time a caller sees it from a `VerifyingStore` the bad blob has been
    removed, so re-running the action that produced it heals the store.
    """

    def __init__(self, digest: Digest, reason: str) -> None:
        super().__init__(f"corrupt blob {digest}: {reason}")
        self.digest = digest
        self.reason = reason


@runtime_checkable
class BlobStore(Protocol):
    """A content-addressed store of immutable blobs."""

    def has(self, d: Digest) -> bool:
        """True when `get(d)` would find the blob (it may still turn out corrupt)."""
        ...

    def get(self, d: Digest) -> bytes:
        """The uncompressed bytes; raises `BlobNotFound` or `CorruptBlob`."""
        ...

    def put(self, data: bytes) -> Digest:
        """Store `data` (idempotent) and answer its digest."""
        ...

    def put_file(self, path: str) -> Digest:
        """Store a regular file's bytes without reading a large file whole into memory."""
        ...

    def open(self, d: Digest) -> io.BufferedIOBase:
        """A readable stream of the uncompressed bytes, for blobs too large to hold in memory.

        Raises `BlobNotFound` at once; a decode error or (through `VerifyingStore`) a hash
        mismatch surfaces as `CorruptBlob` from `read`, at the latest when the end is reached.
        """
        ...

    def find_missing(self, ds: Iterable[Digest]) -> list[Digest]:
        """The digests of `ds` this store lacks, each once, in their first order."""
        ...


@runtime_checkable
class SupportsDelete(Protocol):
    """A store that can drop a blob (a local store can; a shared remote usually cannot).

    Kept out of `BlobStore` because deletion is a maintenance operation, not part of reading and
    writing; `VerifyingStore` uses it to remove a blob it has proved corrupt.
    """

    def delete(self, d: Digest) -> bool:
        """Remove the blob; True when something was removed."""
        ...
