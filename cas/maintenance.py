"""`mcpp cache stats|verify|gc|clean`: whole-store operations on an mcpp home.

gc policy, and why it is safe:
- Action entries are evicted first: those older than `older_than_s`, then, while the store
  (`cas/` + `ac/`) is above `max_size`, the least recently used (entries' mtimes are bumped on
  read, at most once an hour: `home.USE_MARK_S`). Evicting an entry only costs a re-run.
- A blob is deleted only when no remaining entry references it (outputs, stdout, stderr): a
  remaining entry never points at a blob gc removed, so a hit can always be materialized. Blobs no
  entry references (inputs uploaded for remote execution, leftovers of evicted entries) go on
  every gc.
- A blob touched within `grace_s` is kept even when unreferenced: a concurrent build stores its
  outputs before it writes the entry naming them, and gc must not fall into that gap. The store
  bumps a blob's mtime at most once per process, so a long-running build can still lose a blob it
  re-stored long ago; the engine must therefore treat a hit whose blobs are missing
  (`find_missing`) as a miss. Blobs in the grace window can leave the store above `max_size`.
- Materialized files (`mat/`) whose blob was deleted are removed too; `target/` and sandboxes keep
  their own hard links, so nothing in use disappears. `mat/` is not counted in `max_size`: its
  files are mostly shared with `target/` (hard links), so deleting them would free little.
- Temp files left by killed writers (in `cas/`, `ac/`, `mat/`) are removed once an hour old.
"""
from __future__ import annotations

import os
import shutil
import stat as stat_mod
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Iterator

import blake3
import zstandard
from google.protobuf.message import DecodeError

from . import tree
from .action_cache import ActionCache, ActionEntry
from .blobstore import BlobNotFound, BlobStore, CorruptBlob, StoreError
from .digest import Digest
from .home import TMP_PREFIX, Home, is_hex_key, unlink_quietly
from .local_store import LocalZstdStore, content_size
from .materialize import Materializer, file_digest_matches
from .units import format_size
from .verifying_store import VerifyingStore

GRACE_S = 600.0
STALE_TEMP_S = 3600.0
_CHUNK = 1 << 20


def stats(home: Home | str | os.PathLike[str]) -> dict[str, int | str]:
    """Counts and sizes of each store; reads 18 bytes per blob for its uncompressed size."""
    home = Home.of(home)
    store = LocalZstdStore(home.cas)
    blobs = stored = uncompressed = unknown = 0
    for b in store.iter_blobs():
        blobs += 1
        stored += b.stored_size
        size = content_size(b.path)
        if size is None:
            unknown += 1
        else:
            uncompressed += size
    entries = manifests = ac_bytes = 0
    for f in ActionCache(home.ac).iter_files():
        ac_bytes += f.size
        if f.manifest:
            manifests += 1
        else:
            entries += 1
    mat_files = mat_bytes = 0
    for _, st in _iter_mat(home):
        mat_files += 1
        mat_bytes += st.st_size
    return {
        "home": str(home.root),
        "blobs": blobs,
        "stored_bytes": stored,
        "uncompressed_bytes": uncompressed,
        "blobs_without_size": unknown,
        "action_entries": entries,
        "manifests": manifests,
        "ac_bytes": ac_bytes,
        "materialized_files": mat_files,
        "materialized_bytes": mat_bytes,
        "temp_files": sum(1 for _ in _temp_files(home, store)),
    }


def verify(
    home: Home | str | os.PathLike[str], delete: bool = False, jobs: int | None = None
) -> list[Digest]:
    """Re-hash every blob; answer the corrupt ones (size -1 where even the header is unreadable).

    Nothing is removed unless `delete` is true (then corrupt blobs and their materialized copies
    go, and the next build re-runs the actions that produced them).
    """
    home = Home.of(home)
    store = LocalZstdStore(home.cas)
    blobs = list(store.iter_blobs())
    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        verdicts = list(pool.map(lambda b: _check_blob(b.path, b.hash), blobs))
    bad = sorted(d for d in verdicts if d is not None)
    if delete:
        for d in bad:
            unlink_quietly(store.path_of(d))
            _remove_mat(home, d.hash)
    return bad


def verify_materialized(home: Home | str | os.PathLike[str], jobs: int | None = None) -> list[str]:
    """Re-hash every file of the materialization area (`mat/`) against the digest its name
    says; answer the paths of those that no longer match, after re-creating each from its
    verified blob (or removing it when the store no longer holds that blob, so the next use
    fetches or rebuilds it).

    Why: every sandbox input and every restore is a link or copy of these files, so one
    changed in place (an action that wrote through a hard-linked input, say) would be served
    to every later build of every project on this home.
    """
    home = Home.of(home)
    entries = [(path, st) for path, st in _iter_mat(home)]

    def check(item: tuple[str, os.stat_result]) -> str | None:
        path, st = item
        name = os.path.basename(path)
        h = os.path.basename(os.path.dirname(path)) + name.removesuffix(".x")
        if not is_hex_key(h) or not stat_mod.S_ISREG(st.st_mode):
            return None
        try:
            ok = file_digest_matches(path, Digest(h, st.st_size))
        except FileNotFoundError:  # removed by a concurrent gc
            return None
        return None if ok else path

    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        bad = sorted(p for p in pool.map(check, entries) if p is not None)
    if bad:
        mat = Materializer(VerifyingStore(LocalZstdStore(home.cas)), home.mat)
        for path in bad:
            name = os.path.basename(path)
            h = os.path.basename(os.path.dirname(path)) + name.removesuffix(".x")
            unlink_quietly(path)
            size = content_size(LocalZstdStore(home.cas).path_of(Digest(h, 0)))
            if size is None:
                continue
            try:
                mat.path(Digest(h, size), executable=name.endswith(".x"))
            except (BlobNotFound, CorruptBlob):
                pass  # gone or corrupt too: the next build re-runs what produced it
    return bad


@dataclass
class GcReport:
    entries_removed: int = 0
    manifests_removed: int = 0
    malformed_removed: int = 0
    blobs_removed: int = 0
    mat_removed: int = 0
    temp_removed: int = 0
    bytes_before: int = 0  # cas/ + ac/
    bytes_after: int = 0
    # Unreferenced blobs kept only because they were written within the grace window (a running
    # build may be about to name them): what keeps the store above `max_size` right after a build.
    grace_blobs: int = 0
    grace_bytes: int = 0
    grace_s: float = GRACE_S

    @property
    def bytes_freed(self) -> int:
        return self.bytes_before - self.bytes_after

    def __str__(self) -> str:
        return (
            f"removed {self.entries_removed} action entries and {self.blobs_removed} blobs, "
            f"freed {format_size(self.bytes_freed)} ({format_size(self.bytes_after)} remain)"
        )


def gc(
    home: Home | str | os.PathLike[str],
    max_size: int | None = None,
    older_than_s: float | None = None,
    *,
    grace_s: float = GRACE_S,
    now: float | None = None,
) -> GcReport:
    """Evict action entries (by age, then LRU down to `max_size`) and every unreferenced blob."""
    home = Home.of(home)
    now = time.time() if now is None else now
    store = LocalZstdStore(home.cas)
    ac = ActionCache(home.ac)
    report = GcReport()
    recent = now - grace_s

    for path, mtime in _temp_files(home, store):
        if mtime < now - max(STALE_TEMP_S, grace_s):
            unlink_quietly(path)
            report.temp_removed += 1

    # Entries: drop expired and malformed ones, count references from the rest.
    refs: dict[str, int] = {}
    live: list[tuple[float, str, int, bool, tuple[str, ...]]] = []  # mtime, path, size, manifest, blobs
    for f in ac.iter_files():
        report.bytes_before += f.size
        if older_than_s is not None and f.mtime < now - older_than_s:
            unlink_quietly(f.path)
            if f.manifest:
                report.manifests_removed += 1
            else:
                report.entries_removed += 1
            continue
        hashes: tuple[str, ...] = ()
        if not f.manifest:
            entry = _read_entry(f.path)
            if entry is None:
                unlink_quietly(f.path)
                report.malformed_removed += 1
                continue
            hashes = tuple({d.hash for d in entry.blobs()} | _tree_files(entry, store))
            for h in hashes:
                refs[h] = refs.get(h, 0) + 1
        live.append((f.mtime, f.path, f.size, f.manifest, hashes))
    total = sum(size for _, _, size, _, _ in live)

    # Blobs: delete every unreferenced one outside the grace window.
    kept: dict[str, tuple[str, int, float]] = {}
    deleted: list[str] = []
    for b in store.iter_blobs():
        report.bytes_before += b.stored_size
        if b.hash not in refs and b.mtime < recent:
            unlink_quietly(b.path)
            deleted.append(b.hash)
        else:
            kept[b.hash] = (b.path, b.stored_size, b.mtime)
            total += b.stored_size

    # Size pressure: evict least recently used entries, dropping blobs they alone held.
    if max_size is not None and total > max_size:
        live.sort()
        for mtime, path, size, manifest, hashes in live:
            if total <= max_size:
                break
            unlink_quietly(path)
            total -= size
            if manifest:
                report.manifests_removed += 1
            else:
                report.entries_removed += 1
            for h in hashes:
                refs[h] -= 1
                if refs[h] == 0 and h in kept and kept[h][2] < recent:
                    bpath, bsize, _ = kept.pop(h)
                    unlink_quietly(bpath)
                    deleted.append(h)
                    total -= bsize

    for h, (_, bsize, bmtime) in kept.items():
        if refs.get(h, 0) == 0 and bmtime >= recent:
            report.grace_blobs += 1
            report.grace_bytes += bsize
    report.grace_s = grace_s
    report.blobs_removed = len(deleted)
    for h in deleted:
        report.mat_removed += _remove_mat(home, h)
    report.bytes_after = total
    return report


def clean(home: Home | str | os.PathLike[str]) -> None:
    """Empty `cas/`, `ac/`, `mat/` and `tool/` (the directories themselves stay)."""
    home = Home.of(home)
    for directory in (home.cas, home.ac, home.mat, home.tool):
        try:
            names = os.listdir(directory)
        except FileNotFoundError:
            continue
        for name in names:
            p = os.path.join(directory, name)
            remove_tree(p)


# --- helpers ------------------------------------------------------------------------------


def _check_blob(path: str, h: str) -> Digest | None:
    """None when the blob decodes to bytes hashing to `h` (and of the size its header says)."""
    declared = content_size(path)
    hasher = blake3.blake3()
    seen = 0
    try:
        with open(path, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as r:
            while chunk := r.read(_CHUNK):
                hasher.update(chunk)
                seen += len(chunk)
    except FileNotFoundError:
        return None  # removed by a concurrent gc: not corrupt
    except zstandard.ZstdError:
        return Digest(h, -1 if declared is None else declared)
    if hasher.hexdigest() != h or (declared is not None and declared != seen):
        return Digest(h, -1 if declared is None else declared)
    return None


def _temp_files(home: Home, store: LocalZstdStore) -> Iterator[tuple[str, float]]:
    """(path, mtime) of in-flight or abandoned temp files in cas/, ac/ and mat/."""
    yield from store.iter_temp_files()
    for top in (home.ac, home.mat):
        try:
            shards = [s for s in os.listdir(top) if len(s) == 2]
        except FileNotFoundError:
            continue
        for s in shards:
            d = os.path.join(top, s)
            try:
                names = os.listdir(d)
            except (FileNotFoundError, NotADirectoryError):
                continue
            for name in names:
                if name.startswith(TMP_PREFIX):
                    p = os.path.join(d, name)
                    try:
                        yield p, os.stat(p).st_mtime
                    except FileNotFoundError:
                        pass


def _read_entry(path: str) -> ActionEntry | None:
    try:
        with open(path, "rb") as f:
            return ActionEntry.from_json(f.read())
    except FileNotFoundError:
        return None
    except ValueError:
        return None


def _iter_mat(home: Home) -> Iterator[tuple[str, os.stat_result]]:
    """(path, stat) of every materialized file."""
    try:
        shards = os.listdir(home.mat)
    except FileNotFoundError:
        return
    for s in shards:
        if len(s) != 2:
            continue
        d = os.path.join(home.mat, s)
        try:
            names = os.listdir(d)
        except (FileNotFoundError, NotADirectoryError):
            continue
        for name in names:
            if name.startswith("."):
                continue
            p = os.path.join(d, name)
            try:
                yield p, os.stat(p, follow_symlinks=False)
            except FileNotFoundError:
                pass


def _remove_mat(home: Home, h: str) -> int:
    if not is_hex_key(h):
        return 0
    removed = 0
    for suffix in ("", ".x"):
        try:
            os.unlink(os.path.join(home.mat, h[:2], h[2:] + suffix))
            removed += 1
        except FileNotFoundError:
            pass
    return removed



def remove_tree(path: str) -> None:
    """Remove `path` and all below it, read-only directories included (payloads are often
    extracted so), without ever following a symlink: a link, at the top or below, is removed
    itself, and no directory outside the tree is made writable (or entered). The stores lie
    under `$MCPP_HOME`, which a `dir` or `off` action can write: a link planted there must not
    turn a clean-up into a `chmod` of the user's files."""
    try:
        top = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat_mod.S_ISDIR(top.st_mode):
        unlink_quietly(path)
        return
    make_writable(path)
    for root, dirs, _ in os.walk(path):  # top-down: each directory is fixed before it is entered
        for d in dirs:  # links to directories are listed here too, never entered: not fixed either
            make_writable(os.path.join(root, d))
    shutil.rmtree(path)  # removes a link below as a link (and refuses to start at one)


def make_writable(path: str) -> None:
    """Give the owner full rights on the directory `path`, if it is one and not a symlink. The
    directory is opened without following a link and changed through that descriptor, so a
    link swapped in between the check and the change is not followed either."""
    try:
        fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY)
    except OSError:  # a symlink (ELOOP), not a directory, or gone: nothing of ours to fix
        return
    try:
        mode = stat_mod.S_IMODE(os.fstat(fd).st_mode) | stat_mod.S_IRWXU
        try:
            os.chmod(f"/proc/self/fd/{fd}", mode)  # an O_PATH descriptor takes no fchmod
        except FileNotFoundError:  # no /proc: the path, checked just above
            os.chmod(path, mode)
    except OSError:
        pass
    finally:
        os.close(fd)


def _tree_files(entry: ActionEntry, store: BlobStore) -> set[str]:
    """The file blobs of an entry's tree outputs (`.../`, cas/tree.py): the entry names only the
    tree, whose files must live as long as it does. An unreadable tree keeps nothing (the entry
    is then healed by running the action again)."""
    out: set[str] = set()
    for path, (d, _mode) in entry.outputs.items():
        if path.endswith("/"):
            try:
                out.update(b.hash for b in tree.blobs(d, store))
            except (StoreError, tree.TreeError, DecodeError):
                pass
    return out
