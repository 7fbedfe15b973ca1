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

inotify comes through ctypes (libc's `inotify_init1`/`inotify_add_watch`, no dependency); where
it is missing or its watch limit is reached, `StatScan` answers the same question by comparing
two walks of the roots. A queue overflow or a root that disappears means "everything changed".
"""
from __future__ import annotations

import ctypes
import errno
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


def inotify_open():
    """(libc, a non-blocking inotify descriptor); OSError or AttributeError where there is none."""
    # The interpreter's own symbols include the C library's; find_library would run
    # `ldconfig -p` (three processes, 10 ms of a server's start).
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


_ENGINE_WRITES = ("target", "compile_commands.json")  # directly under a root


def skipped(name: str) -> bool:
    return name.startswith(".")


def _walk_dirs(root: str):
    yield root
    for dirpath, dirnames, _ in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not skipped(d) and not (dirpath == root and d in _ENGINE_WRITES))
        for d in dirnames:
            yield os.path.join(dirpath, d)


def _listing(directory: str, root: bool) -> dict[str, tuple[bool, int]] | None:
    """What a glob sees of a directory: each name, whether it is a directory, its mode."""
    try:
        out = {}
        with os.scandir(directory) as it:
            for e in it:
                if skipped(e.name) or (root and e.name in _ENGINE_WRITES):
                    continue
                st = e.stat(follow_symlinks=False)
                out[e.name] = (e.is_dir(follow_symlinks=True), st.st_mode)
        return out
    except OSError:
        return None


class Inotify:
    """A log of events under the watched roots; a token is a position in the log."""

    kind = "inotify"

    def __init__(self):
        self._libc, self.fd = inotify_open()
        self.roots: set[str] = set()
        self._dirs: dict[int, str] = {}
        self._listing: dict[str, dict[str, tuple[bool, int]] | None] = {}
        self._log: list[tuple[int, str | None]] = []  # (serial, changed file | None: everything)
        self._serial = 0
        self._base = 0  # serial of the first entry kept in _log

    def fileno(self) -> int:
        return self.fd

    def close(self) -> None:
        os.close(self.fd)

    def watch(self, root: str) -> bool:
        """Watch `root` and its directories; False where the kernel refuses (limits)."""
        root = os.path.abspath(root)
        if root in self.roots:
            return True
        self.roots.add(root)
        for d in _walk_dirs(root):
            if not self._add(d):
                self.roots.discard(root)
                return False
        return True

    def _add(self, directory: str) -> bool:
        mask = _CONTENT | _SHAPE
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(directory), mask)
        if wd < 0:
            err = ctypes.get_errno()
            return err in (errno.ENOENT, errno.ENOTDIR, errno.EACCES)  # gone already: its parent said so
        self._dirs[wd] = directory
        self._listing[directory] = _listing(directory, directory in self.roots)
        return True

    def drain(self) -> None:
        """Read every queued event into the log."""
        for wd, mask, name in read_events(self.fd):
            self._event(wd, mask, name)

    def _event(self, wd: int, mask: int, name: str) -> None:
        if mask & IN_Q_OVERFLOW:
            self._record(None)
            return
        directory = self._dirs.get(wd)
        if mask & IN_IGNORED:
            self._dirs.pop(wd, None)
            return
        if directory is None:
            return
        if name and skipped(name):
            return
        path = os.path.join(directory, name) if name else directory
        if directory in self.roots and name in _ENGINE_WRITES:
            return
        if mask & (IN_DELETE_SELF | IN_MOVE_SELF):
            self._record(None)
        elif mask & _SHAPE:
            if mask & IN_ISDIR and mask & (IN_CREATE | IN_MOVED_TO):
                for d in _walk_dirs(path):
                    self._add(d)
            before = self._listing.get(directory)
            self._listing[directory] = _listing(directory, directory in self.roots)
            self._record(None if mask & IN_ISDIR else path, directory, before)
        elif mask & _CONTENT and not mask & IN_ISDIR:
            self._record(path)

    def _record(self, path: str | None, directory: str | None = None, before=None) -> None:
        """A logged event: a file's contents (`path`), a directory's shape (`directory` and its
        listing before the event; `path` the file, if any), or everything (neither)."""
        self._serial += 1
        self._log.append((self._serial, path, directory, before))
        if len(self._log) > 100_000:  # a token older than the kept log reads as "everything"
            drop = len(self._log) // 2
            self._base = self._log[drop - 1][0]
            del self._log[:drop]

    def token(self) -> int:
        self.drain()
        return self._serial

    def since(self, token: int) -> Changes:
        self.drain()
        if token < self._base:
            return Changes(everything=True)
        files: set[str] = set()
        listed: dict[str, object] = {}  # directory -> its listing at the token
        for serial, path, directory, before in self._log[self._index(token):]:
            if path is None and directory is None:
                return Changes(everything=True)
            if directory is not None and directory not in listed:
                listed[directory] = before
            if path is not None:
                files.add(path)
        for directory, before in listed.items():
            if before is None or _listing(directory, directory in self.roots) != before:
                return Changes(everything=True)
        return Changes(files=files)

    def _index(self, token: int) -> int:
        """Position in the log of the first event after `token`."""
        lo, hi = 0, len(self._log)
        while lo < hi:
            mid = (lo + hi) // 2
            if self._log[mid][0] <= token:
                lo = mid + 1
            else:
                hi = mid
        return lo


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
            for d in _walk_dirs(root):
                try:
                    entries = list(os.scandir(d))
                except OSError:
                    snapshot[d] = ("unreadable",)
                    continue
                for e in entries:
                    if skipped(e.name) or (d == root and e.name in _ENGINE_WRITES):
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
