"""State files that grow by their changes: a snapshot, then what each save changed since it.

A build's state files (the stat cache, cas/statcache.py; the action records and the source scans,
engine/state/incremental.py) hold dictionaries a build changes a few keys of. Written whole, each
build that changed one key marshalled and wrote them all before its answer: ~10 MB at 10,000 units,
~16 ms of an edit-one build for the two records it changed. As ninja's `.ninja_deps` does, a save
now appends a frame of what changed since the state's last save (`save`): per dictionary, the
touched keys' values and the keys removed (`touched_of`). A load reads the snapshot and applies
the frames in order (`take_touched`), so it gives exactly the dictionaries that were saved. Once
the frames would outgrow the snapshot, the save writes the whole file instead, atomically (a
load then never reads more than about twice the state).

An append is made only to the file its writer read or last wrote, as the file's stamp (inode,
size, mtime, ctime) says, and never through a symbolic link: a file rewritten or appended to by
anyone else since, or a name that is now a link, is written whole.
A load that finds a frame cut short (a build killed while appending) keeps what came before it
and gives no stamp, so the next save writes the file whole; nothing is ever appended after a
partial frame. Loaded dictionaries are checked for their shapes, the changes' as the snapshot's.

Format: the line `MAGIC`, then frames: an 8-byte big-endian length and a `marshal`ed tuple. The
first frame is the snapshot, `(format, dict, ...)`; each later one is `(format, (present,
removed), ...)`, one pair per dictionary. A file without the magic line (none, or an earlier
version's, one marshalled tuple) is none to this reader: the state starts over; anything else
is damage, said to be.

Standard library only, as atomic.py: the stat cache loads it on the no-op fast path.
"""
from __future__ import annotations

import marshal
import os
import struct

from .atomic import atomic_file, read_all

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, TypeVar

    _V = TypeVar("_V")

MAGIC = b"mcpp-journal-1\n"
_LENGTH = struct.Struct(">Q")
_SNAPSHOT_AT = len(MAGIC)  # where the snapshot's length is

# (inode, size, mtime_ns, ctime_ns): the file as its owner last read or wrote it
Stamp = tuple[int, int, int, int]


def stamp(st: os.stat_result) -> Stamp:
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def touched_of(kept: dict[str, _V], touched: set[str]) -> tuple[dict[str, _V], tuple[str, ...]]:
    """The values of `kept` at the keys `touched` that it still holds, and those it no longer does."""
    present = {k: kept[k] for k in touched if k in kept}
    return present, tuple(k for k in touched if k not in present)


def take_touched(kept: dict[str, _V], changes: tuple[dict[str, _V], tuple[str, ...]]) -> None:
    """Make `kept` hold what `touched_of` found in another copy of the same starting point."""
    present, removed = changes
    for k in removed:
        kept.pop(k, None)
    kept.update(present)


class Unusable(Exception):
    """A file of this format whose content cannot be used: `why` is "unreadable" or "wrong-shaped"."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


class Foreign(Exception):
    """A file written by another version or format: the state starts over, quietly."""


class Loaded:
    """What `load` found: `payload`, the dictionaries; `stamp`, the file's where a save may
    append to it (None: it ends in a frame cut short); `written_ns`, the file's mtime (when its
    last frame was written)."""
    __slots__ = ("payload", "stamp", "written_ns")

    def __init__(self, payload: tuple[dict[str, Any], ...], stamp: Stamp | None, written_ns: int):
        self.payload, self.stamp, self.written_ns = payload, stamp, written_ns


def load(path: str, fmt: str, arity: int, well_formed: Callable[..., bool]) -> Loaded | None:
    """The `arity` dictionaries `path` holds, each frame applied; None where there is no file.
    Raises `Foreign` (another format or version) or `Unusable`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise Unusable("unreadable") from e
    try:
        st = os.fstat(fd)
        data = read_all(fd, st.st_size)
    except OSError as e:
        raise Unusable("unreadable") from e
    finally:
        os.close(fd)
    if not data.startswith(MAGIC):
        raise Foreign() if _earlier(data) else Unusable("unreadable")
    frames, whole = _frames(memoryview(data))
    if not frames:
        raise Unusable("unreadable")  # a whole write never leaves the magic line alone
    try:
        first = marshal.loads(frames[0])
        if not isinstance(first, tuple) or not first or first[0] != fmt:
            raise Foreign()
        payload = first[1:]
        if len(payload) != arity or not well_formed(*payload):
            raise Unusable("wrong-shaped")
        for frame in frames[1:]:
            change = marshal.loads(frame)
            if not _well_formed_change(change, fmt, arity, well_formed):
                raise Unusable("wrong-shaped")
            for kept, touched in zip(payload, change[1:]):
                take_touched(kept, touched)
    except (EOFError, ValueError, TypeError) as e:
        raise Unusable("unreadable") from e
    return Loaded(payload, stamp(st) if whole else None, st.st_mtime_ns)


def _earlier(data: bytes) -> bool:
    """Whether `data` is a state file of an earlier version: one marshalled tuple that starts
    with its format's name (anything else is damage, and said to be)."""
    try:
        found = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return False
    return isinstance(found, tuple) and bool(found) and isinstance(found[0], str)


def _frames(data: memoryview) -> tuple[list[memoryview], bool]:
    """The whole frames after the magic line, and whether the data ends where one does."""
    frames: list[memoryview] = []
    at, end = len(MAGIC), len(data)
    while at < end:
        if end - at < _LENGTH.size:
            return frames, False
        (size,) = _LENGTH.unpack_from(data, at)
        at += _LENGTH.size
        if end - at < size:
            return frames, False
        frames.append(data[at:at + size])
        at += size
    return frames, True


def _well_formed_change(change: object, fmt: str, arity: int, well_formed: Callable[..., bool]) -> bool:
    if not isinstance(change, tuple) or len(change) != arity + 1 or change[0] != fmt:
        return False
    pairs = change[1:]
    if not all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[1], tuple) for p in pairs):
        return False
    return well_formed(*(p[0] for p in pairs)) and all(isinstance(k, str) for p in pairs for k in p[1])


def write_whole(path: str, fmt: str, payload: tuple[dict[str, Any], ...]) -> os.stat_result:
    """Write the snapshot `(fmt, *payload)` as the whole file, atomically; the file's stat."""
    body = marshal.dumps((fmt, *payload))
    with atomic_file(path) as f:
        f.write(MAGIC + _LENGTH.pack(len(body)))
        f.write(body)
    return os.stat(path)


def append(path: str, fmt: str, changes: tuple[Any, ...], last: Stamp | None, *, compact: bool = True
           ) -> os.stat_result | None:
    """Append the frame `(fmt, *changes)` to `path` when the file is still the one `last`
    describes; its stat then, or None: the caller writes the file whole. `compact`: None too
    when the frames would outgrow the snapshot."""
    if last is None:
        return None
    body = marshal.dumps((fmt, *changes))
    try:
        # never through a link: a state file replaced by one (to another project's state, say)
        # is written whole, its name renamed over, as it was before appends
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if stamp(st) != last:
            return None
        if compact:
            head = os.pread(fd, _LENGTH.size, _SNAPSHOT_AT)
            if len(head) != _LENGTH.size:
                return None
            snapshot = _LENGTH.unpack(head)[0]
            frames = st.st_size - _SNAPSHOT_AT - _LENGTH.size - snapshot
            if frames + _LENGTH.size + len(body) > snapshot:
                return None
        data = _LENGTH.pack(len(body)) + body
        # One write; one cut short (a full disk) leaves a partial frame, which the whole write
        # the caller makes next replaces (or, should that fail too, a load stops before).
        if os.write(fd, data) != len(data):
            return None
        return os.fstat(fd)
    except OSError:
        return None
    finally:
        os.close(fd)


def save(path: str, fmt: str, payload: tuple[dict[str, Any], ...], touched: tuple[set[str], ...],
         last: Stamp | None) -> os.stat_result:
    """Save `payload`, whose keys `touched` (a set per dictionary) changed since the file was
    `last`: by appending those changes, or by writing the whole file (no `last`, the file
    changed since, or the changes are about as large as the state). The file's stat."""
    if last is not None and 2 * sum(map(len, touched)) <= sum(map(len, payload)):
        st = append(path, fmt, tuple(touched_of(d, keys) for d, keys in zip(payload, touched)), last)
        if st is not None:
            return st
    return write_whole(path, fmt, payload)
