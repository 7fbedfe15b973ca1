"""What changed on disk under a set of roots since a point in time: inotify, else a stat scan.

The server asks one question before each build: since the build that produced the state I hold
started, did anything change under the package roots, and if so, was it only the contents of
some files (which the build can check one by one) or the shape of a directory (a file created,
deleted, renamed, its mode changed; anything may follow from that)? A root's `target/` and
`compile_commands.json`, and dot directories, are not looked at: builds write them, and no plan
is made from them.

A "shape" event is judged by the directory's listing (names, kinds, modes): when the listing
now equals the one at the token, the event's file counts as rewritten. An editor that saves by
writing a temporary file and renaming it over the old one, or a `touch`, changes no listing.
Events are coalesced: a directory's events only mark it dirty, and it is listed again at most
once per token or question, within a bound on the entries read (`RELIST_BUDGET`); past the
bound, or after a queue overflow, the answer is "everything" and the build plans as without a
server. A burst of new files never costs a build more than that bounded listing.

inotify comes through ctypes (libc's `inotify_init1`/`inotify_add_watch`, no dependency); where
it is missing or its watch limit is reached, `StatScan` answers the same question by comparing
two walks of the roots. A queue overflow or a root that disappears means "everything changed".
"""
from __future__ import annotations

import ctypes
import errno
import hashlib
import os
import struct

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ISDIR = 0x40000000
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000

_CONTENT = IN_MODIFY | IN_CLOSE_WRITE
_SHAPE = IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF
EVERY_CHANGE = _CONTENT | _SHAPE  # what a watch asks for: every write, attribute change, entry made or gone
_EVENT = struct.Struct("iIII")
RELIST_BUDGET = 50_000  # directory entries listed again per token or question; beyond: "everything"
MAX_WRITTEN = 50_000  # files remembered as written; beyond, an older token reads as "everything"
_KEPT_LISTINGS = 8  # listings kept per directory (tokens of the requests the server holds)


def inotify_open():
    """(libc, a non-blocking inotify descriptor); OSError or AttributeError where there is none."""
    # The interpreter's own symbols include the C library's; find_library would run
    # `ldconfig -p` (three processes during the server's start).
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "inotify_init1")
    return libc, fd


class Descriptor:
    """Something that owns an inotify descriptor (or None where there is no inotify): the
    server's selector waits on `fileno()`; a build child closes it."""

    fd: int | None = None

    def fileno(self) -> int | None:
        return self.fd

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def read_events(fd: int):
    """Every queued event: (watch descriptor, mask, name in the watched directory or "")."""
    while True:
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            return
        if not data:
            return
        offset = 0
        while offset < len(data):
            wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
            name = data[offset + _EVENT.size: offset + _EVENT.size + length].rstrip(b"\0")
            offset += _EVENT.size + length
            yield wd, mask, os.fsdecode(name)


class Changes:
    """What changed since a token: `everything` (the shape of a tree), else the files whose
    contents were written."""

    def __init__(self, everything: bool = False, files: set[str] | None = None):
        self.everything = everything
        self.files = files or set()

    def __repr__(self) -> str:
        return "Changes(everything)" if self.everything else f"Changes({sorted(self.files)})"


ENGINE_WRITES = ("target", "compile_commands.json")  # directly under a root


def skipped(name: str) -> bool:
    return name.startswith(".")


def _walk_dirs(root: str):
    yield root
    for dirpath, dirnames, _ in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not skipped(d) and not (dirpath == root and d in ENGINE_WRITES))
        for d in dirnames:
            yield os.path.join(dirpath, d)


def entries_under(root: str):
    """(directory, entry) for every entry a watch of `root` looks at, directory by directory;
    (directory, None) for one that cannot be read."""
    for d in _walk_dirs(root):
        try:
            entries = list(os.scandir(d))
        except OSError:
            yield d, None
            continue
        for e in entries:
            if not (skipped(e.name) or (d == root and e.name in ENGINE_WRITES)):
                yield d, e


def _listing_digest(directory: str, root: bool, budget: int | None) -> tuple[bytes | None, int]:
    """(a digest of what a glob sees of a directory: each name, whether it is a directory, its
    mode; the number of entries read). None: unreadable, or more entries than `budget`."""
    entries = []
    try:
        with os.scandir(directory) as it:
            for e in it:
                if budget is not None and len(entries) >= budget:
                    return None, len(entries) + 1
                if skipped(e.name) or (root and e.name in ENGINE_WRITES):
                    continue
                st = e.stat(follow_symlinks=False)
                entries.append(f"{e.name}\0{int(e.is_dir(follow_symlinks=True))}\0{st.st_mode}")
    except OSError:
        return None, len(entries)
    entries.sort()
    return hashlib.blake2b("\n".join(entries).encode("utf-8", "surrogateescape"), digest_size=20).digest(), len(entries)


class Inotify:
    """Events under the watched roots, coalesced; a token is an event serial.

    Reading an event costs a dictionary update, never a listing: a file written is remembered
    by name (`_written`), a directory whose entries changed is marked dirty. A dirty directory
    is listed again when a token is taken or a question asked (`token`, `since`), once per
    call however many events it had, within `RELIST_BUDGET` entries per call; each listing is
    kept as a digest, with the serials over which it held. A directory whose listing at a token
    is not known (left over the budget, or the queue overflowed) answers "everything" when it
    changes after that token: the build then plans as without a server, which is exact on its
    own. So a flood of events costs the next build at most a bounded re-listing, never a wait
    proportional to the events times the size of their directory."""

    kind = "inotify"

    def __init__(self):
        self._libc, self.fd = inotify_open()
        self.roots: set[str] = set()
        self._dirs: dict[int, str] = {}  # watch descriptor -> directory
        self._serial = 0
        self._base = 0  # a token before it reads as everything (the written-file memory was cut)
        self._everything = 0  # serial of the last event after which anything may have changed
        self._written: dict[str, int] = {}  # file -> serial of its last event
        self._shaped: dict[str, int] = {}  # directory -> serial of its last change of entries
        self._dirty: set[str] = set()  # directories changed since their last listing
        # directory -> [first serial, first serial it no longer held (None: holds now), digest]
        self._listings: dict[str, list[list]] = {}

    def fileno(self) -> int:
        return self.fd

    def close(self) -> None:
        os.close(self.fd)

    def watch(self, root: str) -> bool:
        """Watch `root` and its directories, listing each (the server calls this while idle);
        False where the kernel refuses (limits)."""
        root = os.path.abspath(root)
        if root in self.roots:
            return True
        self.roots.add(root)
        for d in _walk_dirs(root):
            if not self._add(d):
                self.roots.discard(root)
                return False
            self._dirty.add(d)
        self._relist(budget=None)
        return True

    def _add(self, directory: str) -> bool:
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(directory), EVERY_CHANGE)
        if wd < 0:
            err = ctypes.get_errno()
            return err in (errno.ENOENT, errno.ENOTDIR, errno.EACCES)  # gone already: its parent said so
        self._dirs[wd] = directory
        return True

    def drain(self) -> None:
        """Read every queued event (a dictionary update each)."""
        for wd, mask, name in read_events(self.fd):
            self._event(wd, mask, name)

    def _event(self, wd: int, mask: int, name: str) -> None:
        self._serial += 1
        if mask & IN_Q_OVERFLOW:
            self._overflow()
            return
        directory = self._dirs.get(wd)
        if mask & IN_IGNORED:
            self._dirs.pop(wd, None)
            if directory is not None:
                self._forget(directory)
            return
        if directory is None or (name and skipped(name)):
            return
        if directory in self.roots and name in ENGINE_WRITES:
            return
        path = os.path.join(directory, name) if name else directory
        if mask & (IN_DELETE_SELF | IN_MOVE_SELF):
            self._everything = self._serial
        elif mask & _SHAPE:
            if mask & IN_ISDIR:
                self._everything = self._serial
                # A new directory is watched from now on; so is one whose mode changed: one that
                # could not be read when its parent was watched (`_add` passes over EACCES: the
                # build then fails on it) may be readable now, and must not stay unwatched.
                if mask & (IN_CREATE | IN_MOVED_TO | IN_ATTRIB):
                    for d in _walk_dirs(path):
                        if self._add(d):
                            self._dirty.add(d)  # listed at the next token: not known until then
            else:
                self._wrote(path)
            self._shaped[directory] = self._serial
            if directory not in self._dirty:
                self._dirty.add(directory)
                held = self._listings.get(directory)
                if held and held[-1][1] is None:
                    held[-1][1] = self._serial
        elif mask & _CONTENT and not mask & IN_ISDIR:
            self._wrote(path)

    def _wrote(self, path: str) -> None:
        self._written[path] = self._serial
        if len(self._written) > MAX_WRITTEN:  # an older token reads as everything
            self._written.clear()
            self._base = self._serial

    def _overflow(self) -> None:
        """Events were lost: anything may have changed, and no listing is known any more."""
        self._everything = self._serial
        for held in self._listings.values():
            if held and held[-1][1] is None:
                held[-1][1] = self._serial
        self._dirty.update(self._dirs.values())

    def _forget(self, directory: str) -> None:
        self._listings.pop(directory, None)
        self._shaped.pop(directory, None)
        self._dirty.discard(directory)

    def _relist(self, budget: int | None = RELIST_BUDGET) -> None:
        """List each dirty directory once, within `budget` entries in all (None: no bound);
        the rest stay dirty, their listing unknown until a later call lists them."""
        for directory in sorted(self._dirty):
            digest, size = _listing_digest(directory, directory in self.roots, budget)
            if budget is not None:
                budget -= size
                if budget < 0:
                    return
            self._dirty.discard(directory)
            held = self._listings.setdefault(directory, [])
            held.append([self._serial, None, digest])
            del held[:-_KEPT_LISTINGS]

    def _listing_at(self, directory: str, token: int) -> bytes | None:
        for first, end, digest in reversed(self._listings.get(directory, ())):
            if first <= token:
                return digest if end is None or token < end else None
        return None

    def token(self) -> int:
        self.drain()
        self._relist()
        return self._serial

    def since(self, token: int) -> Changes:
        self.drain()
        if token < self._base or self._everything > token:
            return Changes(everything=True)
        self._relist()
        for directory, last in self._shaped.items():
            if last <= token:
                continue
            before = self._listing_at(directory, token)
            if before is None or directory in self._dirty or self._listings[directory][-1][2] != before:
                return Changes(everything=True)
        return Changes(files={p for p, serial in self._written.items() if serial > token})


class StatScan:
    """The same answers from walks: a token is a snapshot of every file's stat under the roots."""

    kind = "stat scan"

    def __init__(self):
        self.roots: set[str] = set()

    def fileno(self) -> int | None:
        return None

    def close(self) -> None:
        pass

    def watch(self, root: str) -> bool:
        self.roots.add(os.path.abspath(root))
        return True

    def drain(self) -> None:
        pass

    def token(self) -> dict[str, tuple]:
        snapshot: dict[str, tuple] = {}
        for root in sorted(self.roots):
            for d, e in entries_under(root):
                if e is None:
                    snapshot[d] = ("unreadable",)
                    continue
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if e.is_dir(follow_symlinks=False):  # its entries speak for it
                    snapshot[e.path] = (st.st_mode, 0, 0, 0, 0)
                else:
                    snapshot[e.path] = (st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        return snapshot

    def since(self, token: dict[str, tuple]) -> Changes:
        now = self.token()
        if now.keys() != token.keys():
            return Changes(everything=True)
        files = set()
        for path, stamp in now.items():
            old = token[path]
            if stamp == old:
                continue
            if stamp[0] != old[0]:  # a chmod (a glob may stop or start reading it), or another kind
                return Changes(everything=True)
            files.add(path)  # rewritten, in place or by a rename over it
        return Changes(files=files)


def make_watcher():
    """inotify where the kernel offers it, else the stat scan."""
    if os.environ.get("MCPP_SERVER_WATCHER") == "stat":
        return StatScan()
    try:
        return Inotify()
    except (OSError, AttributeError):
        return StatScan()
