"""Atomic file writes: a reader sees the old file or the whole new one, never a torn one.

Every file mcpp rewrites in place (store entries, the stat cache, build state, the no-op
records, `compile_commands.json`) is written the same way: the bytes go to a temporary file in
the *same directory* (so the rename stays on one file system), which is then renamed over the
final name with `os.replace`. A crash leaves at most a stray temp file, never a partial file
under the final name, and two writers of the same name both succeed (the last rename wins).

A file that is never rewritten once it exists (a store blob, a materialized copy: both named by
their content) is published instead (`publish`): written into an unnamed `O_TMPFILE` inode of
the target directory and given its final name with one `link`. No temporary name exists at any
moment, so a crash or a SIGKILL leaves nothing behind to sweep, and there is no rename to pay
for; a name that already exists means another writer published the same bytes first, which is
success. Where the file system lacks `O_TMPFILE`, a named temp file is linked instead.

Temp files are named `.tmp-<random hex>...` (`TMP_PREFIX`): directory scans of the stores skip
dot files, and `mcpp cache gc` sweeps abandoned ones by that prefix. A file `temp_file` creates is
named `.tmp-<random hex>-<count>`: the random part is drawn once per process (again in a forked
child) and the count is the process's own, so naming it costs no system call (a restore names two
per action). That name can be guessed from an earlier one, which is safe only because `temp_file`
creates it with `O_EXCL`: a name someone else took, a planted symlink included, is skipped, never
opened. `temp_name` hands out a name the caller fills itself (a copy, an install's open()), which
may follow a symlink: each of those is random on its own, as no earlier name tells it.

Nothing here calls `fsync`: every file written this way is a cache or a record whose loss or
damage after a power cut is detected on read (a digest mismatch, a format error) and costs a
re-run, which is cheaper than an fsync per write.

This module uses the standard library's `os` and `itertools` only (both built in): the no-op fast path (engine/state/noop.py) writes
through it before anything else is imported.
"""
from __future__ import annotations

import errno
import itertools
import os

# `typing` stays unimported at run time (see above); mypy reads this block as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from types import TracebackType
    from typing import IO, Any

    from typing_extensions import Buffer

TMP_PREFIX = ".tmp-"
# The creation mode of a store's files (entries, caches, state): owner-only, as
# `tempfile.mkstemp` makes them. Files a user opens (compile_commands.json) pass PUBLIC.
PRIVATE = 0o600
PUBLIC = 0o666  # before the umask, as `open()` creates a file

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


class _TempNames:
    """The names of this process's `temp_file`s: its random prefix and its count."""

    def __init__(self) -> None:
        self.draw()

    def draw(self) -> None:
        self.prefix = f"{TMP_PREFIX}{os.urandom(6).hex()}-"
        self.count = itertools.count()  # next() is atomic: threads never share a number

    def path(self, directory: str) -> str:
        return os.path.join(directory, f"{self.prefix}{next(self.count):x}")


_NAMES = _TempNames()
os.register_at_fork(after_in_child=_NAMES.draw)


def temp_file(directory: str, mode: int = PRIVATE) -> tuple[int, str]:
    """(fd, path) of a new, empty temporary file in `directory` (created on demand)."""
    for _ in range(100):
        path = _NAMES.path(directory)
        try:
            return os.open(path, _FLAGS, mode), path
        except FileExistsError:
            continue
        except FileNotFoundError:
            os.makedirs(directory, exist_ok=True)
    raise FileExistsError(f"no free temporary file name in {directory}")


def temp_name(directory: str) -> str:
    """A temporary name in `directory` that is not created here, for `os.link` (which needs a
    free name) or a copy; random on its own (see the module docstring: a caller's open may follow
    a link planted under a name it could guess), which also keeps concurrent callers apart."""
    return os.path.join(directory, TMP_PREFIX + os.urandom(6).hex())


_TMPFILE = getattr(os, "O_TMPFILE", 0)
# Errors that say "this file system (or kernel) has no O_TMPFILE": fall back to a named temp file.
_NO_TMPFILE = {errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOTSUP}
# Linking an unnamed inode goes through its /proc/self/fd name (linkat with AT_EMPTY_PATH needs
# a capability; following the /proc link does not). `os.link` calls linkat with
# AT_SYMLINK_FOLLOW only when given a directory fd, hence `_proc_fds`.
_tmpfile_works = bool(_TMPFILE) and os.path.isdir("/proc/self/fd")
_proc = (-1, -1)  # (pid, fd of /proc/<pid>/fd): reopened in a forked child


def _proc_fds() -> int:
    global _proc
    pid = os.getpid()
    if _proc[0] != pid:
        _proc = (pid, os.open(f"/proc/{pid}/fd", os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)))
    return _proc[1]


def publish(path: str, chunks: Iterable[Buffer], *, perms: int) -> bool:
    """Create `path` (a content-named file nobody rewrites) holding the concatenated `chunks`
    (bytes-like objects), with mode `perms`, or leave an existing `path` alone. True when this
    call created it. The directory is created on demand.

    One unnamed inode and one `link(2)`: no temp name, no rename (see the module docstring).
    """
    global _tmpfile_works
    directory = os.path.dirname(path) or "."
    if _tmpfile_works:
        try:
            fd = _open_tmpfile(directory)
        except OSError as e:
            if e.errno not in _NO_TMPFILE:
                raise
            _tmpfile_works = False  # remembered: one failed open per process, not one per file
        else:
            try:
                _write_all(fd, chunks, perms)
                os.link(str(fd), path, src_dir_fd=_proc_fds(), follow_symlinks=True)
                return True
            except FileExistsError:
                return False
            finally:
                os.close(fd)
    fd, tmp = temp_file(directory)
    try:
        try:
            _write_all(fd, chunks, perms)
        finally:
            os.close(fd)
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    finally:
        discard(tmp)


def _open_tmpfile(directory: str) -> int:
    flags = _TMPFILE | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0)
    try:
        return os.open(directory, flags, PRIVATE)
    except FileNotFoundError:
        os.makedirs(directory, exist_ok=True)
        return os.open(directory, flags, PRIVATE)


def _write_all(fd: int, chunks: Iterable[Buffer], perms: int) -> None:
    for chunk in chunks:
        view = memoryview(chunk)
        while view:
            view = view[os.write(fd, view):]
    os.fchmod(fd, perms)


def commit(tmp: str, path: str) -> None:
    """Rename a fully written temp file over `path`, creating `path`'s directory if needed."""
    try:
        os.replace(tmp, path)
    except FileNotFoundError:
        if not os.path.exists(tmp):
            raise
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        os.replace(tmp, path)


def discard(tmp: str) -> None:
    """Remove a temp file that will not be committed (it may already be gone)."""
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass


class atomic_file:  # noqa: N801 - used like open()
    """`with atomic_file(path) as f: f.write(...)`: `path` gets the bytes only when the block
    ends without an exception; otherwise the temp file is removed and `path` is untouched.

    `text=True` opens the temp file as UTF-8 text; `mode` is the creation mode (before the
    umask); `perms`, when given, is set on the file before the rename (a read-only blob).
    """

    def __init__(self, path: str, *, text: bool = False, mode: int = PRIVATE, perms: int | None = None) -> None:
        self.path = os.fspath(path)
        self.text = text
        self.mode = mode
        self.perms = perms

    def __enter__(self) -> IO[Any]:
        fd, self.tmp = temp_file(os.path.dirname(self.path) or ".", self.mode)
        try:
            self.file = open(fd, "w" if self.text else "wb", encoding="utf-8" if self.text else None)
        except BaseException:
            os.close(fd)
            discard(self.tmp)
            raise
        return self.file

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        ok = exc_type is None
        try:
            try:
                if ok and self.perms is not None:
                    os.fchmod(self.file.fileno(), self.perms)
            finally:
                self.file.close()
            if ok:
                commit(self.tmp, self.path)
                return
        except BaseException:
            discard(self.tmp)
            raise
        discard(self.tmp)


def read_file(path: str) -> bytes:
    """A file's bytes, whole (a source the planner hashes and scans from the same read; a store
    entry or blob): `open`, `fstat`, the reads, `close`, and none of a file object's others."""
    return read_file_stat(path)[0]


def read_file_stat(path: str) -> tuple[bytes, os.stat_result]:
    """`read_file`, with the `fstat` it took (a store's reader learns the file's mtime free)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        return read_all(fd, st.st_size), st
    finally:
        os.close(fd)


def read_all(fd: int, size: int) -> bytes:
    """Everything left to read from `fd`, expected to be about `size` bytes (its `fstat`): one
    `read` for a file that did not change since, and one more that sees its end. A file
    object's `read()` would add an `fstat`, a terminal test and two seeks: this runs for every
    output and staged source of a build."""
    chunks = []
    want = size + 1
    while chunk := os.read(fd, want):
        chunks.append(chunk)
        want = 1 << 20
    return b"".join(chunks)


def write_atomic(path: str, data: bytes | str, *, mode: int = PRIVATE) -> None:
    """Replace `path`'s content with `data` (str is written as UTF-8) in one rename."""
    with atomic_file(path, mode=mode) as f:
        f.write(data.encode() if isinstance(data, str) else data)


def write_if_changed(path: str, data: bytes, *, mode: int = PUBLIC) -> None:
    """`write_atomic` unless `path` already holds exactly `data`: an unchanged file keeps its
    mtime, so whatever watches it (an editor's language server, a no-op record) sees no change."""
    try:
        with open(path, "rb") as f:
            if f.read() == data:
                return
    except FileNotFoundError:
        pass
    write_atomic(path, data, mode=mode)
