"""`ActionCache`: action key -> what running the action produced.

An entry records each output's digest and mode, the exit code, the stdout/stderr blobs and, for
`mcpp explain`, the digest of every input that went into the key. Bytes live in the CAS; an entry
only names them, so it is small (compact JSON, one file per key at `<root>/<2hex>/<rest>`),
written atomically (`atomic.write_atomic`), and a malformed file (a torn write, a version from
the future, a bad disk) is a miss and is removed rather than an error: a cache must never fail a
build that could simply run the action.

Two-level lookup (ccache's "direct mode"): a compile action's key covers the headers it
includes, which are known only from the depfile of a previous run. So the engine keeps, under a
first-level key (the action without discovered inputs), a *manifest*: the distinct sets of
discovered paths seen before (`<rest>.m` beside the entries, the last `MANIFEST_SETS`, most
recent first). For each set it computes the full key from current digests and looks that up; a
hit proves every header the compile read is unchanged. Updates to a manifest are
read-modify-write without a lock: two concurrent builds may lose one set, which costs one
extra compile, never a wrong result.

Each read bumps the entry's mtime (once per process per key, and only when the last bump is an
hour old: `home.USE_MARK_S`) so `gc` evicts least-recently-used entries first.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Iterable, Iterator, NamedTuple

from .atomic import read_file_stat, write_atomic
from .digest import Digest
from .home import USE_MARK_S, is_hex_key, iter_sharded, shard, unlink_quietly

_VERSION = 1
MANIFEST_SUFFIX = ".m"
MANIFEST_SETS = 8


@dataclass(frozen=True, slots=True)
class ActionEntry:
    """An action cache entry: the outputs an action made and its exit status."""
    outputs: dict[str, tuple[Digest, int]]  # execroot-relative path -> (digest, st_mode bits)
    exit_code: int = 0
    stdout: Digest | None = None
    stderr: Digest | None = None
    created: float = field(default_factory=time.time)
    # Where the result came from when it was not built here, e.g. a remote cache and the key that
    # signed it (cas/remote/trust.py); None for a result built on this machine.
    origin: dict[str, str | None] | None = None

    def blobs(self) -> set[Digest]:
        """The blobs this entry needs: `gc` must keep all of them while the entry exists."""
        out = {d for d, _ in self.outputs.values()}
        out.update(d for d in (self.stdout, self.stderr) if d is not None)
        return out

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "v": _VERSION,
                "out": {p: [str(d), mode] for p, (d, mode) in sorted(self.outputs.items())},
                "exit": self.exit_code,
                "stdout": None if self.stdout is None else str(self.stdout),
                "stderr": None if self.stderr is None else str(self.stderr),
                # The keyed inputs are the build's explain log's (engine/exec/explain.py), not
                # the store's: a compile keys a hundred headers. Written empty: readers of
                # format 1 require the key.
                "in": {},
                "t": self.created,
                **({} if self.origin is None else {"o": self.origin}),
            },
            separators=(",", ":"),
        ).encode()

    @classmethod
    def from_json(cls, data: bytes) -> "ActionEntry":
        """Parse `to_json` output; any deviation raises `ValueError`."""
        try:
            obj = json.loads(data)
            if obj["v"] != _VERSION:
                raise ValueError(f"version {obj['v']!r}")
            outputs = {}
            for p, (d, mode) in obj["out"].items():
                if not isinstance(mode, int):
                    raise ValueError("mode")
                outputs[_str(p)] = (_digest(d), mode)
            exit_code = obj["exit"]
            created = obj["t"]
            origin = obj.get("o")
            if origin is not None and not (isinstance(origin, dict) and all(
                    isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in origin.items())):
                raise ValueError("origin")
            if not isinstance(exit_code, int) or not isinstance(created, (int, float)):
                raise ValueError("exit code or time")
            return cls(
                outputs=outputs,
                exit_code=exit_code,
                stdout=None if obj["stdout"] is None else _digest(obj["stdout"]),
                stderr=None if obj["stderr"] is None else _digest(obj["stderr"]),
                created=float(created),
                origin=origin,
            )
        except (KeyError, TypeError, AttributeError, UnicodeDecodeError) as e:
            raise ValueError(f"malformed action entry: {e!r}") from None
        except ValueError as e:
            raise ValueError(f"malformed action entry: {e}") from None


class AcFile(NamedTuple):
    """One file of the action cache as found on disk (for maintenance)."""

    key: str
    path: str
    size: int
    mtime: float
    manifest: bool


class ActionCache:
    """Action entries and depfile manifests under `root` (normally `$MCPP_HOME/ac`)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.fspath(root)
        self._touched: set[str] = set()

    def path_of(self, key: str, suffix: str = "") -> str:
        if not is_hex_key(key):
            raise ValueError(f"not an action key (64 lowercase hex digits): {key!r}")
        return shard(self.root, key, suffix)

    # --- entries --------------------------------------------------------------------------

    def get(self, key: str) -> ActionEntry | None:
        """The entry for `key`, or None on a miss (a malformed entry is removed and misses)."""
        path = self.path_of(key)
        read = self._read(path)
        if read is None:
            return None
        try:
            entry = ActionEntry.from_json(read[0])
        except ValueError:
            unlink_quietly(path)
            return None
        self._touch(path, read[1])
        return entry

    def put(self, key: str, entry: ActionEntry) -> None:
        path = self.path_of(key)
        write_atomic(path, entry.to_json())
        self._touched.add(path)

    def delete(self, key: str) -> bool:
        try:
            os.unlink(self.path_of(key))
            return True
        except FileNotFoundError:
            return False

    # --- manifests (two-level lookup) -----------------------------------------------------

    def get_manifest(self, key1: str) -> list[tuple[str, ...]]:
        """The discovered-input sets recorded under `key1`, most recent first; [] on a miss."""
        path = self.path_of(key1, MANIFEST_SUFFIX)
        read = self._read(path)
        if read is None:
            return []
        try:
            obj = json.loads(read[0])
            if obj["v"] != _VERSION:
                raise ValueError
            sets = [tuple(_str(p) for p in s) for s in obj["sets"]]
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            unlink_quietly(path)
            return []
        self._touch(path, read[1])
        return sets

    def add_manifest(self, key1: str, discovered_paths: Iterable[str]) -> None:
        """Record a discovered-input set under `key1` as the most recent (bounded, deduplicated)."""
        new = tuple(sorted(set(discovered_paths)))
        sets = [s for s in self.get_manifest(key1) if s != new]
        sets.insert(0, new)
        del sets[MANIFEST_SETS:]
        path = self.path_of(key1, MANIFEST_SUFFIX)
        write_atomic(path, json.dumps({"v": _VERSION, "sets": sets}, separators=(",", ":")).encode())
        self._touched.add(path)

    # --- maintenance ----------------------------------------------------------------------

    def iter_files(self) -> Iterator[AcFile]:
        """Every entry and manifest under a final name (temp files are skipped)."""
        for shard_name, f, st in iter_sharded(self.root):
            manifest = f.name.endswith(MANIFEST_SUFFIX)
            rest = f.name[: -len(MANIFEST_SUFFIX)] if manifest else f.name
            if len(rest) == 62:
                yield AcFile(shard_name + rest, f.path, st.st_size, st.st_mtime, manifest)

    # --- internals ------------------------------------------------------------------------

    @staticmethod
    def _read(path: str) -> tuple[bytes, os.stat_result] | None:
        try:
            return read_file_stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def _touch(self, path: str, st: os.stat_result) -> None:
        if path not in self._touched:
            self._touched.add(path)
            if time.time() - st.st_mtime < USE_MARK_S:
                return  # marked used within the hour
            try:
                os.utime(path)
            except OSError:
                pass


def _digest(text: object) -> Digest:
    if not isinstance(text, str):
        raise ValueError("digest must be a string")
    h, sep, size = text.partition("/")
    if not sep or not is_hex_key(h) or not size.isdigit():
        raise ValueError(f"bad digest {text!r}")
    return Digest(h, int(size))


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError("path must be a string")
    return value
