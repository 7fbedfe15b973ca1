"""`WorkerCas`: a remote worker's own cache of the server's blobs, as plain read-only files.

A worker runs many actions of the same build, whose inputs overlap (every compile of a package
reads the same headers): each blob is downloaded once, verified against its digest, and kept as
a file named by its remote digest under `$MCPP_HOME/worker/cas/`. The sandbox stages inputs by
hard-linking such files, as a local build does from the materialization area, so staging an
input that is already here costs a link, not a copy.

Files are written to a temporary name and renamed, so a worker killed mid-download leaves no
partial blob under a digest's name (a leftover temporary file is only litter). Executable
inputs get a second file (`<hash>-<size>.x`, mode 0555): a hard link shares its mode with
every other link of the file.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Iterable

from .client import RemoteClient
from .digests import RemoteDigest
from .store import RemoteCorrupt


class WorkerCas:
    def __init__(self, root: str | os.PathLike[str], client: RemoteClient) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.client = client
        self._lock = threading.Lock()

    def path(self, d: RemoteDigest, executable: bool = False) -> str:
        return str(self.root / d.hash[:2] / f"{d.hash}-{d.size}{'.x' if executable else ''}")

    def has(self, d: RemoteDigest) -> bool:
        return os.path.exists(self.path(d))

    def ensure(self, digests: Iterable[RemoteDigest]) -> int:
        """Download (verified) every blob not yet here; answers how many were downloaded."""
        missing = [d for d in dict.fromkeys(digests) if not self.has(d)]
        if not missing:
            return 0
        fn = self.client.digest_function
        for d, data in self.client.download(missing).items():
            reason = fn.mismatch(d, data)
            if reason:
                raise RemoteCorrupt(d, reason)
            self._write(self.path(d), data, 0o444)
        return len(missing)

    def read(self, d: RemoteDigest) -> bytes:
        self.ensure([d])
        with open(self.path(d), "rb") as f:
            return f.read()

    def staged(self, d: RemoteDigest, executable: bool) -> str:
        """A file holding `d`'s bytes with the right mode (the blob must be here)."""
        if not executable:
            return self.path(d)
        x = self.path(d, executable=True)
        if not os.path.exists(x):
            with open(self.path(d), "rb") as f:
                self._write(x, f.read(), 0o555)
        return x

    def _write(self, path: str, data: bytes, mode: int) -> None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}"
        with open(tmp, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
