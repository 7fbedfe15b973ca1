"""The `.tar.zst` of a package, written so that the same files give the same bytes.

Members are `<name>-<version>/<path>` (a release's `strip = 1` drops the prefix), in sorted
order, with every field that would vary between machines or runs fixed: modification time 0,
owner and group 0 with no names, mode 0644 (0755 for an executable file), POSIX pax format
(which adds a header only for a path that needs one). Only files and symlinks are written:
directories are implied by their members. The zstd level is fixed too, so two runs of
`mcpp package` on one tree produce one blake3.

A file is opened without following links and its size taken from the open descriptor, so what
is written is what was read; a file that changes size while it is packaged is an error. The
archive is written to a temporary file beside the result and renamed into place.

The reading side is engine/payloads/archive.py, which unpacks it (as it does any payload
archive) with every hostile member refused.
"""
from __future__ import annotations

import io
import os
import tarfile
from typing import Mapping

import blake3
import zstandard

from mcpp.cas.atomic import PUBLIC, atomic_file

from ..core.errors import McppError
from .files import Entry

ZSTD_LEVEL = 12


def _info(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def write_package(root: str, entries: tuple[Entry, ...], prefix: str, out_path: str,
                  replaced: Mapping[str, bytes] | None = None) -> tuple[str, int]:
    """Write `entries` (below `root`) as `prefix/<rel>` into the archive `out_path`, a file of
    `replaced` with the bytes given there (the published manifest); returns (the archive's
    blake3 hex, its size in bytes)."""
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    with atomic_file(out_path, mode=PUBLIC) as raw:
        compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_checksum=True)
        with compressor.stream_writer(raw, closefd=False) as z:
            with tarfile.open(fileobj=z, mode="w|", format=tarfile.PAX_FORMAT) as tar:
                for e in entries:
                    if replaced is not None and e.rel in replaced:
                        info = _info(f"{prefix}/{e.rel}")
                        info.size, info.mode = len(replaced[e.rel]), 0o644
                        tar.addfile(info, io.BytesIO(replaced[e.rel]))
                    else:
                        _add(tar, root, e, prefix)
    hasher = blake3.blake3()
    with open(out_path, "rb") as f:
        while chunk := f.read(1 << 20):
            hasher.update(chunk)
    return hasher.hexdigest(), os.path.getsize(out_path)


def _add(tar: tarfile.TarFile, root: str, e: Entry, prefix: str) -> None:
    info = _info(f"{prefix}/{e.rel}")
    if e.kind == "symlink":
        info.type = tarfile.SYMTYPE
        info.linkname = e.link
        info.mode = 0o777
        tar.addfile(info)
        return
    full = os.path.join(root, e.rel)
    fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with open(fd, "rb") as f:
        st = os.fstat(f.fileno())
        info.size = st.st_size
        info.mode = 0o755 if e.executable else 0o644
        try:
            tar.addfile(info, f)
        except OSError as err:  # tarfile's "unexpected end of data": the file shrank
            raise McppError(f"`{e.rel}` changed while it was packaged ({err}); package again") from None
