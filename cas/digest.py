"""Content digests: the one way this product names bytes.

A `Digest` is the blake3 of the *uncompressed* bytes plus their size. Keeping the size beside
the hash lets stores reject a truncated blob before hashing it and lets REAPI (which wants
`hash/size` pairs) reuse the value unchanged.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import blake3

# Files above this size are hashed in chunks so that memory stays flat.
_CHUNK = 1 << 20


@dataclass(frozen=True, order=True, slots=True)
class Digest:
    """A blob's name in the store: the blake3 of its content and its size."""
    hash: str  # lowercase hex blake3 of the uncompressed content
    size: int

    def __str__(self) -> str:
        return f"{self.hash}/{self.size}"

    @classmethod
    def parse(cls, text: str) -> "Digest":
        """Inverse of `str()`: `<hex>/<size>`."""
        h, _, size = text.partition("/")
        return cls(h, int(size))

    @property
    def short(self) -> str:
        return self.hash[:12]


def digest_bytes(data: bytes) -> Digest:
    return Digest(blake3.blake3(data).hexdigest(), len(data))


def digest_file(path: str | os.PathLike[str]) -> Digest:
    """Hash a file without reading it whole into memory."""
    hasher = blake3.blake3()
    size = 0
    with open(path, "rb") as f:
        while True:
            chunk = f.read(_CHUNK)
            if not chunk:
                break
            hasher.update(chunk)
            size += len(chunk)
    return Digest(hasher.hexdigest(), size)


EMPTY = digest_bytes(b"")
