"""`WorkerCas`: a remote worker's own cache of the server's blobs, as plain read-only files.

A worker runs many actions of the same build, whose inputs overlap (every compile of a package
reads the same headers): each blob is downloaded once, verified against its digest, and kept as
a file named by its remote digest under `$MCPP_HOME/worker/cas/`. The sandbox stages inputs by
hard-linking such files, as a local build does from the materialization area, so staging an
input that is already here costs a link, not a copy.

Names: a file's path is built from a `RemoteDigest` only, and every `RemoteDigest` is well
formed (hex of its function's length, a non-negative size: `digests.RemoteDigest`), so no
digest a client or server sends can name a file outside this directory.

Trust: a file here is used only in a state this process has verified. A blob it downloads is
checked against its digest before it is written; a file it finds on disk (left by an earlier
run, or changed since) is re-hashed before its first use. What was verified is remembered as the
file's identity (device, inode, size, mtime, mode), so each later use costs one `lstat`; a file
whose `lstat` differs is re-hashed, and one whose bytes no longer match is removed and
downloaded again (`healed` counts those).

Files are written to a temporary name and renamed, so a worker killed mid-download leaves no
partial blob under a digest's name (a leftover temporary file is only litter). Executable
inputs get a second file (`<hash>-<size>.x`, mode 0555): a hard link shares its mode with
every other link of the file.
"""
from __future__ import annotations

import os
import shutil
import stat
import threading
from pathlib import Path
from typing import Iterable

from .client import RemoteClient
from .digests import RemoteDigest
from .store import RemoteCorrupt

FILE_MODE = 0o444
EXEC_MODE = 0o555


class WorkerCas:
    def __init__(self, root: str | os.PathLike[str], client: RemoteClient) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.client = client
        self.healed = 0  # entries found changed on disk and replaced (racy increments only lose a count)
        # path -> the identity of the file when its bytes were last verified to be its digest's
        self._verified: dict[str, tuple[int, ...]] = {}

    def path(self, d: RemoteDigest, executable: bool = False) -> str:
        if type(d) is not RemoteDigest:  # a well-formed digest, never a string from the wire
            raise TypeError(f"WorkerCas names files by RemoteDigest, not {type(d).__name__}")
        return str(self.root / d.hash[:2] / f"{d.hash}-{d.size}{'.x' if executable else ''}")

    def has(self, d: RemoteDigest) -> bool:
        """Whether `d`'s file is here and verified to hold its bytes."""
        return self._holds(self.path(d), d, FILE_MODE)

    def ensure(self, digests: Iterable[RemoteDigest]) -> int:
        """Make every blob here and verified, downloading (and verifying) those that are not;
        answers how many were downloaded."""
        missing = [d for d in dict.fromkeys(digests) if not self.has(d)]
        if not missing:
            return 0
        fn = self.client.digest_function
        for d, data in self.client.download(missing).items():
            reason = fn.mismatch(d, data)
            if reason:
                raise RemoteCorrupt(d, reason)
            self._write(self.path(d), data, FILE_MODE)
        return len(missing)

    def read(self, d: RemoteDigest) -> bytes:
        self.ensure([d])
        with open(self.path(d), "rb") as f:
            return f.read()

    def staged(self, d: RemoteDigest, executable: bool) -> str:
        """A verified file holding `d`'s bytes with the right mode (`ensure` it first)."""
        if not executable:
            return self.path(d)
        x = self.path(d, executable=True)
        if not self._holds(x, d, EXEC_MODE):
            self._write(x, self.read(d), EXEC_MODE)
        return x

    # --- internals ------------------------------------------------------------------------

    def _holds(self, path: str, d: RemoteDigest, mode: int) -> bool:
        """True when `path` is a regular file with `mode` whose bytes are `d`'s: proven by its
        identity matching a verification of this process, else by hashing it. A file that
        fails is removed (the caller downloads or re-creates it)."""
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return False
        ident = _identity(st)
        if self._verified.get(path) == ident:
            return True
        ok = (stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == mode and st.st_size == d.size
              and self.client.digest_function.of_file(path) == d)
        if ok and _identity(os.lstat(path)) == ident:  # unchanged while it was hashed
            self._verified[path] = ident
            return True
        self.healed += 1
        self._verified.pop(path, None)
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except IsADirectoryError:
            shutil.rmtree(path, ignore_errors=True)
        return False

    def _write(self, path: str, data: bytes, mode: int) -> None:
        """Publish verified bytes under `path` and remember the file as verified."""
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}"
        with open(tmp, "wb") as f:
            f.write(data)
            os.fchmod(f.fileno(), mode)
        os.replace(tmp, path)
        self._verified[path] = _identity(os.lstat(path))


def _identity(st: os.stat_result) -> tuple[int, ...]:
    """What changes when a file is replaced, rewritten or re-moded (not its ctime: every hard
    link that stages the file changes that)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode)
