"""`LocalZstdStore`: blobs on the local disk, zstd-compressed, written atomically.

Layout: `<root>/<first 2 hex>/<remaining 62 hex>`, one zstd frame per blob (level 3: about as
fast as the disk, a third to a half of the size for object files). Every frame records its
content size in the header (zstd does so whenever the size is pledged up front, and we always
pledge it), which lets `mcpp cache stats` report uncompressed bytes by reading 18 bytes per blob
and lets `get` refuse a header that disagrees with the digest before allocating anything.

Atomicity (cas/atomic.py): a blob whose digest is known up front is compressed in memory and
`publish`ed (an unnamed `O_TMPFILE` inode linked under its final name: no temp name, no rename);
a streamed file, whose digest is known only at the end, goes to a temporary file under
`<root>/tmp/` (same file system) renamed over the final name once fully written. A
crash leaves a stray temp file (removed by `maintenance.gc`) but never a partial blob under a
final name, and two writers of one blob both succeed because they rename identical bytes. There
is no fsync: a blob torn by a power cut is caught by `VerifyingStore` on its next read and
recomputed, which is cheaper than an fsync per build output.

This layer does *not* re-hash on read (`VerifyingStore` does, composed on top); it only turns a
zstd decode error into `CorruptBlob`.

LRU: reading or re-putting a blob bumps its mtime, once per process per blob, so that `gc`'s
grace window and age reports see recent use without a syscall per read.
"""
from __future__ import annotations

import io
import os
import threading
from typing import TYPE_CHECKING, BinaryIO, Iterable, Iterator, NamedTuple

import blake3

from .atomic import TMP_PREFIX, commit, discard, publish, read_file, temp_file
from .blobstore import BlobNotFound, CorruptBlob
from .digest import Digest
from .home import iter_sharded, shard

if TYPE_CHECKING:
    import zstandard
    from typing_extensions import Buffer
else:
    class _ZstandardAtFirstUse:
        """`zstandard`, imported when first used (then the module itself takes this name): its
        import (~5 ms with the `platform` module it loads) is not on the way of a first build's
        first compile, which stages inputs without compressing any."""

        def __getattr__(self, name: str) -> object:
            global zstandard
            import zstandard

            return getattr(zstandard, name)

    zstandard = _ZstandardAtFirstUse()

LEVEL = 3
# Files up to this size are read whole (one read, one compress call); larger ones stream.
SMALL_BLOB = 4 << 20
_CHUNK = 1 << 20
# From this size on, compression uses every core (`_cctx`). zstd splits a frame into jobs of
# several megabytes at level 3, so a smaller blob is one job: no faster on more threads, and
# the threads' start costs more (bench/RESULTS.md).
_PARALLEL_BLOB = 12 << 20
_CORES = min(8, os.cpu_count() or 1)
# The largest zstd frame header (magic 4 + descriptor 1 + window 1 + dict id 4 + size 8).
_MAX_FRAME_HEADER = 18
BLOB_MODE = 0o444  # blobs are immutable; read-only catches accidental writes through a stray path


class BlobFile(NamedTuple):
    """One blob file as found on disk (for maintenance; no decompression involved)."""

    hash: str
    path: str
    stored_size: int  # compressed bytes on disk
    mtime: float


def content_size(path: str | os.PathLike[str]) -> int | None:
    """Uncompressed size from a blob's zstd frame header, None when absent or unreadable."""
    try:
        with open(path, "rb") as f:
            head = f.read(_MAX_FRAME_HEADER)
        size = zstandard.frame_content_size(head)
    except (OSError, zstandard.ZstdError):
        return None
    return None if size < 0 else size


class _DecodingReader(io.RawIOBase):
    """Raw stream over zstd's reader that reports decode errors as `CorruptBlob`."""

    def __init__(self, digest: Digest, raw: BinaryIO) -> None:
        self._digest = digest
        self._reader = zstandard.ZstdDecompressor().stream_reader(raw, closefd=True)

    def readable(self) -> bool:
        return True

    def readinto(self, b: Buffer) -> int:
        try:
            return self._reader.readinto(b)
        except zstandard.ZstdError as e:
            raise CorruptBlob(self._digest, f"zstd: {e}") from None

    def close(self) -> None:
        if not self.closed:
            self._reader.close()
        super().close()


class LocalZstdStore:
    """A `BlobStore` (and `SupportsDelete`) rooted at `root`, normally `$MCPP_HOME/cas`."""

    def __init__(self, root: str | os.PathLike[str], level: int = LEVEL) -> None:
        self.root = os.fspath(root)
        self.level = level
        self._tmpdir = os.path.join(self.root, "tmp")
        self._touched: set[str] = set()
        self._local = threading.local()  # zstd contexts are not thread-safe; reuse one per thread

    # --- naming ---------------------------------------------------------------------------

    def path_of(self, d: Digest) -> str:
        return shard(self.root, d.hash)

    # --- BlobStore ------------------------------------------------------------------------

    def has(self, d: Digest) -> bool:
        return os.path.exists(self.path_of(d))

    def find_missing(self, ds: Iterable[Digest]) -> list[Digest]:
        seen: set[Digest] = set()
        missing = []
        for d in ds:
            if d not in seen:
                seen.add(d)
                if not os.path.exists(self.path_of(d)):
                    missing.append(d)
        return missing

    def get(self, d: Digest) -> bytes:
        path = self.path_of(d)
        try:
            data = read_file(path)
        except FileNotFoundError:
            raise BlobNotFound(d) from None
        self._touch(d.hash, path)
        try:
            declared = zstandard.frame_content_size(data)
            if declared >= 0 and declared != d.size:
                # Checked before decompressing: a damaged header must not make us allocate
                # whatever size it claims.
                raise CorruptBlob(d, f"frame header says {declared} bytes, digest says {d.size}")
            return self._dctx().decompress(data, max_output_size=d.size)
        except zstandard.ZstdError as e:
            raise CorruptBlob(d, f"zstd: {e}") from None

    def open(self, d: Digest) -> io.BufferedIOBase:
        path = self.path_of(d)
        try:
            raw = open(path, "rb")
        except FileNotFoundError:
            raise BlobNotFound(d) from None
        self._touch(d.hash, path)
        return io.BufferedReader(_DecodingReader(d, raw), buffer_size=_CHUNK)

    def put(self, data: bytes) -> Digest:
        return self.put_digested(Digest(blake3.blake3(data).hexdigest(), len(data)), data)

    def put_digested(self, d: Digest, data: Buffer) -> Digest:
        """`put` for bytes whose digest the caller has just computed from these very bytes (an
        action's output, hashed once for its key): the store does not hash them again."""
        path = self.path_of(d)
        if os.path.exists(path):
            self._touch(d.hash, path)
            return d
        # One compress call however large: it lets go of the GIL once for the whole blob. Fed in
        # megabyte pieces, each piece's return would wait for the GIL, which a main thread busy
        # saving the build's records holds for up to the switch interval each time.
        publish(path, [self._cctx(d.size).compress(memoryview(data))], perms=BLOB_MODE)
        self._touched.add(d.hash)
        return d

    def put_file(self, path: str | os.PathLike[str]) -> Digest:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size <= SMALL_BLOB:
                data = f.read()
                return self.put(data)
            return self._put_stream(f, size, os.fspath(path))

    # --- SupportsDelete -------------------------------------------------------------------

    def delete(self, d: Digest) -> bool:
        self._touched.discard(d.hash)
        try:
            os.unlink(self.path_of(d))
            return True
        except FileNotFoundError:
            return False

    # --- maintenance ----------------------------------------------------------------------

    def iter_blobs(self) -> Iterator[BlobFile]:
        """Every blob under a final name (temp files and foreign names are skipped)."""
        for shard_name, f, st in iter_sharded(self.root):
            if len(f.name) == 62:
                yield BlobFile(shard_name + f.name, f.path, st.st_size, st.st_mtime)

    def iter_temp_files(self) -> Iterator[tuple[str, float]]:
        """(path, mtime) of in-flight or abandoned writes, for `gc` to sweep old ones."""
        for directory in [self._tmpdir] + [
            os.path.join(self.root, n) for n in _listdir(self.root) if len(n) == 2
        ]:
            for name in _listdir(directory):
                if name.startswith(TMP_PREFIX):
                    p = os.path.join(directory, name)
                    try:
                        yield p, os.stat(p).st_mtime
                    except FileNotFoundError:
                        pass

    # --- internals ------------------------------------------------------------------------

    def _put_stream(self, f: io.BufferedIOBase, size: int, name: str) -> Digest:
        """Hash and compress in one pass; the digest (hence the final name) is known at the end."""
        hasher = blake3.blake3()
        fd, tmp = temp_file(self._tmpdir)
        total = 0
        try:
            with open(fd, "wb") as out:
                buf = bytearray(_CHUNK)
                view = memoryview(buf)
                try:
                    with self._cctx(size).stream_writer(out, size=size, closefd=False) as w:
                        while n := f.readinto(buf):
                            chunk = view[:n]
                            hasher.update(chunk)
                            w.write(chunk)
                            total += n
                except zstandard.ZstdError as e:
                    # The pledged size no longer matches: the file grew or shrank while we read it.
                    raise OSError(f"{name}: file changed while being stored ({e})") from None
                if total != size:
                    raise OSError(f"{name}: file changed while being stored")
                os.fchmod(out.fileno(), BLOB_MODE)
            d = Digest(hasher.hexdigest(), total)
            final = self.path_of(d)
            if os.path.exists(final):
                discard(tmp)
                self._touch(d.hash, final)
                return d
            commit(tmp, final)
        except BaseException:
            discard(tmp)
            raise
        self._touched.add(d.hash)
        return d

    def _touch(self, h: str, path: str) -> None:
        if h in self._touched:
            return
        self._touched.add(h)
        try:
            os.utime(path)
        except OSError:
            pass  # a read-only cache (shared, another user's) is still readable

    def _cctx(self, size: int = 0) -> zstandard.ZstdCompressor:
        """This thread's compressor; for a blob of a megabyte or more one that spreads the work
        over the cores (the same frame format): the largest blob is usually the last action's
        binary, whose compression the build then waits for with every core idle."""
        if size >= _PARALLEL_BLOB and _CORES > 1:
            c = getattr(self._local, "parallel", None)
            if c is None:
                c = self._local.parallel = zstandard.ZstdCompressor(level=self.level, threads=_CORES)
            return c
        c = getattr(self._local, "c", None)
        if c is None:
            c = self._local.c = zstandard.ZstdCompressor(level=self.level)
        return c

    def _dctx(self) -> zstandard.ZstdDecompressor:
        c = getattr(self._local, "d", None)
        if c is None:
            c = self._local.d = zstandard.ZstdDecompressor()
        return c



def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except (FileNotFoundError, NotADirectoryError):
        return []
