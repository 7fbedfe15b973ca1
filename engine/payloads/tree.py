"""A payload's tree, built in a new directory without ever following a link.

Archives (archive.py) and `dir` sources (install.py) both become a payload through `Tree`. Every
path is created relative to a directory descriptor, and each directory on the way is opened
from the tree's root one component at a time with `O_NOFOLLOW`: a member can never be written
through a symlink, whatever links earlier members made, and a file is created with `O_EXCL`, so
it never replaces (or truncates) anything. No member replaces another: a second member of one
name is refused (a directory named again is the same directory). The tree therefore holds
exactly what was added, and its symlinks are checked once it is complete: each is resolved by
walking the tree link by link, as the kernel would, and refused when a step leaves the root, so
a chain of links whose texts each look harmless cannot point out of the payload either.

What is added is counted as it is written (`Limits`): an archive that unpacks to more bytes or
members than it may is stopped as soon as it passes the limit, never read whole into memory.
"""
from __future__ import annotations

import errno
import os
import shutil
import stat
from dataclasses import dataclass
from typing import BinaryIO, Callable

from mcpp.cas.units import format_size

CHUNK = 1 << 20
MAX_LINK_HOPS = 40  # the kernel's own bound on links followed while resolving one path
MAX_LINK_TEXT = 4095  # PATH_MAX - 1: a longer link text is not a path
MAX_PATH = 4095  # nor is a longer member path (as bytes)
# Directories nested deeper than this are no payload's; bounding the depth keeps each member's
# cost, and the recursion of tools that walk the tree later (removal, `mcpp cache gc`), small.
MAX_DEPTH = 256
# Components walked, all links together, to resolve every link of one tree: far more than any
# payload's links need, and what bounds the time an archive of long, chained link texts can take.
MAX_LINK_STEPS = 16_000_000
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# What a member that cannot be created this way means: the archive, not the machine, is at fault.
_REFUSED_ERRNOS = (errno.ELOOP, errno.ENOTDIR, errno.EEXIST, errno.EISDIR, errno.ENAMETOOLONG, errno.EINVAL)


@dataclass(frozen=True)
class Limits:
    """Bounds on what one payload may unpack to, each with the setting that imposed it."""
    max_bytes: int
    bytes_origin: str
    max_members: int
    members_origin: str


def open_dir(base_fd: int, parts: list[str]) -> int:
    """A new descriptor of directory `parts` below `base_fd`, no component followed as a link
    (`OSError` ELOOP/ENOTDIR when one is a link or a file)."""
    fd = os.dup(base_fd)
    try:
        for part in parts:
            child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


class Tree:
    """A payload tree rooted at `root`, which it creates (so it is new and empty).

    `refuse(member, why)` makes the exception raised for a member that cannot be added; the
    caller knows what the member came from (an archive's URL, a directory of an index). Names
    are relative, `/`-separated, without empty, `.` or `..` components."""

    def __init__(self, root: str, refuse: Callable[[str, str], Exception], limits: Limits | None = None):
        os.mkdir(root, 0o755)
        self._root = root
        self._root_fd = os.open(root, _DIR_FLAGS)
        self._refuse = refuse
        self._limits = limits
        self._kinds: dict[str, str] = {"": "directory"}  # what each created path is
        self._links: dict[str, str] = {}  # symlink -> its text
        self._bytes = 0
        self._steps = 0  # path components walked resolving links (MAX_LINK_STEPS)
        self._parent: tuple[str, int] | None = None  # the last parent opened, reused by its siblings

    def __enter__(self) -> "Tree":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        """Close; when a member was refused (or anything else failed), remove the tree, so
        what was refused leaves nothing, however far it got."""
        self.close()
        if exc_type is not None:
            shutil.rmtree(self._root, ignore_errors=True)

    def close(self) -> None:
        if self._parent is not None:
            os.close(self._parent[1])
            self._parent = None
        if self._root_fd >= 0:
            os.close(self._root_fd)
            self._root_fd = -1

    # -- adding members ---------------------------------------------------------------------

    def add_dir(self, name: str) -> None:
        if self._kinds.get(name) == "directory":
            return
        parent, leaf = self._new(name)
        self._create(name, lambda: os.mkdir(leaf, 0o755, dir_fd=parent))
        self._kinds[name] = "directory"

    def add_file(self, name: str, content: BinaryIO, mode: int) -> None:
        """A regular file with `content`'s bytes (read in chunks, counted against the limit);
        readable by all, executable when `mode` is, never writable by group or others."""
        parent, leaf = self._new(name)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = self._create(name, lambda: os.open(leaf, flags, 0o600, dir_fd=parent))
        self._kinds[name] = "file"
        with open(fd, "wb", buffering=0) as out:
            while chunk := content.read(CHUNK):
                self.charge(name, len(chunk))
                view = memoryview(chunk)
                while view:
                    view = view[out.write(view):]
            os.fchmod(fd, (mode | 0o444) & 0o755)

    def add_symlink(self, name: str, target: str) -> None:
        """A symlink with text `target`; where it leads is checked by `finish`, once every
        member it may pass through is there."""
        if not target or "\0" in target or len(target) > MAX_LINK_TEXT:
            raise self._refuse(name, "is a link with no usable target")
        if target.startswith("/"):
            raise self._refuse(name, f"is a link to `{target}`, outside the payload")
        parent, leaf = self._new(name)
        self._create(name, lambda: os.symlink(target, leaf, dir_fd=parent))
        self._kinds[name] = "symlink"
        self._links[name] = target

    def add_hardlink(self, name: str, target: str) -> None:
        """A second name for `target`, which must be a regular file added before."""
        if self._kinds.get(target) != "file":
            raise self._refuse(name, f"is a hard link to `{target}`, which is not an earlier file of the payload")
        parent, leaf = self._new(name)
        *dirs, target_leaf = target.split("/")
        target_dir = self._open(dirs, target)
        try:
            self._create(name, lambda: os.link(target_leaf, leaf, src_dir_fd=target_dir, dst_dir_fd=parent,
                                               follow_symlinks=False))
        finally:
            os.close(target_dir)
        self._kinds[name] = "file"

    def charge(self, name: str, n: int) -> None:
        """Count `n` bytes of member `name` against the limit (a file's content as it is
        written; data an archive attaches to a member that is not a file, before it is skipped)."""
        self._bytes += n
        if self._limits is not None and self._bytes > self._limits.max_bytes:
            raise self._refuse(name, f"takes the unpacked payload past {_size(self._limits.max_bytes)}, "
                                     f"{self._limits.bytes_origin}")

    def refuse_special(self, name: str) -> Exception:
        return self._refuse(name, "is a device, fifo or other special file")

    # -- the finished tree ------------------------------------------------------------------

    def finish(self) -> None:
        """Refuse the first symlink that resolves out of the tree (or does not resolve)."""
        for name, target in self._links.items():
            via = self._escape(name)
            if via is not None:
                through = f" (through the link `{via}` -> `{self._links[via]}`)" if via != name else ""
                raise self._refuse(name, f"is a link to `{target}`, outside the payload{through}")

    def _escape(self, name: str) -> str | None:
        """Resolve link `name` by walking the tree as the kernel would; the link whose text
        leaves the root, else None. A walk that stops at a missing path or a file stays inside."""
        here = name.rpartition("/")[0]  # the directory holding the link ("" is the root)
        todo = list(reversed(self._links[name].split("/")))
        current, hops = name, 1
        while todo:
            part = todo.pop()
            self._steps += 1
            if self._steps > MAX_LINK_STEPS:
                raise self._refuse(name, f"is a link whose resolution takes the payload's links past "
                                         f"{MAX_LINK_STEPS} path components walked")
            if part in ("", "."):
                continue
            if part == "..":
                if not here:
                    return current
                here = here.rpartition("/")[0]
                continue
            path = f"{here}/{part}" if here else part
            kind = self._kinds.get(path)
            if kind == "symlink":
                hops += 1
                if hops > MAX_LINK_HOPS:
                    raise self._refuse(name, f"is a link that does not resolve (more than {MAX_LINK_HOPS} links "
                                             f"deep)")
                todo.extend(reversed(self._links[path].split("/")))
                current = path
            elif kind == "directory":
                here = path
            else:
                return None  # missing, or a file: the kernel stops here, inside the tree
        return None

    # -- creating one path safely -----------------------------------------------------------

    def _new(self, name: str) -> tuple[int, str]:
        """The descriptor of `name`'s parent (its missing directories made) and its last
        component; refuses a name already taken or one below something that is not a directory.
        Its cost grows with the name's length, not with its square: a parent already made
        (the usual case) is looked up once, and missing ones are made top-down, each opened
        from the one above."""
        parts = name.split("/")
        if not name or "\0" in name or any(p in ("", ".", "..") for p in parts):
            raise self._refuse(name, "has an unusable path")
        if len(parts) > MAX_DEPTH or len(os.fsencode(name)) > MAX_PATH:
            raise self._refuse(name, f"has a path deeper than {MAX_DEPTH} directories or longer than {MAX_PATH} "
                                     f"bytes")
        if name in self._kinds:
            raise self._refuse(name, f"is listed twice (first as a {self._kinds[name]})")
        self._count(name)
        parent = name.rpartition("/")[0]
        if self._kinds.get(parent) != "directory":
            prefix = ""
            for part in parts[:-1]:
                prefix = f"{prefix}/{part}" if prefix else part
                kind = self._kinds.get(prefix)
                if kind is None:
                    self._count(prefix)
                    fd = self._parent_fd(prefix, name)
                    leaf = prefix.rpartition("/")[2]
                    self._create(prefix, lambda: os.mkdir(leaf, 0o755, dir_fd=fd))
                    self._kinds[prefix] = "directory"
                elif kind != "directory":
                    raise self._refuse(name, f"lies under the {kind} `{prefix}`")
        return self._parent_fd(name, name), parts[-1]

    def _parent_fd(self, path: str, member: str) -> int:
        """The descriptor of `path`'s parent directory, kept for its siblings; opened from the
        last one kept when that is its own parent (a chain made top-down), else from the root."""
        parent = path.rpartition("/")[0]
        if self._parent is not None and self._parent[0] == parent:
            return self._parent[1]
        if self._parent is not None and parent.rpartition("/")[0] == self._parent[0] and parent:
            fd = self._open_from(self._parent[1], [parent.rpartition("/")[2]], member, parent)
        else:
            fd = self._open_from(self._root_fd, parent.split("/") if parent else [], member, parent)
        if self._parent is not None:
            os.close(self._parent[1])
        self._parent = (parent, fd)
        return fd

    def _open(self, dirs: list[str], member: str) -> int:
        return self._open_from(self._root_fd, dirs, member, "/".join(dirs))

    def _open_from(self, base_fd: int, dirs: list[str], member: str, shown: str) -> int:
        """Directory `dirs` below `base_fd` (`shown`: its path in the tree, for the refusal)."""
        try:
            return open_dir(base_fd, dirs)
        except OSError as e:
            if e.errno in _REFUSED_ERRNOS:
                raise self._refuse(member, f"lies under `{shown}`, which is not a plain directory") from None
            raise

    def _create(self, name: str, make):
        try:
            return make()
        except OSError as e:
            if e.errno in _REFUSED_ERRNOS:
                raise self._refuse(name, f"cannot be created ({e.strerror})") from None
            raise

    def _count(self, name: str) -> None:
        if self._limits is not None and len(self._kinds) > self._limits.max_members:
            raise self._refuse(name, f"takes the payload past {self._limits.max_members} members, "
                                     f"{self._limits.members_origin}")


def _size(n: int) -> str:
    return f"{format_size(n)} ({n} bytes)"


def is_special(mode: int) -> bool:
    """A device, fifo or socket: never part of a payload."""
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode))
