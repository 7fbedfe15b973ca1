"""Store ingest off the critical path: what a finished action leaves for the store to do.

An action's outputs are needed by the rest of the build the moment they are on disk, hashed:
a dependent's key needs their digests and a dependent's sandbox links them. Compressing them
into the CAS, materializing their read-only copies and writing the action-cache entry that
names them are needed only by a *later* build. So the engine hashes an output once, on the
worker that ran the action (`take_output`), and hands the bytes to `Ingest`, one background
thread that does the rest in submission order while the next actions run; the build waits for
it once, at its end (`wait`), and an ingest that failed fails the build. A large output (the
build's binary) is hashed from a mapping of the file rather than read (`MAPPED`), and hashed
again by its job, before it is stored.

Crash safety, which comes from the order inside one job (`store_blobs`, then the records):
every blob is published atomically under its content name (cas/atomic.py: an unnamed inode
linked in place, so an interrupted write leaves no name at all), and the records (action-cache
entry, header manifest) are written only after all of the job's blobs exist. An interrupted
build (Ctrl-C: `abandon` drops the jobs not started and lets the running one finish; a SIGKILL:
the unnamed inode vanishes) therefore leaves neither half-written store files nor cache entries
naming missing blobs; it leaves only fewer entries, which cost a re-run.

A dependent that is staged before its input's job ran materializes the copy itself
(`Materializer.publish_file`); whichever writer links the name first wins, and both wrote the
same bytes.
"""
from __future__ import annotations

import errno
import functools
import mmap
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Protocol

import blake3

from .atomic import read_all
from .digest import Digest, digest_file
from .unwaited_thread import SerialThread

if TYPE_CHECKING:
    from typing_extensions import Buffer

    from .materialize import Materializer

# Outputs up to this size are read whole once (hash now, compress and copy later from the same
# bytes); larger ones are hashed streaming now and read again by the job.
WHOLE = 64 << 20
# Of those, outputs from this size on are not read but mapped (read-only, shared): hashed and
# compressed from the page cache, where the linker's write left them. A read of a build's
# binary (8 MB) into fresh memory costs more than its hash (the pages zeroed, then copied:
# 4.4 ms against 1.6 ms for the mapping's hash), and it is on the way from the link's end to
# the answer. A mapping is not a private copy: the job hashes it again before storing it
# (`store_blobs`), so an output rewritten in between is refused as a streamed one is. One
# truncated in between (by a writer that first made its 0444 mode writable again) would end
# the process with SIGBUS when read: the cost of skipping the copy, and of no concern to the
# outputs the build itself writes, which nothing truncates.
MAPPED = 1 << 20
_READ = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class PendingBlob:
    """Bytes the store does not have yet: `data` when read whole, else the file at `path`."""

    digest: Digest
    data: bytes | mmap.mmap | None = None  # a mapping: `mapped`
    path: str | None = None
    executable: bool = False
    materialize: bool = False  # also fill the materialization area (outputs that later actions stage)

    @property
    def mapped(self) -> bool:
        """`data` maps the file at `path` (see MAPPED): hashed again when stored."""
        return isinstance(self.data, mmap.mmap)


def pending_bytes(data: bytes) -> PendingBlob:
    """A blob for captured text (an action's stdout or stderr)."""
    return PendingBlob(Digest(blake3.blake3(data).hexdigest(), len(data)), data=data)


def take_output(path: str) -> PendingBlob:
    """Make a produced output file read-only (0444, or 0555 when executable: the mode a
    restored output has) and hash it, reading it once; a symlink keeps its target's mode.

    One open, one fstat, one fchmod and the reads: the stat that says "executable" is the one
    the mode is chosen from, and the bytes hashed are the bytes the job stores."""
    link = False
    try:
        fd = os.open(path, _READ | os.O_NOFOLLOW)
    except OSError as e:
        if e.errno != errno.ELOOP:
            raise
        fd, link = os.open(path, _READ), True  # a symlink output: its target keeps its mode
    try:
        st = os.fstat(fd)
        executable = bool(st.st_mode & 0o111)
        if not link:
            os.fchmod(fd, 0o555 if executable else 0o444)
        if MAPPED <= st.st_size <= WHOLE:
            view = _mapping(fd, st.st_size)
            if view is not None:
                d = Digest(blake3.blake3(view).hexdigest(), st.st_size)
                return PendingBlob(d, data=view, path=path, executable=executable, materialize=True)
        if st.st_size <= WHOLE:
            data = read_all(fd, st.st_size)
            d = Digest(blake3.blake3(data).hexdigest(), len(data))
            return PendingBlob(d, data=data, executable=executable, materialize=True)
    finally:
        os.close(fd)
    return PendingBlob(digest_file(path), path=path, executable=executable, materialize=True)


def _mapping(fd: int, size: int) -> mmap.mmap | None:
    """A read-only shared mapping of the file's first `size` bytes; None where the file system
    maps nothing (the output is then read)."""
    try:
        return mmap.mmap(fd, size, prot=mmap.PROT_READ)
    except (OSError, ValueError):
        return None


class IngestError(Exception):
    """A file changed between being hashed and being stored."""


class IngestStore(Protocol):
    """The store `store_blobs` fills: `LocalZstdStore`, or `VerifyingStore` over one."""

    def put_digested(self, d: Digest, data: Buffer) -> Digest: ...

    def put_file(self, path: str) -> Digest: ...


def store_blobs(blobs: Iterable[PendingBlob], store: IngestStore, mat: Materializer) -> None:
    """Put every blob into `store` (and the materialization area where asked), area first:
    a dependent about to be staged looks there."""
    for b in blobs:
        if b.data is not None:
            if b.mapped and blake3.blake3(b.data).hexdigest() != b.digest.hash:
                raise IngestError(f"{b.path} changed between being hashed and being stored")
            if b.materialize:
                mat.publish_bytes(b.digest, b.data, executable=b.executable)
            store.put_digested(b.digest, b.data)
            if isinstance(b.data, mmap.mmap):  # `mapped`, spelled so for the type checker
                b.data.close()  # stored: the file's pages are the page cache's again
            continue
        assert b.path is not None, "a PendingBlob holds its bytes or names its file"
        got = store.put_file(b.path)
        if got != b.digest:
            raise IngestError(f"{b.path} changed between being hashed and being stored")
        if b.materialize:
            mat.publish_file(b.digest, b.path, executable=b.executable)


class Ingest:
    """One background thread running store jobs in submission order (see the module docstring).

    Jobs run first in, first out on a single thread, so a job's records are written after its
    own blobs and after every earlier job's. Several threads may submit (a lane submits the
    outputs it has just hashed, the scheduler's thread the records of the action once it has
    finished it: after its blobs). A `SerialThread` runs them (cas/unwaited_thread.py): a
    submitter never waits on the ingest. `inline=True` (a remote cache that uploads from the store right after) runs each job
    on the caller's thread instead."""

    def __init__(self, inline: bool = False) -> None:
        self.inline = inline
        self._thread = SerialThread()
        self._dropping = False  # set by `abandon`: jobs still queued are skipped
        self.errors: list[tuple[str, BaseException]] = []  # (label, what went wrong)

    def submit(self, label: str, job: Callable[[], None]) -> None:
        if self.inline:
            self._run(label, job)
            return
        self._thread.call(functools.partial(self._queued, label, job))

    def failed(self, label: str) -> bool:
        """Whether a job of `label` failed so far: asked by a later job of the same label (its
        records, which must not name blobs an earlier job could not store). Only the ingest's
        thread appends failures, in order, so a job sees every earlier job's."""
        return any(done == label for done, _ in self.errors)

    def wait(self) -> list[tuple[str, BaseException]]:
        """Block until every job has run; the failures, by label."""
        self._stop()
        return self.errors

    def abandon(self) -> None:
        """On an interrupted build: drop the jobs not started, let the running one finish."""
        self._dropping = True
        self._stop()

    def _stop(self) -> None:
        self._thread.wait()

    def _queued(self, label: str, job: Callable[[], None]) -> None:
        """A job on the ingest's thread: skipped once abandoned."""
        try:
            if not self._dropping:
                self._run(label, job)
        except BaseException as e:  # noqa: BLE001 - past `_run` (a SystemExit): reported, the rest run
            self.errors.append((label, e))

    def _run(self, label: str, job: Callable[[], None]) -> None:
        try:
            job()
        except Exception as e:  # reported by `wait`; the next jobs still run
            self.errors.append((label, e))
