"""Remote digests and digest functions: naming bytes the way the server does.

The local store names every blob by blake3 (`cas.digest.Digest`). A REAPI server names blobs by
the digest function it and the client agree on: BLAKE3 where the server's capabilities offer it
(then a remote digest has the same hex as the local one), SHA-256 otherwise (BuildGrid offers
only SHA-256). `RemoteDigest` is a separate type from `Digest` on purpose: a blake3 hash sent
where the server expects SHA-256 is a silent miss at best, so the two never mix without an
explicit translation (`side_index.SideIndex`).

Resource names (ByteStream) carry the digest function as a path segment only where its hash
length does not identify it: `blobs/blake3/<hash>/<size>` but `blobs/<hash>/<size>` for SHA-256,
which is what servers that predate the segment (BuildGrid 0.4) parse.
"""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Protocol

import blake3

from . import protocol as pb

if TYPE_CHECKING:
    # protobuf ships no types, and the REAPI classes are built at run time (protocol.py): to
    # the type checker a message is `Any`; the name says which kind of value it is.
    from google.protobuf.message import Message

_CHUNK = 1 << 20


# Hex digits of a hash of every supported function (SHA-256, BLAKE3): `DigestFunction.hex_len`.
_HASH_LEN = 64
_HASH = re.compile(f"[0-9a-f]{{{_HASH_LEN}}}")


class BadDigest(ValueError):
    """A digest from the wire that names no blob: not lowercase hex of its function's length, or
    a size that is not a non-negative integer. Nothing is looked up or opened under it."""


@dataclass(frozen=True, order=True, slots=True)
class RemoteDigest:
    """A blob's name in the server's digest space: lowercase hex hash + size in bytes.

    Every value is well formed (checked on construction): its hash is hex of a supported
    function's length and its size a non-negative integer, so a store may build a path from it
    (`worker_cas.WorkerCas.path`) and a resource name may carry it. A proto `Digest` becomes one
    only through `from_wire`, which also checks the length against the function in use."""

    hash: str
    size: int

    def __post_init__(self) -> None:
        if type(self.hash) is not str or not _HASH.fullmatch(self.hash):
            raise BadDigest(f"digest hash {_shown(self.hash)} is not {_HASH_LEN} lowercase hex digits")
        if type(self.size) is not int or self.size < 0:
            raise BadDigest(f"digest size {_shown(self.size)} is not a non-negative integer")

    def __str__(self) -> str:
        return f"{self.hash}/{self.size}"

    def to_proto(self) -> Message:
        return pb.Digest(hash=self.hash, size_bytes=self.size)

    @classmethod
    def from_wire(cls, d: Message, fn: "DigestFunction") -> "RemoteDigest":
        """The one way a received proto `Digest` (`hash`, `size_bytes`) becomes a value: raises
        `BadDigest` unless its hash is lowercase hex of `fn`'s length and its size >= 0."""
        if len(d.hash) != fn.hex_len:
            raise BadDigest(f"digest hash {_shown(d.hash)} is not a {fn.name} hash ({fn.hex_len} hex digits)")
        return cls(d.hash, d.size_bytes)


class Hasher(Protocol):
    """What `DigestFunction.new` makes: `hashlib.sha256()`, `blake3.blake3()`."""

    def update(self, data: bytes, /) -> object: ...

    def hexdigest(self) -> str: ...


@dataclass(frozen=True, slots=True)
class DigestFunction:
    """One REAPI digest function: its enum value, hasher and resource-name segment."""

    name: str  # "SHA256" | "BLAKE3", as in `DigestFunction.Value`
    new: Callable[[], Hasher]
    segment: str  # "" or "blake3/": inserted before <hash>/<size> in resource names
    hex_len: int = _HASH_LEN  # hex digits of a hash

    @property
    def value(self) -> int:
        return pb.DIGEST_FUNCTION[self.name]

    def of_bytes(self, data: bytes) -> RemoteDigest:
        h = self.new()
        h.update(data)
        return RemoteDigest(h.hexdigest(), len(data))

    def of_message(self, message: Message) -> tuple[RemoteDigest, bytes]:
        """The digest and the bytes of a protobuf message (its canonical serialization)."""
        data: bytes = message.SerializeToString(deterministic=True)
        return self.of_bytes(data), data

    def of_file(self, path: str | os.PathLike[str]) -> RemoteDigest:
        h = self.new()
        size = 0
        with open(path, "rb") as f:
            while chunk := f.read(_CHUNK):
                h.update(chunk)
                size += len(chunk)
        return RemoteDigest(h.hexdigest(), size)

    def mismatch(self, d: RemoteDigest, data: bytes) -> str | None:
        """Why `data` is not the blob `d` names, or None when it is."""
        if len(data) != d.size:
            return f"{len(data)} bytes, expected {d.size}"
        actual = self.of_bytes(data).hash
        return None if actual == d.hash else f"content hashes to {actual[:12]}, expected {d.hash[:12]}"

    def read_resource(self, instance: str, d: RemoteDigest) -> str:
        return _join(instance, f"blobs/{self.segment}{d.hash}/{d.size}")

    def write_resource(self, instance: str, upload_id: str, d: RemoteDigest) -> str:
        return _join(instance, f"uploads/{upload_id}/blobs/{self.segment}{d.hash}/{d.size}")

    def compressed_read_resource(self, instance: str, d: RemoteDigest) -> str:
        """REAPI's zstd-compressed form of `read_resource` (size: the uncompressed size)."""
        return _join(instance, f"compressed-blobs/zstd/{self.segment}{d.hash}/{d.size}")

    def compressed_write_resource(self, instance: str, upload_id: str, d: RemoteDigest) -> str:
        return _join(instance, f"uploads/{upload_id}/compressed-blobs/zstd/{self.segment}{d.hash}/{d.size}")


def _shown(value: object) -> str:
    """`value` for a message: what came from the wire, cut to a readable length."""
    text = repr(value)
    return text if len(text) <= 72 else text[:69] + "..."


def _join(instance: str, rest: str) -> str:
    return f"{instance}/{rest}" if instance else rest


SHA256 = DigestFunction("SHA256", hashlib.sha256, "")
BLAKE3 = DigestFunction("BLAKE3", blake3.blake3, "blake3/")

# In order of preference: BLAKE3 is what the local store already computes, so with it every
# remote digest is the local one and no side index or second hash is needed.
SUPPORTED = (BLAKE3, SHA256)


def choose(offered: list[int]) -> DigestFunction | None:
    """The digest function to use with a server whose `CacheCapabilities.digest_functions` is
    `offered`. An empty list means a server from before that field existed: SHA-256."""
    if not offered:
        return SHA256
    for fn in SUPPORTED:
        if fn.value in offered:
            return fn
    return None


def function_names(values: list[int]) -> list[str]:
    names = {v: k for k, v in pb.DIGEST_FUNCTION.items()}
    return [names.get(v, str(v)) for v in values]
