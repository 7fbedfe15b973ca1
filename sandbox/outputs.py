"""Taking an action's declared outputs out of its directory, without following any symlink.

The action controls every name in its directory. Had it left a declared output, or a directory
above one, as a symlink (to ``/etc/shadow``, to a host directory), a plain ``rename`` or
``open`` of ``<action dir>/<output>`` would follow it: the engine would read a host file into
the store, move a host file out of its directory into ``target/``, or let a later build write
through the link. So each output is reached from a descriptor of the action directory, one
component at a time, with ``O_NOFOLLOW``: every directory on the way must be a real directory
inside the action's own tree, and the output itself a regular file with no other name (a hard
link would be a host file's inode under a name inside the directory). It is then renamed
relative to the descriptor of its parent, so nothing outside the action directory is ever
read, moved or written. Anything else is refused with an error naming the action and the path
(``BadOutput``); nothing is collected then.

Only declared outputs leave the directory; everything else the action wrote is removed with it.
"""
from __future__ import annotations

import errno
import os
import posixpath
import shutil
import stat
import sys
from typing import Callable, Collection, Iterable

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class BadOutput(Exception):
    """A declared output that is not a regular file inside the action's own directory."""

    def __init__(self, rel: str, why: str) -> None:
        super().__init__(f"output {rel}: {why}")
        self.rel = rel


def bad_output_message(label: str, e: BadOutput) -> bytes:
    return (f"error: action {label}: {e}\nnote: an output must be a regular file the action "
            "wrote inside its own directory; symbolic links are refused\n").encode()


def _open_parent(root_fd: int, rel: str) -> int:
    """A descriptor of ``rel``'s parent directory, reached without following a symlink: in one
    ``openat2`` where the kernel has it, else (and to name what is wrong) a component at a time."""
    parent = posixpath.dirname(rel)
    if not parent:
        return os.dup(root_fd)
    fd = _beneath.open_dir(root_fd, parent)
    return fd if fd is not None else _walk_to_parent(root_fd, rel)


class _Beneath:
    """``openat2(dir_fd, path, O_DIRECTORY, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`` (Linux 5.6):
    a path below a directory opened in one system call, refusing a symlink anywhere on the way
    and any way out (`..`, an absolute path, a magic link), where the walk below costs an open
    and a close per component (a compile's object sits seven levels down: bench/RESULTS.md).
    Python has no binding for it; ctypes is loaded on the first call, not at start-up."""

    _NR = 437  # the same on every architecture (the unified syscall table)
    _RESOLVE = 0x02 | 0x04 | 0x08  # NO_MAGICLINKS | NO_SYMLINKS | BENEATH

    def __init__(self) -> None:
        self._call: Callable[[int, str], int] | None = None
        self.works = sys.platform.startswith("linux")

    def open_dir(self, dir_fd: int, path: str) -> int | None:
        """A descriptor of the directory, or None: refused or failed (the caller walks, which
        says why), or no openat2 here (seccomp, an old kernel: never tried again)."""
        if not self.works:
            return None
        if self._call is None:
            self._call = self._load()
        fd = self._call(dir_fd, path)
        return fd if fd >= 0 else None

    def _load(self) -> Callable[[int, str], int]:
        import ctypes

        class OpenHow(ctypes.Structure):
            _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]

        libc = ctypes.CDLL(None, use_errno=True)
        syscall = libc.syscall
        syscall.restype = ctypes.c_long
        how = OpenHow(_DIR_FLAGS, 0, self._RESOLVE)
        size = ctypes.sizeof(how)

        def call(dir_fd: int, path: str) -> int:
            fd: int = syscall(ctypes.c_long(self._NR), ctypes.c_int(dir_fd), os.fsencode(path), ctypes.byref(how),
                              ctypes.c_size_t(size))
            if fd < 0 and ctypes.get_errno() in (errno.ENOSYS, errno.EPERM, errno.E2BIG, errno.EINVAL):
                self.works = False
            return fd

        return call


_beneath = _Beneath()


def _walk_to_parent(root_fd: int, rel: str) -> int:
    """``_open_parent`` one component at a time, each opened with ``O_NOFOLLOW``."""
    fd = os.dup(root_fd)
    try:
        parts = rel.split("/")[:-1]
        for i, name in enumerate(parts):
            try:
                nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as e:
                where = "/".join(parts[: i + 1])
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    kind = "a symbolic link" if _is_link(fd, name) else "not a directory"
                    raise BadOutput(rel, f"{where} is {kind}") from None
                raise
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _produced(root_fd: int, rel: str, parents: dict[str, int]) -> int | None:
    """The descriptor of ``rel``'s parent when ``rel`` is what the action was to leave there: a
    regular file, or for a tree output (``rel`` ends in ``/``) a real directory, moved whole (what
    it holds is checked when it is stored: cas/tree.py refuses links that leave it). None when
    the action did not produce it; ``BadOutput`` when it is anything else. ``parents``: the
    descriptors opened so far, by directory (a compile's object and depfile share one, reached
    once); the caller closes them."""
    tree = rel.endswith("/")
    name = rel.rstrip("/")
    where = posixpath.dirname(name)
    parent = parents.get(where)
    if parent is None:
        try:
            parent = parents[where] = _open_parent(root_fd, name)
        except FileNotFoundError:
            return None
    try:
        st = os.stat(posixpath.basename(name), dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if not (stat.S_ISDIR if tree else stat.S_ISREG)(st.st_mode):
        if stat.S_ISLNK(st.st_mode):
            kind = "a symbolic link"
        else:
            kind = "not a directory" if tree else "not a regular file"
        raise BadOutput(rel, f"is {kind}" + (" (an output ending in `/` is a directory)" if tree else ""))
    if not tree and st.st_nlink != 1:  # another name for a file the action did not write (a host file, say)
        raise BadOutput(rel, f"is a hard link ({st.st_nlink} names)")
    return parent


def _take(outputs: Iterable[str], root: str, dest_of: Callable[[str], str]) -> dict[str, str]:
    """Check every output first (an error leaves everything in place), then move each. An output
    ending in `/` is a directory (a tree output), moved whole."""
    root_fd = os.open(root, _DIR_FLAGS)
    found: list[tuple[str, int]] = []
    parents: dict[str, int] = {}
    try:
        for rel in outputs:
            parent = _produced(root_fd, rel, parents)
            if parent is not None:
                found.append((rel, parent))
        collected: dict[str, str] = {}
        for rel, parent in found:
            dst = dest_of(rel).rstrip("/")
            name = posixpath.basename(rel.rstrip("/"))
            if rel.endswith("/") and os.path.isdir(dst) and not os.path.islink(dst):
                shutil.rmtree(dst)  # an older tree at the destination: replaced whole
            try:
                try:
                    os.rename(name, dst, src_dir_fd=parent)
                except FileNotFoundError:  # the destination's directory is not there (yet)
                    os.makedirs(posixpath.dirname(dst), exist_ok=True)
                    os.rename(name, dst, src_dir_fd=parent)
            except OSError as e:
                if e.errno != errno.EXDEV:
                    raise
                if rel.endswith("/"):
                    _copy_tree_out(parent, name, dst)
                else:
                    _copy_out(parent, name, dst)
            collected[rel] = dst
        return collected
    finally:
        for parent in parents.values():
            os.close(parent)
        os.close(root_fd)


def _copy_out(parent: int, name: str, dst: str) -> None:
    """Another file system: copy from the checked file itself, never through its name again."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    with open(fd, "rb") as src, open(dst, "wb") as out:
        shutil.copyfileobj(src, out, 1 << 20)
        os.fchmod(out.fileno(), stat.S_IMODE(os.fstat(src.fileno()).st_mode))
    os.unlink(name, dir_fd=parent)


def _copy_tree_out(parent: int, name: str, dst: str) -> None:
    """Another file system: copy the directory without following any link in it."""
    fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
    try:
        shutil.copytree(f"/proc/self/fd/{fd}", dst, symlinks=True)
    finally:
        os.close(fd)
    shutil.rmtree(name, dir_fd=parent)


def collect_flat(outputs: Iterable[str], root: str, results: str, tag: str) -> dict[str, str]:
    """Move each produced output to ``<results>/<tag>-<i>-<basename>``; absent ones are left
    out. ``tag`` (the action directory's name) makes the names unique across actions."""
    index = {rel: i for i, rel in enumerate(outputs)}
    return _take(index, root, lambda rel: f"{results}/{tag}-{index[rel]}-{posixpath.basename(rel.rstrip('/'))}")


def collect_outputs(outputs: Iterable[str], root: str, out_dir: str) -> dict[str, str]:
    """Move each produced output from ``root`` to ``out_dir``; absent ones are left out.
    ``out_dir``'s directories are the engine's own, made before the action ran (a directory
    removed since is made again when the move does not find it)."""
    return _take(outputs, root, lambda rel: f"{out_dir}/{rel}")


def undeclared_outputs(root: str, outputs: Iterable[str], staged: Iterable[str],
                       existing: Collection[str] = ()) -> list[str]:
    """Files and directories the action left beside its declared outputs (in the directories
    that hold them) that are neither outputs nor staged inputs: they are not kept, and the
    caller reports them, so an action that writes more than it declares is told so rather than
    losing the file in silence. One ``scandir`` per directory of outputs, never a walk.
    ``existing``: directories the action directory held before the action ran."""
    outputs = list(outputs)
    declared: set[str] = set(existing)
    parents: set[str] = set()
    for rel in outputs + list(staged):
        rel = rel.rstrip("/")
        declared.add(rel)
        parent = posixpath.dirname(rel)
        while parent and parent not in declared:  # the directories above a declared file
            declared.add(parent)
            parent = posixpath.dirname(parent)
    for rel in outputs:
        if not rel.endswith("/"):
            parents.add(posixpath.dirname(rel))
    found: list[str] = []
    for parent in sorted(parents):
        try:
            entries = list(os.scandir(os.path.join(root, parent) if parent else root))
        except OSError:
            continue
        for entry in entries:
            rel = posixpath.join(parent, entry.name) if parent else entry.name
            if rel not in declared:
                found.append(rel + ("/" if entry.is_dir(follow_symlinks=False) else ""))
    return sorted(found)


def undeclared_outputs_message(label: str, paths: list[str]) -> bytes:
    return "".join(f"warning: action `{label}` wrote {p}, which it does not declare (it is not kept; list it "
                   f"in `outputs`)\n" for p in paths).encode()
