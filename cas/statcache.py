"""`StatCache`: source digests without re-hashing files whose stat has not changed.

A no-op build of a 1,000-file project must finish in well under a second, so it cannot read
every source. Like git's index and ninja's mtimes, we remember each file's
`(dev, ino, size, mtime_ns, ctime_ns)` beside its digest and hash only when that changes.

The trap is the *racy timestamp* (git's "racy git" problem): file times have a granularity (a
kernel tick, a second on some file systems), so a file rewritten in the same tick as we hashed it
keeps an identical stat while its bytes differ. Git's guard, copied here: the cache remembers
when it was written, as the mtime the file system gave the cache file itself (the same clock and
granularity that stamps source files; `time.time_ns()` would not do, since the file system's
coarse clock can lag it). An entry stamped no earlier than that write (`max(mtime, ctime) >=
written`) could have changed within the tick unseen, so it is dropped on load and re-hashed.
`ctime` is included because tools that restore an old mtime (`cp -p`, `tar x`) cannot fake it.
Caveat: the guard assumes the cache file and the sources share a timestamp granularity.

Persistence is a `marshal` snapshot (loads 1,000 entries in well under a millisecond; digests
are kept as 32 raw bytes) followed by the entries each save changed (cas/journal.py), written only
when something changed. The guard applies per save: entries one save's guard drops from memory
are removed from the file by a frame of their own at once, as the later frames would otherwise
leave them to a load whose guard reads a later write. Paths are used as given: pass absolute
paths (or paths relative to one fixed directory) consistently.

Thread safety: `digest` may be called from worker threads; dict updates are atomic under the
GIL and the counters are advisory.
"""
from __future__ import annotations

import os
import warnings
from typing import Callable, Iterable, NamedTuple, TypeVar

from . import journal
from .atomic import read_file
from .digest import Digest, digest_bytes, digest_file
from .journal import take_touched, touched_of

_FORMAT = "mcpp-statcache-2"

# (dev, ino, size, mtime_ns, ctime_ns, raw 32-byte blake3)
_Entry = tuple[int, int, int, int, int, bytes]
_V = TypeVar("_V")
# `touched_of`'s answer: the touched keys' values, and the touched keys no longer held
Touched = tuple[dict[str, _V], tuple[str, ...]]
# `StatCache.changes`: the touched entries and the guard's stamp
Changes = tuple[Touched[_Entry], "int | None"]


class StatKey(NamedTuple):
    """What must stay equal for a file's bytes to be presumed unchanged."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int


def stat_key(path: str | os.PathLike[str], stat: Callable[..., os.stat_result] = os.stat) -> StatKey | None:
    """The file's `StatKey` (following symlinks), or None when it does not exist."""
    try:
        st = stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return StatKey(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class StatCache:
    """Maps path -> (stat key, digest); persisted at `cache_file`.

    `stat` and `hash_file` are injectable so tests can drive the racy-timestamp case
    deterministically.
    """

    def __init__(
        self,
        cache_file: str | os.PathLike[str],
        stat: Callable[..., os.stat_result] = os.stat,
        hash_file: Callable[[str], Digest] = digest_file,
    ) -> None:
        self.cache_file = os.fspath(cache_file)
        self._stat = stat
        self._hash_file = hash_file
        self._entries: dict[str, _Entry] = {}
        self._dirty = False
        # The racy guard's last pass (the cache file's write stamp at load or save; None: none
        # yet) and the entries recorded since: every other entry is older than that stamp, so
        # the next pass needs to look at these alone (unless the clock went back).
        self._guarded_at: int | None = None
        self._since: set[str] = set()
        # Every path whose entry was set or removed since the cache was loaded (or `touched` was
        # cleared): what a server's copy of the same file takes in (`changes`, `take_changes`).
        self.touched: set[str] = set()
        self.saved: os.stat_result | None = None  # the file's stat when this instance last wrote it
        # The file's stamp where it holds exactly what this cache started from or last saved
        # (a save then appends what changed: cas/journal.py); None: the next save writes it whole.
        self.stamp: journal.Stamp | None = None
        self.hashed = 0  # files read and hashed by this instance
        self.hits = 0  # digests answered from the cache
        self.racy = 0  # entries dropped because their stamp was not older than the cache's write
        self._load()

    def __len__(self) -> int:
        return len(self._entries)

    def digest(self, path: str | os.PathLike[str]) -> Digest:
        """The file's digest: one `stat`, plus a hash only when the stat key is new."""
        path = os.fspath(path)
        key, known = self._lookup(path)
        return known if known is not None else self._hash(path, key, None)[0]

    def digest_and_bytes(self, path: str | os.PathLike[str]) -> tuple[Digest, bytes | None]:
        """The file's digest as `digest` answers it, and, when the stat key was new, the bytes
        read to hash it (None on a hit): a caller that reads what it hashes (the planner's
        module and include scans) reads each new file once, and reads the bytes the digest
        names."""
        path = os.fspath(path)
        key, known = self._lookup(path)
        return (known, None) if known is not None else self._hash(path, key, read_file)

    def _lookup(self, path: str) -> tuple[tuple[int, int, int, int, int], Digest | None]:
        """The file's stat key now, and its remembered digest when that key is the one it was
        hashed under (None: the file must be hashed)."""
        st = self._stat(path)
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        e = self._entries.get(path)
        if e is not None and e[:5] == key:
            self.hits += 1
            return key, Digest(e[5].hex(), e[2])
        return key, None

    def _hash(self, path: str, key: tuple[int, int, int, int, int],
              read: Callable[[str], bytes] | None) -> tuple[Digest, bytes | None]:
        """Hash a file whose stat `key` is new, and remember it unless it changed while read.
        `read`: how to read it whole, to hash its bytes and hand them back (None: `hash_file`,
        which keeps nothing)."""
        data = None
        for _ in range(3):
            if read is None:
                d = self._hash_file(path)
            else:
                data = read(path)
                d = digest_bytes(data)
            self.hashed += 1
            st2 = self._stat(path)
            key2 = (st2.st_dev, st2.st_ino, st2.st_size, st2.st_mtime_ns, st2.st_ctime_ns)
            if key2 == key and d.size == key[2]:
                self._entries[path] = (*key, bytes.fromhex(d.hash))
                self._since.add(path)
                self.touched.add(path)
                self._dirty = True
                return d, data
            key = key2  # changed while we read it: hash again
        # Still changing: answer what we read, but remember nothing.
        self._entries.pop(path, None)
        self.touched.add(path)
        self._dirty = True
        return d, data

    def holding(self, files: Iterable[tuple[str, str, bytes]]) -> list[str]:
        """The names among `files` ((name, path, blake3 bytes), ...) whose file still has the
        stat this cache recorded that hash under: `digest` would answer that hash, by the same
        one `stat` each, without building a `Digest` per file (thousands per no-op build)."""
        entries, stat = self._entries, self._stat
        out = []
        for name, path, hash_bytes in files:
            e = entries.get(path)
            if e is None or e[5] != hash_bytes:
                continue
            try:
                st = stat(path)
            except OSError:
                continue
            if (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) == e[:5]:
                out.append(name)
        self.hits += len(out)
        return out

    def size(self, path: str) -> int:
        """The size `path` had when this cache last hashed or recorded it (0: none known); no
        system call, so no promise about the file now."""
        e = self._entries.get(path)
        return 0 if e is None else e[2]

    def recorded(self, path: str | os.PathLike[str]) -> tuple[int, int, int, int, int] | None:
        """The stat this cache holds `path`'s digest under, as `StatKey`'s fields (a plain tuple:
        the no-op record asks for thousands at the end of a build): the one taken when the file
        was hashed (or written, for `remember`), so the stat of the bytes a build used; None when
        it holds none (never read, or dropped as changing or racy)."""
        e = self._entries.get(os.fspath(path))
        return None if e is None else e[:5]

    def remember(self, path: str | os.PathLike[str], digest: Digest) -> None:
        """Record a digest the caller already knows (it just wrote or hashed the file), so the
        next `digest` of an unchanged file costs only a stat."""
        path = os.fspath(path)
        st = self._stat(path)
        self.touched.add(path)
        if st.st_size != digest.size:
            self._entries.pop(path, None)
            return
        self._entries[path] = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns,
                               bytes.fromhex(digest.hash))
        self._since.add(path)
        self._dirty = True

    def adopt(self, other: "StatCache") -> int:
        """Take `other`'s entries for the paths this cache holds none of; how many were taken.

        For a warm server whose build finds its cache file gone (`rm -rf target`) or rewritten
        by a build outside the server: what the server loaded from the old file still names the
        sources' digests. An entry is as good here as it was there: it passed the racy guard
        against that file's write, and it is used only while the file's whole stat key (device,
        inode, size, mtime, ctime) is the recorded one, so a file replaced or edited since is
        hashed again. The next save checks every entry against its own write."""
        entries = self._entries
        taken = 0
        for path, e in other._entries.items():
            if path not in entries:
                entries[path] = e
                self.touched.add(path)
                taken += 1
        if taken:
            self._dirty = True
            self._guarded_at = None  # the next pass looks at every entry, the taken ones too
        return taken

    def forget(self, path: str | os.PathLike[str]) -> None:
        path = os.fspath(path)
        if self._entries.pop(path, None) is not None:
            self.touched.add(path)
            self._dirty = True

    def save(self) -> None:
        """Save the cache if anything changed since load (or the last save): the changed entries
        appended, or the whole file written (cas/journal.py)."""
        if not self._dirty:
            return
        st = journal.save(self.cache_file, _FORMAT, (self._entries,), (self.touched,), self.stamp)
        # Apply the same guard in memory, so a long-lived process behaves like a reload would,
        # and take what it drops out of the file too: a load guards by the file's last write,
        # which a later save's frame moves past this one's.
        racy = self._drop_racy(st.st_mtime_ns)
        if racy:
            st = journal.append(self.cache_file, _FORMAT, (({}, tuple(racy)),), journal.stamp(st), compact=False) \
                or journal.write_whole(self.cache_file, _FORMAT, (self._entries,))  # none left to drop
            self._guarded_at = st.st_mtime_ns  # every entry left is older than the first write: than this one too
        self.saved = st
        self.stamp = journal.stamp(st)
        self._dirty = False

    def _load(self) -> None:
        try:
            found = journal.load(self.cache_file, _FORMAT, 1, _well_formed)
        except journal.Foreign:
            self._dirty = True  # another version's: start empty and overwrite it on save
            return
        except journal.Unusable as e:
            self._dirty = True  # start empty and overwrite it on save
            discard(self.cache_file, e.why)
            return
        if found is None:
            return
        (self._entries,) = found.payload
        self.stamp = found.stamp
        if self._drop_racy(found.written_ns):
            self._dirty = True

    def _drop_racy(self, written_ns: int) -> list[str]:
        entries = self._entries
        if self._guarded_at is not None and written_ns >= self._guarded_at:
            candidates = [p for p in self._since if p in entries]  # the rest passed at `_guarded_at`
        else:
            candidates = list(entries)
        racy = [p for p in candidates if max(entries[p][3], entries[p][4]) >= written_ns]
        for p in racy:
            del entries[p]
        self.touched.update(racy)
        self.racy += len(racy)
        self._guarded_at = written_ns
        self._since = set()
        return racy

    # -- a copy kept in step with the file (a server's, engine/server/state_memo.py) -------------
    def changes(self) -> Changes | None:
        """What `take_changes` needs to make a copy of this cache as it was when `touched` was
        cleared into what loading the file saved since would give: the touched paths' entries
        and those removed (`touched_of`, those the guard dropped among them) and the guard's
        stamp. None while something is not saved yet (the file is not what this cache holds)."""
        if self._dirty:
            return None
        return touched_of(self._entries, self.touched), self._guarded_at

    def take_changes(self, changes: Changes) -> None:
        """Apply another instance's `changes` to this copy of the same starting point: it then
        holds what a load of the file that instance saved gives (the same entries: that save
        took what its guard dropped out of the file too). Its `stamp` is the caller's to set
        (state_memo.py), from the file that instance saved."""
        touched, guarded_at = changes
        take_touched(self._entries, touched)
        self._guarded_at = guarded_at
        self._since = set()
        self._dirty = False
        self.racy = 0
        self.hashed = self.hits = 0


def _well_formed(entries: object) -> bool:
    """The right format can still hold the wrong shapes (a hand edit, a damaged write): such a
    file is dropped whole and every file is hashed again."""
    return isinstance(entries, dict) and all(
        isinstance(p, str) and isinstance(e, tuple) and len(e) == 6
        and all(type(x) is int for x in e[:5]) and isinstance(e[5], bytes) for p, e in entries.items())


class StateDiscarded(UserWarning):
    """A state or cache file that could not be used was dropped and the build went on without
    it. Raised through `warnings` so that this layer needs no reporter: the command line shows
    it as `warning: ...`."""


def discard(path: str, why: str) -> None:
    warnings.warn(f"{path}: {why}; discarded (it is written again)", StateDiscarded, stacklevel=2)
