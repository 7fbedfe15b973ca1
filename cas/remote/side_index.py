"""The side index: blake3 (local name) -> SHA-256 (remote name) of the same bytes.

Why: the local store names blobs by blake3, and a server without BLAKE3 (BuildGrid) names them by
SHA-256. Computing a remote action key needs the SHA-256 of every input, and uploading an output
needs its SHA-256 before `FindMissingBlobs`; re-reading and re-hashing each file on every build
would cost as much as the build's own hashing. So each pair is computed once (when a file is
hashed, a blob is fetched or an output is uploaded) and remembered in
`$MCPP_HOME/remote/sha256.idx`.

Format: one line per pair, `<blake3 hex>/<size> <sha256 hex>\\n` (the size is the same for both:
the same bytes). Lines are appended with `O_APPEND` in one `write` per batch, so concurrent
builds interleave whole batches, never bytes of one line with another's. A line torn by a crash
(or one whose hex is damaged) is skipped when read: the index is a cache, and a missing pair only
costs re-hashing. A pair is recorded only from bytes that were hashed both ways, so the index
never has to be trusted beyond what it saves.

When the file holds many more lines than distinct pairs (concurrent builds appending the same
pairs), loading rewrites it compactly (temp file + rename); an append that races with the
rewrite may be lost, which again only costs re-hashing.
"""
from __future__ import annotations

import os
import threading

from ..atomic import write_atomic
from ..digest import Digest
from .digests import RemoteDigest

_HEX = frozenset("0123456789abcdef")
_FLUSH_AT = 64 << 10  # buffered bytes before an append
_COMPACT_MIN = 10_000  # lines; below this a rewrite is not worth it


class SideIndex:
    """Thread-safe blake3 -> SHA-256 map backed by an append-only file (loaded on first use)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._map: dict[Digest, RemoteDigest] | None = None
        self._pending: list[str] = []
        self._pending_bytes = 0

    def get(self, local: Digest) -> RemoteDigest | None:
        with self._lock:
            return self._loaded().get(local)

    def add(self, local: Digest, remote: RemoteDigest) -> None:
        if local.size != remote.size:
            raise ValueError(f"sizes differ: {local} vs {remote}")
        with self._lock:
            m = self._loaded()
            if m.get(local) == remote:
                return
            m[local] = remote
            line = f"{local.hash}/{local.size} {remote.hash}\n"
            self._pending.append(line)
            self._pending_bytes += len(line)
            if self._pending_bytes >= _FLUSH_AT:
                self._flush_locked()

    def flush(self) -> None:
        """Append what was added since the last flush (call at the end of a build)."""
        with self._lock:
            self._flush_locked()

    def __len__(self) -> int:
        with self._lock:
            return len(self._loaded())

    # --- internals ------------------------------------------------------------------------

    def _loaded(self) -> dict[Digest, RemoteDigest]:
        if self._map is None:
            self._map, lines = _read(self.path)
            if lines >= _COMPACT_MIN and lines > 2 * len(self._map):
                self._rewrite()
        return self._map

    def _flush_locked(self) -> None:
        if not self._pending:
            return
        data = "".join(self._pending).encode()
        self._pending.clear()
        self._pending_bytes = 0
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        except OSError:
            pass  # a read-only or full home: the pairs stay in memory for this build

    def _rewrite(self) -> None:
        assert self._map is not None
        try:
            write_atomic(self.path, "".join(f"{l.hash}/{l.size} {r.hash}\n" for l, r in self._map.items()))
        except OSError:
            pass  # a read-only home: the file stays as it was, which only costs a longer load


def _read(path: str) -> tuple[dict[Digest, RemoteDigest], int]:
    out: dict[Digest, RemoteDigest] = {}
    try:
        with open(path, "rb") as f:
            data = f.read()
    except (FileNotFoundError, NotADirectoryError):
        return out, 0
    lines = data.split(b"\n")
    for raw in lines:
        parsed = _parse(raw)
        if parsed is not None:
            out[parsed[0]] = parsed[1]
    return out, len(lines)


def _parse(raw: bytes) -> tuple[Digest, RemoteDigest] | None:
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        return None
    left, sep, right = text.partition(" ")
    h, slash, size = left.partition("/")
    if not sep or not slash or not size.isdigit() or len(h) != 64 or len(right) != 64:
        return None
    if not _HEX.issuperset(h) or not _HEX.issuperset(right):
        return None
    n = int(size)
    return Digest(h, n), RemoteDigest(right, n)
