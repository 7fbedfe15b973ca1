"""Where the stores live: the mcpp home and its fixed subdirectories.

One value type names the layout so that the CLI (`mcpp cache dir|stats|gc|clean`), the engine
and the maintenance code cannot disagree about a directory name. Where the home is, is the
engine's to say (`engine/core/mcpp_home.py`, from `$MCPP_HOME`); this module reads no environment.

```
$MCPP_HOME/            default ~/.mcpp
  cas/<2hex>/<62hex>   zstd blobs, named by the blake3 of the uncompressed bytes
  cas/tmp/             in-flight writes of streamed blobs (same file system as the shards)
  ac/<2hex>/<62hex>    action-cache entries (compact JSON); `<62hex>.m` = a depfile manifest
  mat/<2hex>/<62hex>[.x]  decompressed, read-only copies to hard-link from (`.x`: executable)
  tool/  payloads/     host tools and installed payloads (owned by the engine)
  last-build.json  toolchains.json   the last build's counters, the compiler probe cache
```
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

# Every temp file the stores create is named by cas/atomic.py: `TMP_PREFIX` lets scans skip
# it and `gc` sweep it; `temp_file` is re-exported here for the stores that import it.
from .atomic import TMP_PREFIX as TMP_PREFIX, temp_file as temp_file  # noqa: F401


@dataclass(frozen=True, slots=True)
class Home:
    """The mcpp home (`$MCPP_HOME`): where the store, caches and state live."""
    root: Path

    @classmethod
    def of(cls, home: "Home | str | os.PathLike[str]") -> "Home":
        return home if isinstance(home, Home) else cls(Path(home))

    @property
    def cas(self) -> Path:
        return self.root / "cas"

    @property
    def ac(self) -> Path:
        return self.root / "ac"

    @property
    def mat(self) -> Path:
        return self.root / "mat"

    @property
    def tool(self) -> Path:
        return self.root / "tool"

    @property
    def payloads(self) -> Path:
        return self.root / "payloads"

    @property
    def last_build(self) -> Path:
        """The counters of the last build, for `mcpp cache stats`."""
        return self.root / "last-build.json"

    @property
    def toolchains(self) -> Path:
        """The compiler probe cache (engine/toolchain/compilers.py)."""
        return self.root / "toolchains.json"


# An action-cache entry read is marked used (its mtime bumped, for `gc`'s least-recently-used
# eviction of entries) only when its mark is older than this: that order holds to the hour, and a
# build restoring thousands of entries it or the last build just wrote or read bumps none of them
# again. Blobs are marked on every first read: `gc`'s grace window for blobs is shorter.
USE_MARK_S = 3600


def shard(root: str | os.PathLike[str], hexname: str, suffix: str = "") -> str:
    """`<root>/<first 2 hex>/<rest><suffix>`: 256 directories keep each one small."""
    return f"{os.fspath(root)}/{hexname[:2]}/{hexname[2:]}{suffix}"  # os.path.join, without its checks


def is_hex_key(text: str) -> bool:
    """A 64-character lowercase hex string (a blake3 hash), safe to use as a file name."""
    return len(text) == 64 and not text.strip("0123456789abcdef")  # stripped to "" only if all hex


def iter_sharded(root: str | os.PathLike[str]) -> Iterator[tuple[str, os.DirEntry[str], os.stat_result]]:
    """(2-hex shard, entry, stat) for every file in `<root>/<2 hex>/`, skipping temp files and
    files deleted while we walk (a concurrent gc). The stores' layout in one place."""
    try:
        shards = os.scandir(root)
    except FileNotFoundError:
        return
    with shards:
        for s in shards:
            if len(s.name) != 2 or not s.is_dir(follow_symlinks=False):
                continue
            with os.scandir(s.path) as files:
                for f in files:
                    if f.name.startswith("."):
                        continue
                    try:
                        st = f.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    yield s.name, f, st


def unlink_quietly(path: str) -> None:
    """Remove `path` if it is there (a concurrent gc or writer may have removed it first)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
