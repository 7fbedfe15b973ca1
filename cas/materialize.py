"""The materialization area: decompressed, read-only copies of blobs to hard-link from.

Sandboxes need an action's inputs as plain files, and `target/` needs outputs as plain files.
Decompressing a blob for every use would cost a write per use; instead each blob is written out
once, as `<$MCPP_HOME>/mat/<2hex>/<rest>` (`.x` appended for the executable variant, because
the mode belongs to the inode and every hard link shares it), and users hard-link to it.

Why hard links and never symlinks: a symlink leaks the cache's absolute path into the action
(compilers record resolved paths in debug info and depfiles, breaking byte-identical outputs)
and lets a sandboxed tool follow it out of the sandbox; a hard link is an ordinary file.

Why read-only (0444, 0555 for executables): every hard link shares one inode, so a tool that
wrote through one link would silently change every build that uses the blob. Read-only makes
such a write fail loudly, and the sandboxes make it impossible from an action (bwrap mounts
staged inputs read-only; dir stages copies). A file that was changed anyway (its size or mode
differs) is re-created from the store on next use; one whose bytes changed at the same size and
mode is caught where its bytes are read in full: `copy_into` (restoring outputs into `target/`)
hashes what it copied and re-creates the entry from the verified blob on a mismatch, and
`mcpp cache verify` re-hashes every entry (cas/maintenance.py).

Creation is atomic (`atomic.publish`: an unnamed inode linked under the final name; a tampered
entry is replaced with temp file + `os.replace`) so concurrent builds can materialize the same
blob. Where a hard link is impossible (another file system: EXDEV; too many links: EMLINK; a file
system without links: EPERM/ENOTSUP) `link_into` copies instead.
"""
from __future__ import annotations

import errno
import os
import shutil
import stat as stat_mod
from typing import TYPE_CHECKING, Literal

import blake3

from .atomic import publish, read_all, temp_name
from .blobstore import BlobStore
from .digest import Digest, digest_file
from .home import shard, temp_file, unlink_quietly

if TYPE_CHECKING:
    from typing_extensions import Buffer

FILE_MODE = 0o444
EXEC_MODE = 0o555
# Blobs up to this size are fetched with one `get`; larger ones are streamed through `open`.
_SMALL = 1 << 20
_CHUNK = 1 << 20
_NO_LINK = {errno.EXDEV, errno.EMLINK, errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP}


class Materializer:
    """Materializes blobs of `store` under `root` (normally `$MCPP_HOME/mat`)."""

    def __init__(self, store: BlobStore, root: str | os.PathLike[str]) -> None:
        self.store = store
        self.root = os.fspath(root)
        # Counters the engine may report (plain ints; racy increments only lose a count).
        self.created = 0
        self.linked = 0
        self.copied = 0
        self.unchanged = 0
        self.repaired = 0  # entries whose bytes no longer matched their digest

    def path(self, d: Digest, executable: bool = False) -> str:
        """The materialized file for `d`, created (or re-created if tampered with) on demand.

        Raises `BlobNotFound`/`CorruptBlob` from the store, leaving nothing behind.
        """
        return self._ensure(d, executable)[0]

    def publish_file(self, d: Digest, path: str | os.PathLike[str], executable: bool = False,
                     seen: dict[str, tuple[int, int]] | None = None) -> str | None:
        """Fill the area's entry for `d` from a local file believed to hold those bytes (a fresh
        output, a source), without a round trip through the compressed store; the bytes are
        hashed while copied and published only if they really are `d`. Returns the area path,
        or None when the file no longer matches (the caller then goes through the store).

        Building this copy in the worker that produced the file keeps it off the critical path:
        the link that stages a thousand objects finds them all ready.

        `seen`: where an entry already there is returned, its `(st_dev, st_ino)`, from the stat
        that checked it, is put there under the area path (a prepared tree links by identity:
        sandbox/input_tree.py, then needs no stat of its own).
        """
        p = self._mat_path(d, executable)
        mode = EXEC_MODE if executable else FILE_MODE
        try:
            st = os.stat(p)
            if st.st_size == d.size and stat_mod.S_IMODE(st.st_mode) == mode:
                if seen is not None and stat_mod.S_ISREG(st.st_mode):
                    seen[p] = (st.st_dev, st.st_ino)
                return p
        except FileNotFoundError:
            pass
        if d.size <= _SMALL:
            # Read whole, checked, then published as one unnamed inode linked in place (no
            # temp name to remove): every source a clean build stages comes through here.
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                data = read_all(fd, d.size)
            finally:
                os.close(fd)
            if len(data) != d.size or blake3.blake3(data).hexdigest() != d.hash:
                return None
            publish(p, [data], perms=mode)
            self.created += 1
            return p
        fd, tmp = temp_file(os.path.dirname(p))
        hasher = blake3.blake3()
        size = 0
        try:
            with open(fd, "wb") as out, open(path, "rb") as src:
                while chunk := src.read(_CHUNK):
                    hasher.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
                os.fchmod(out.fileno(), mode)
            if hasher.hexdigest() != d.hash or size != d.size:
                unlink_quietly(tmp)
                return None
            try:
                os.link(tmp, p)  # link, not rename: see `_create`
            except FileExistsError:
                pass
            unlink_quietly(tmp)
        except BaseException:
            unlink_quietly(tmp)
            raise
        self.created += 1
        return p

    def publish_bytes(self, d: Digest, data: Buffer, executable: bool = False) -> str:
        """Fill the area's entry for `d` from `data`, bytes the caller hashed to `d` itself (an
        output it just read for its key): no second read and no second hash."""
        p = self._mat_path(d, executable)
        mode = EXEC_MODE if executable else FILE_MODE
        try:
            st = os.stat(p)
            if st.st_size == d.size and stat_mod.S_IMODE(st.st_mode) == mode:
                return p
            self._create(d, p, mode, replace=True, data=data)  # tampered with: replace it
            return p
        except FileNotFoundError:
            pass
        if publish(p, [data], perms=mode):
            self.created += 1
        return p

    def copy_into(self, d: Digest, dest: str | os.PathLike[str], executable: bool = False) -> None:
        """Make `dest` an independent copy of the blob (atomically replacing it), read-only like
        an output the build just produced (engine/exec/pipeline.py), so an action reading it in place
        under `--sandbox off` sees the mode a staged input has.

        For `target/`: a file there must not share its inode with the area, because every
        sandbox that stages the blob adds a link, which changes the inode's ctime, which would
        make the stat cache and the no-op fast path distrust an unchanged output.
        """
        dest = os.fspath(dest)
        # A blob read whole: its bytes are read once, hashed and written from memory (a copy,
        # then a second read to hash it, is twice the I/O on the restore path).
        data = self.copy_bytes(d, executable)
        if data is not None:
            write_copy(data, dest, EXEC_MODE if executable else FILE_MODE)
            return
        directory = os.path.dirname(dest) or "."
        os.makedirs(directory, exist_ok=True)
        src = self._ensure(d, executable)[0]
        tmp = temp_name(directory)
        try:
            shutil.copyfile(src, tmp)
            if not _holds(tmp, d):  # the area's file was changed in place: take the store's bytes
                self.repaired += 1
                self._create(d, src, EXEC_MODE if executable else FILE_MODE, replace=True)
                shutil.copyfile(src, tmp)
            os.chmod(tmp, EXEC_MODE if executable else FILE_MODE)
            os.replace(tmp, dest)
        except BaseException:
            unlink_quietly(tmp)
            raise
        self.copied += 1

    def copy_bytes(self, d: Digest, executable: bool = False) -> bytes | None:
        """The verified bytes of a blob small enough to be read whole, for a copy that
        `write_copy` makes (counted as made); None for a larger blob (`copy_into` copies it).
        Raises `StoreError` where neither the area nor the store holds the bytes.

        A blob the area does not hold is taken from the store's (verified) bytes without
        being materialized: the engine materializes only what sandboxes stage (a depfile is
        restored, never staged), and a sandbox that stages it later makes the copy then."""
        if d.size > _SMALL:
            return None
        mode = EXEC_MODE if executable else FILE_MODE
        src = self._mat_path(d, executable)
        data = _read_entry(src, d.size, mode)
        if data is None:  # not materialized: nothing stages it
            data = self.store.get(d)
        elif data is False or blake3.blake3(data).hexdigest() != d.hash:
            # The area's entry was changed (bytes, mode, a link, a FIFO): the store's verified bytes.
            self.repaired += 1
            data = self.store.get(d)
            self._create(d, src, mode, replace=True, data=data)
        self.copied += 1
        return data

    def link_into(self, d: Digest, dest: str | os.PathLike[str], executable: bool = False) -> None:
        """Make `dest` a hard link to (or, across devices, a copy of) the materialized blob.

        An existing `dest` is replaced atomically (link under a temp name, then `os.replace`), so
        a concurrent reader sees either the old file or the new one, never none. A `dest` that is
        already the materialized inode is left alone (the common case of a no-op build).
        """
        dest = os.fspath(dest)
        src, src_st = self._ensure(d, executable)
        try:
            if os.path.samestat(src_st, os.stat(dest, follow_symlinks=False)):
                self.unchanged += 1
                return
        except FileNotFoundError:
            pass
        directory = os.path.dirname(dest) or "."
        tmp = temp_name(directory)
        try:
            self._link_or_copy(src, tmp, d, executable)
            os.replace(tmp, dest)
        except BaseException:
            unlink_quietly(tmp)
            raise

    # --- internals ------------------------------------------------------------------------

    def _mat_path(self, d: Digest, executable: bool) -> str:
        return shard(self.root, d.hash, ".x" if executable else "")

    def _ensure(self, d: Digest, executable: bool) -> tuple[str, os.stat_result]:
        p = self._mat_path(d, executable)
        mode = EXEC_MODE if executable else FILE_MODE
        tampered = False
        try:
            st = os.stat(p)
            if st.st_size == d.size and stat_mod.S_IMODE(st.st_mode) == mode:
                return p, st
            tampered = True
        except FileNotFoundError:
            pass
        self._create(d, p, mode, replace=tampered)
        return p, os.stat(p)

    def _create(self, d: Digest, p: str, mode: int, replace: bool, data: Buffer | None = None) -> None:
        """Write the blob (or `data`, its bytes) out and publish it at `p`.

        A new file is published with `link` rather than `rename` (`atomic.publish`): renaming
        over a file that a concurrent builder is hard-linking from drops the old inode's link
        count to zero, and Linux then fails that builder's `link(2)` with ENOENT although the
        name never went away. Only a tampered file (wrong size or mode) is replaced.
        """
        if not replace and (data is not None or d.size <= _SMALL):
            publish(p, [data if data is not None else self.store.get(d)], perms=mode)
            self.created += 1
            return
        fd, tmp = temp_file(os.path.dirname(p))
        try:
            with open(fd, "wb") as out:
                if data is not None:
                    out.write(data)
                elif d.size <= _SMALL:
                    out.write(self.store.get(d))
                else:
                    with self.store.open(d) as src:
                        shutil.copyfileobj(src, out, _CHUNK)
                os.fchmod(out.fileno(), mode)
            if replace:
                os.replace(tmp, p)
            else:
                try:
                    os.link(tmp, p)
                except FileExistsError:
                    pass  # another builder published the same bytes first
                unlink_quietly(tmp)
        except BaseException:
            unlink_quietly(tmp)
            raise
        self.created += 1

    def _link_or_copy(self, src: str, tmp: str, d: Digest, executable: bool) -> None:
        for attempt in range(3):
            try:
                os.link(src, tmp)
                self.linked += 1
                return
            except FileNotFoundError:
                # Either dest's directory is missing or `gc` removed the materialized file
                # between `_ensure` and here; fix whichever it is and retry.
                if attempt == 2:
                    raise
                os.makedirs(os.path.dirname(tmp) or ".", exist_ok=True)
                src = self._ensure(d, executable)[0]
            except OSError as e:
                if e.errno not in _NO_LINK:
                    raise
                shutil.copyfile(src, tmp)
                os.chmod(tmp, EXEC_MODE if executable else FILE_MODE)
                self.copied += 1
                return


def write_copy(data: bytes, dest: str, mode: int) -> None:
    """Make `dest` a new file of `data` with `mode`, atomically replacing what is there: a
    temporary file beside it (its directory made where missing), written, then renamed over it.
    Touches only those two names, so it may run on another thread than the one that read the
    bytes (engine/exec/restore_writer.py)."""
    fd, tmp = temp_file(os.path.dirname(dest) or ".")
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.replace(tmp, dest)
    except BaseException:
        unlink_quietly(tmp)
        raise


def _read_entry(path: str, size: int, mode: int) -> bytes | None | Literal[False]:
    """An area entry's bytes when it is a regular file of `size` bytes and mode `mode`; None when
    there is none; False when something else holds the name. Opened without following a link and
    without blocking (a FIFO), checked before it is read, and read no further than `size`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError:  # a symlink (ELOOP), an unreadable mode (EACCES), ...
        return False
    try:
        st = os.fstat(fd)
        if not stat_mod.S_ISREG(st.st_mode) or st.st_size != size or stat_mod.S_IMODE(st.st_mode) != mode:
            return False
        chunks, left = [], size
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                return False
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def file_digest_matches(path: str | os.PathLike[str], d: Digest) -> bool:
    """Whether the file at `path` holds exactly the bytes of `d` (hashed in full)."""
    return _holds(os.fspath(path), d)


def _holds(path: str, d: Digest) -> bool:
    return digest_file(path) == d

