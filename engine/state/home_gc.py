"""`mcpp cache gc --max-size`: the whole home under one bound, not only the blob store.

What lives under `$MCPP_HOME` and how gc treats it, cheapest to redo first:

1. *Disposable*: materialized files (`mat/`, a decompressed copy of a blob, made again from
   the store on demand) and the build servers' logs (`server/*.log`). Removed least recently
   used first. A materialized file's last use is the later of its mtime and its ctime: linking
   it into `target/` or a sandbox changes its ctime, so that is when it was last handed out.
   Files in `target/` are hard links of their own and stay. The sandbox's prepared input trees
   (sandbox/input_tree.py: hard links to materialized files, which keep their bytes) not used
   within the grace window go first, whenever the home is above the bound.
2. *The action cache and the blob store* (`ac/`, `cas/`): `cas/maintenance.gc` evicts entries
   least recently used first, and the blobs only they named, down to what the bound leaves
   after the rest of the home.
3. *Installed things*: host tools (`tool/<name>`), payload versions
   (`payloads/<ns>/<name>/<version>`, last use stamped on their lock file) and index packages'
   unpacked sources (`registry/<ns>/<name>/<version>`, last used when a build linked its files
   into a `target/`). Removed least recently used first, only when 1 and 2 were not enough; the
   next build that needs one builds, installs or fetches it again.

Everything else (the no-op records, the remote side index, the toolchain probe cache, running
sandboxes) is counted and kept. Nothing used within the grace window (`GRACE_S`) is removed:
a running build may be about to use it.

`[cache] max-size = "2G"` in config.toml bounds the home automatically after a build
(`after_build`), at most once per `AUTO_INTERVAL_S`, so a build pays for the walk rarely; a
home without the key pays one dictionary lookup.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from mcpp.cas import maintenance
from mcpp.cas.home import Home, unlink_quietly
from mcpp.cas.maintenance import GRACE_S, remove_tree
from mcpp.cas.units import parse_size

from ..core.errors import McppError
from ..payloads.gc import installed as installed_payloads, real_subdirs
from ..registry.cache import REGISTRY
from ..registry.cache import STAMP as SOURCE_RECORD

AUTO_INTERVAL_S = 3600.0
STAMP = "gc.stamp"


@dataclass
class Unit:
    """One removable thing: a file or a directory tree, its size and when it was last used."""

    path: str
    size: int
    used: float
    tree: bool = False
    first: tuple[str, ...] = ()  # files removed before the tree: a record that it is complete


@dataclass
class HomeGc:
    store: maintenance.GcReport
    before: int = 0
    after: int = 0
    removed: dict[str, int] = field(default_factory=dict)  # kind -> units removed
    kept_recent: int = 0  # bytes above the bound kept because they were used within the grace window


def bound(home: Home, max_size: int, older_than_s: float | None = None, *, grace_s: float = GRACE_S,
          now: float | None = None) -> HomeGc:
    """Bring everything under `home` to at most `max_size` bytes (see the module docstring)."""
    now = time.time() if now is None else now
    recent = now - grace_s
    disposable = _mat_files(home) + _logs(home)
    installed = _tools(home) + _payloads(home) + _index_sources(home)
    fixed = _fixed_size(home)
    store_size = _tree_size(str(home.cas)) + _tree_size(str(home.ac))
    report = HomeGc(maintenance.GcReport())
    report.before = store_size + fixed + sum(u.size for u in disposable + installed)
    if report.before > max_size:
        from mcpp.sandbox.input_tree import TREES_DIR, discard_trees  # only gc needs it
        trees = discard_trees(os.path.join(home.root, "sandbox", TREES_DIR), recent)
        if trees:
            report.removed["prepared input trees"] = trees

    def rest() -> int:
        return fixed + sum(u.size for u in disposable + installed)

    _evict(disposable, store_size + rest() - max_size, recent, report, "materialized files and logs")
    report.store = maintenance.gc(home, max_size=max(0, max_size - rest()), older_than_s=older_than_s,
                                  grace_s=grace_s, now=now)
    disposable = _mat_files(home) + _logs(home)  # the store's gc removed the copies of blobs it deleted
    _evict(installed, report.store.bytes_after + rest() - max_size, recent, report,
           "host tools, payloads and index sources")
    report.after = report.store.bytes_after + rest()
    return report


def _evict(units: list[Unit], excess: int, recent: float, report: HomeGc, kind: str) -> None:
    """Remove the least recently used of `units` (in place) until `excess` bytes are gone."""
    if excess <= 0:
        return
    for u in sorted(units, key=lambda u: u.used):
        if excess <= 0:
            break
        if u.used >= recent:
            report.kept_recent += u.size
            continue
        for path in u.first:
            unlink_quietly(path)
        if u.tree:
            try:
                remove_tree(u.path)
            except OSError:
                continue
        else:
            unlink_quietly(u.path)
        units.remove(u)
        excess -= u.size
        report.removed[kind] = report.removed.get(kind, 0) + 1


def after_build(home: Home, cache_table: dict, now: float | None = None) -> HomeGc | None:
    """`[cache] max-size` applied after a build, at most once per `AUTO_INTERVAL_S`; None when
    the key is absent or it is not time yet. A bad value is a usage error."""
    text = cache_table.get("max-size")
    if text is None:
        return None
    max_size = cache_max_size(text)
    now = time.time() if now is None else now
    stamp = os.path.join(home.root, STAMP)
    try:
        if os.stat(stamp).st_mtime > now - AUTO_INTERVAL_S:
            return None
    except OSError:
        pass
    try:
        with open(stamp, "w"):
            pass
    except OSError:
        return None
    return bound(home, max_size, now=now)


def cache_max_size(value: object) -> int:
    """`[cache] max-size`: a size such as "2G" or "500M", or a number of bytes."""
    try:
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
        if isinstance(value, str):
            return parse_size(value)
    except ValueError:
        pass
    raise McppError(f"`cache.max-size` must be a size such as \"2G\" or \"500M\", not {value!r}")


# --- what is under the home ---------------------------------------------------------------------

def _mat_files(home: Home) -> list[Unit]:
    out = []
    for dirpath, _dirs, files in os.walk(str(home.mat)):
        for name in files:
            p = os.path.join(dirpath, name)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            out.append(Unit(p, st.st_size, max(st.st_mtime, st.st_ctime)))
    return out


def _logs(home: Home) -> list[Unit]:
    d = os.path.join(home.root, "server")
    out = []
    try:
        with os.scandir(d) as entries:
            for e in entries:
                if e.name.endswith(".log") and e.is_file(follow_symlinks=False):
                    st = e.stat(follow_symlinks=False)
                    out.append(Unit(e.path, st.st_size, st.st_mtime))
    except OSError:
        pass
    return out


def _tools(home: Home) -> list[Unit]:
    out = []
    try:
        with os.scandir(str(home.tool)) as entries:
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    out.append(Unit(e.path, _tree_size(e.path), _last_touch(e.path), tree=True))
    except OSError:
        pass
    return out


def _payloads(home: Home) -> list[Unit]:
    return [Unit(path, _tree_size(path), used if used is not None else _last_touch(path), tree=True)
            for _label, path, used in installed_payloads(str(home.payloads))]


def _index_sources(home: Home) -> list[Unit]:
    """Each unpacked release in the source cache (engine/registry/cache.py). Its `.blake3` record
    goes first: a version directory without it is fetched again, never trusted half-removed."""
    root = os.path.join(home.root, REGISTRY)
    out = []
    for ns in real_subdirs(root):
        for name in real_subdirs(os.path.join(root, ns)):
            for version in real_subdirs(os.path.join(root, ns, name)):
                d = os.path.join(root, ns, name, version)
                out.append(Unit(d, _tree_size(d), _last_touch(d), tree=True, first=(d + SOURCE_RECORD,)))
    return out


_COUNTED_APART = ("cas", "ac", "mat", "tool", "payloads", "server", "sandbox", REGISTRY)


def _fixed_size(home: Home) -> int:
    """What gc keeps: everything under the home but the stores above (server/: its sockets and
    pid files; its logs are counted as disposable)."""
    total = 0
    try:
        names = os.listdir(home.root)
    except OSError:
        return 0
    for name in names:
        if name in _COUNTED_APART:
            continue
        total += _tree_size(os.path.join(home.root, name))
    return total


def _tree_size(path: str) -> int:
    try:
        st = os.lstat(path)
    except OSError:
        return 0
    if not os.path.isdir(path) or os.path.islink(path):
        return st.st_size
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


def _last_touch(path: str) -> float:
    """The latest mtime/ctime of a directory and its direct entries."""
    latest = 0.0
    try:
        st = os.lstat(path)
        latest = max(st.st_mtime, st.st_ctime)
        with os.scandir(path) as entries:
            for e in entries:
                s = e.stat(follow_symlinks=False)
                latest = max(latest, s.st_mtime, s.st_ctime)
    except OSError:
        pass
    return latest
