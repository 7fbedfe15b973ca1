"""A prepared tree: the many inputs of one action (a link's objects), kept between its runs.

Staging an input costs a ``link(2)`` into the action's directory and an ``unlink(2)`` when the
directory is emptied again; a link of a thousand objects pays two thousand system calls on every
run, though an edit changed one object. Under bwrap an action that runs again with mostly the
same inputs (``SandboxSpec.prepared_tree``: a local build's link) instead sees the directories
that hold only its inputs (``readonly_paths``: ``target/dev/.mcpp/obj``) as one read-only bind
mount each, of a directory kept for that action under ``<work root>/sandbox/trees/<key>/root/``.
Between two runs of the same action (the same label, outputs, root and output directory:
``key``) only the inputs that differ are unlinked and linked again, so the next run costs what
changed, plus one ``stat`` per input (none where the caller passes the identities it saw when it
staged the sources: ``SandboxSpec.input_ids``).

What keeps it exactly the action's declared inputs, each the bytes its source names:

- *Only this action's inputs, read-only.* A tree holds the files of one action, hard links to
  their sources (the store's read-only copies), and nothing else: an input removed from the set
  is unlinked, a directory no input needs any more is removed. The action sees a tree directory
  through a read-only bind mount (bwrap's ``--ro-bind``, or the worker's mount, worker.py), so
  no write, ``chmod`` or new name reaches it.
- *The new bytes.* The manifest records the (device, inode) of each entry's source when it was
  linked (the entry is that inode); an entry whose source now has another identity is linked
  again, so a source replaced (a healed store copy, a file renamed over) is seen, as a fresh
  staging sees it.
- *Never half made.* The manifest is removed before the tree is changed and written (temporary
  file, then ``rename``) only once it is complete; a tree without one, after a crash or a kill
  half-way, is removed and made again. The manifest also records each directory's (inode, mtime,
  ctime): a name added to or removed from the tree behind the engine's back changes them (ctime
  cannot be set back), and the tree is made again.
- *One user at a time.* An exclusive ``flock`` on the tree's lock file is held from before the
  manifest is read until the action is over (a bind mount shows later changes). An action whose
  tree is held (a second build running the same link) stages its inputs one by one instead; a
  process that dies lets go of its lock with it.

An action with fewer than ``TREE_MIN`` inputs under input-only directories (a compile) stages
them one by one as before: its tree would cost more to keep than its links do.
"""
from __future__ import annotations

import errno
import fcntl
import marshal
import os
import posixpath
import stat
from typing import Collection, Iterable, Mapping

from blake3 import blake3

from .errors import SandboxSpecError
from .inputs import link_all, make_parents, parent_dirs, writable_dirs
from .pool import rmtree

# `<pool base>/trees/`: named without an owner's pid, so `reclaim_stale` leaves it alone
TREES_DIR = "trees"
# From this many inputs under input-only directories an action's inputs are a prepared tree.
TREE_MIN = 256
_MANIFEST = "manifest"
_FORMAT = 1

# {action-relative path: (its source's st_dev, st_ino)}: the entry is a hard link to that inode, so
# a source with the same identity holds the same bytes, whatever its path; {directory ("" the
# root): (st_ino, st_mtime_ns, st_ctime_ns)}
Files = dict[str, tuple[int, int]]
Dirs = dict[str, tuple[int, int, int]]


class HeldTree:
    """A prepared tree, complete and locked for one run of its action (`release` after it).

    ``mounts``: the action-relative directories the action sees from the tree, each bound from
    ``<root>/<d>`` (``source``); ``rels``: the inputs the tree holds; ``loose``: the action's
    other inputs (in directories it may write), staged one by one."""

    def __init__(self, key: str, root: str, lock_fd: int, mounts: list[str], rels: set[str],
                 loose: dict[str, str], restaged: int) -> None:
        self.key = key
        self.root = root
        self.mounts = mounts
        self.rels = rels
        self.loose = loose
        self.restaged = restaged  # entries linked in this preparation (tests and measurements)
        self._lock_fd: int | None = lock_fd

    def source(self, d: str) -> str:
        """The host directory bound at the action-relative directory ``d``."""
        return f"{self.root}/{d}"

    def inside(self, d: str) -> str:
        """``source(d)`` relative to the pool's base, the directory above the trees (where a
        worker's executor finds it)."""
        return f"{TREES_DIR}/{self.key}/root/{d}"

    def host_path(self, rel: str) -> str | None:
        """Where the input ``rel`` lies on the host when the tree holds it, else None."""
        return f"{self.root}/{rel}" if rel in self.rels else None

    def release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # lets go of the flock
            self._lock_fd = None


def tree_key(label: str, outputs: Iterable[str], root: str | None, out_dir: str | None) -> str:
    """The action a tree belongs to: its label, outputs and the directory it builds in."""
    text = "\0".join([label, *sorted(outputs), root or "", out_dir or ""])
    return blake3(text.encode("utf-8", "surrogateescape")).hexdigest()[:32]  # the store's hash: no OpenSSL to load


def split(inputs: Mapping[str, str], outputs: Collection[str], cwd: str) -> tuple[list[str], dict[str, str]]:
    """(the input-only directories that hold inputs, each input under one of them -> its source):
    the directories `readonly_paths` mounts whole, in one pass. ``inputs``' paths are normalised."""
    writable = writable_dirs(outputs, cwd)
    mounts: dict[str, None] = {}
    held: dict[str, str] = {}
    last = "\0"  # the mount the previous input was under: most of a link's inputs share one
    for rel, src in inputs.items():
        if rel.startswith(last):
            held[rel] = src
            continue
        i = rel.find("/")
        while i != -1:
            d = rel[:i]
            if d not in writable:
                if rel not in outputs:
                    mounts[d] = None
                    held[rel] = src
                    last = d + "/"
                break
            i = rel.find("/", i + 1)
    return list(mounts), held


class InputTrees:
    """The prepared trees under ``base`` (``<pool base>/trees``)."""

    def __init__(self, base: str, min_inputs: int = TREE_MIN) -> None:
        self.base = base  # made with the first tree
        self.min_inputs = min_inputs

    def hold(self, key: str, inputs: Mapping[str, str], outputs: Collection[str], cwd: str,
             ids: Mapping[str, tuple[int, int]] | None = None) -> HeldTree | None:
        """The tree of action ``key`` made to hold exactly its inputs under input-only directories,
        locked; None when the action has too few of them, when another run holds the tree, or when
        its inputs cannot be hard links (a directory, another file system): then the caller stages
        every input one by one. ``inputs``' paths are normalised; ``ids``: sources' identities the
        caller took (`SandboxSpec.input_ids`), each a regular file's, used instead of a stat."""
        if len(inputs) < self.min_inputs:
            return None
        mounts, held = split(inputs, outputs, cwd)
        if len(held) < self.min_inputs:
            return None
        home = f"{self.base}/{key}"
        try:
            os.makedirs(home, exist_ok=True)
            fd = os.open(f"{home}/lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return None
        try:
            restaged = _prepare(home, held, ids or {})
        except (OSError, SandboxSpecError):  # a full disk, a source gone: stage one by one, which says why
            restaged = None
        except BaseException:
            os.close(fd)
            raise
        if restaged is None:
            os.close(fd)
            return None
        loose = {rel: src for rel, src in inputs.items() if rel not in held}
        return HeldTree(key, f"{home}/root", fd, mounts, set(held), loose, restaged)


def discard_trees(base: str, used_before: float | None = None) -> int:
    """Remove the prepared trees under ``base`` that no run holds (and, with ``used_before``,
    whose manifest was last written before that time); the number removed. A tree costs its
    action one staging to make again; it holds links to store copies, whose bytes it keeps."""
    try:
        keys = os.listdir(base)
    except OSError:
        return 0
    removed = 0
    for key in keys:
        home = f"{base}/{key}"
        try:
            fd = os.open(f"{home}/lock", os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            fd = None  # no lock file: a tree its engine never finished setting up
        try:
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if used_before is not None:
                try:
                    if os.stat(f"{home}/{_MANIFEST}").st_mtime >= used_before:
                        continue
                except FileNotFoundError:
                    pass
            rmtree(home)
            removed += 1
        except OSError:  # held by a running build
            continue
        finally:
            if fd is not None:
                os.close(fd)
    return removed


def _prepare(home: str, want: Mapping[str, str], ids: Mapping[str, tuple[int, int]]) -> int | None:
    """Make ``<home>/root`` hold exactly ``want`` (the caller holds the lock); the number of
    entries linked, or None when the inputs cannot be a tree (the tree is then removed)."""
    root = f"{home}/root"
    manifest = f"{home}/{_MANIFEST}"
    known = _read(manifest)
    if known is not None and not _dirs_hold(root, known[1]):
        known = None
    try:
        os.unlink(manifest)  # from here until the new one is written, the tree is not complete
    except FileNotFoundError:
        pass
    if known is not None:
        try:
            done = _update(root, known, want, ids)
            if done is not None:
                return done
        except OSError:
            pass
    rmtree(root)  # no manifest, a changed directory, or an update that failed: start from nothing
    try:
        os.mkdir(root)
        done = _update(root, ({}, {"": (0, 0, 0)}), want, ids)
    except OSError:
        done = None
    if done is None:
        rmtree(root)
    return done


def _update(root: str, known: tuple[Files, Dirs], want: Mapping[str, str],
            ids: Mapping[str, tuple[int, int]]) -> int | None:
    """Bring ``root`` from ``known`` to ``want``, then write the manifest; the number of entries
    linked, or None when a source is not a file that can be hard-linked here. ``ids``: sources'
    identities already known (regular files), which spare their stats."""
    files, old_dirs = known
    now: Files = {}
    redo: list[tuple[str, str]] = []
    for rel, src in want.items():
        entry = ids.get(src)
        if entry is None:
            st = os.stat(src)
            if not stat.S_ISREG(st.st_mode):
                return None
            entry = (st.st_dev, st.st_ino)
        now[rel] = entry
        if files.get(rel) != entry:
            redo.append((rel, src))
    for rel in files.keys() - now.keys():
        _unlink(f"{root}/{rel}")
    new_dirs = set(old_dirs) - {""} if now.keys() == files.keys() else parent_dirs(now)
    for d in sorted(old_dirs.keys() - new_dirs - {""}, key=len, reverse=True):  # children first
        os.rmdir(f"{root}/{d}")
    made = set(old_dirs.keys() & new_dirs)
    links: list[tuple[str, str, str]] = []
    for rel, src in redo:
        dst = f"{root}/{rel}"
        if rel in files:
            _unlink(dst)
        make_parents(root, rel, made)
        links.append((rel, src, dst))
    try:
        link_all(links, "", os.link)
    except OSError as e:
        if e.errno in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.EACCES, errno.ENOTSUP):
            return None  # a copy would not follow its source: stage one by one
        raise
    dirs: Dirs = {}
    for d in new_dirs | {""}:
        st = os.lstat(f"{root}/{d}" if d else root)
        dirs[d] = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
    _write(f"{posixpath.dirname(root)}/{_MANIFEST}", now, dirs)
    return len(redo)


def _dirs_hold(root: str, dirs: Dirs) -> bool:
    """Whether every directory of the tree is as the manifest recorded it (no name added or
    removed since): one ``lstat`` per directory."""
    for d, sig in dirs.items():
        try:
            st = os.lstat(f"{root}/{d}" if d else root)
        except OSError:
            return False
        if (st.st_ino, st.st_mtime_ns, st.st_ctime_ns) != sig or not stat.S_ISDIR(st.st_mode):
            return False
    return "" in dirs


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _read(path: str) -> tuple[Files, Dirs] | None:
    try:
        with open(path, "rb") as f:
            data = marshal.loads(f.read())  # whole: `marshal.load` reads a file in small pieces
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not (isinstance(data, tuple) and len(data) == 3 and data[0] == _FORMAT):
        return None
    files, dirs = data[1], data[2]
    if not (isinstance(files, dict) and isinstance(dirs, dict)):
        return None
    for value in files.values():
        if not (isinstance(value, tuple) and len(value) == 2):
            return None
    return files, dirs


def _write(path: str, files: Files, dirs: Dirs) -> None:
    """The manifest, whole or not at all: a temporary file renamed over the name."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(marshal.dumps((_FORMAT, files, dirs), 4))
    os.replace(tmp, path)
