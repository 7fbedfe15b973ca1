"""Where an index package's sources come from: the source cache, a vendor directory, the index.

The cache is `$MCPP_HOME/registry/<namespace>/<name>/<version>/`, one unpacked release per
machine, its files read-only. It is filled by the payload installer (engine/payloads/install.py):
the archive is streamed to a private temporary file, its size and blake3 compared with the
digest the lock (or, for a new lock, the index) pins *before* anything is unpacked, then unpacked
with every hostile member refused (archive.py, tree.py) and renamed into place, so the version
directory exists only complete. `<version>.blake3` beside it records which archive it came from:
a lock pinning another digest for the same version is refused, never built from the wrong tree.

A build does not read the cache in place: each package is copied (hard links where the file
system allows) into `target/registry/<namespace>/<name>-<version>/` of the workspace. Every
action path is relative to the execroot, the common ancestor of the package roots
(engine/package/layout.py); a root under `$MCPP_HOME` would widen it to whatever the home and
the project share, so another machine, with another home, would compute other keys and the
remote cache would never hit. Inside `target/` the paths are the same wherever the home is.

A vendor directory (`mcpp vendor`, vendor.py) holds `<namespace>/<name>-<version>/` inside the
workspace and is read in place.
"""
from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from dataclasses import replace
from typing import TYPE_CHECKING, Callable

from mcpp.cas.atomic import TMP_PREFIX, write_atomic

from ..payloads.descriptor import Descriptor, Release
from ..payloads.errors import PayloadError
from ..payloads.index import Index
from .errors import RegistryError
from .lockfile import Locked

if TYPE_CHECKING:
    from ..core.settings import Settings

REGISTRY = "registry"
STAMP = ".blake3"


def cache_root(settings: Settings) -> str:
    return os.path.join(str(settings.home.root), REGISTRY)


def cache_dir(root: str, namespace: str, name: str, version: str) -> str:
    return os.path.join(root, namespace, name, version)


def vendored_dir(vendor: str, namespace: str, name: str, version: str) -> str:
    return os.path.join(vendor, namespace, f"{name}-{version}")


def _stamp_of(directory: str) -> str | None:
    try:
        with open(directory + STAMP) as f:
            return f.read().strip()
    except OSError:
        return None


def find_release(desc: Descriptor, version: str) -> Release | None:
    return next((r for r in desc.releases if r.version == version and r.library is not None), None)


class Sources:
    """The sources of one command's index packages. `index` opens the library index the first
    time one must be downloaded (never, for a build the cache or the vendor directory serves)."""

    def __init__(self, settings: Settings, index: Callable[[], Index], *, offline: bool, vendor: str | None,
                 vendor_only: bool):
        self.settings = settings
        self.root = cache_root(settings)
        self._index = index
        self.offline = offline
        self.vendor = vendor  # a vendor directory to read from (offline, or [source] vendor)
        self.vendor_only = vendor_only  # [source] vendor: the index and the cache are never used

    def unpacked(self, p: Locked) -> str:
        """The read-only tree of `p`'s sources, verified against its pinned digest."""
        if self.vendor is not None:
            d = vendored_dir(self.vendor, p.namespace, p.name, p.version)
            if os.path.isdir(d) and _stamp_of(d) == p.blake3:
                return d
            if self.vendor_only:
                what = "holds another archive of it" if os.path.isdir(d) else "does not hold it"
                raise RegistryError(f"`{p.display}`: the vendor directory {self.vendor} {what}",
                                    notes=["help: `mcpp vendor` copies every locked package there"])
        d = cache_dir(self.root, p.namespace, p.name, p.version)
        if os.path.isdir(d):
            found = _stamp_of(d)
            if found == p.blake3:
                return d
            if found is not None:
                raise RegistryError(f"`{p.display}`: the source cache holds an archive with blake3 {found}, and the "
                                    f"lock pins {p.blake3}: the index served two archives for one version",
                                    notes=[f"help: remove {d} to fetch the locked one again"])
            shutil.rmtree(d)  # unpacked by a command killed before it recorded the digest: fetch again
        if self.offline:
            where = f" or {self.vendor}" if self.vendor is not None else ""
            raise RegistryError(f"--offline: `{p.display}` is not in the source cache{where}",
                                notes=["help: build once online, or `mcpp vendor` while online"])
        return self._download(p, d)

    def _download(self, p: Locked, d: str) -> str:
        index = self._index()
        desc = index.descriptor(p.namespace, p.name)
        release = find_release(desc, p.version) if desc is not None else None
        if desc is None or release is None or release.library is None:
            raise RegistryError(f"`{p.display}` is locked, but the library index {index.location} no longer has it",
                                notes=["help: `mcpp update -p " + p.name + "` chooses a version it has"])
        source = replace(release.library, blake3=p.blake3)  # the lock's digest is what must arrive
        try:
            from ..payloads.install import install  # here: a build that downloads nothing never imports tarfile
            install(self.root, index, desc, p.version, source, environ=self.settings.env)
        except PayloadError as e:
            raise RegistryError(f"`{p.display}`: {e.message}", e.pos, e.notes) from None
        set_write_permission(d, writable=False)
        write_atomic(d + STAMP, p.blake3 + "\n", mode=0o644)
        return d

    def build_root(self, p: Locked, target_dir: str) -> str:
        """Where a build reads `p`: the vendor directory in place, else its copy under `target_dir`."""
        src = self.unpacked(p)
        if self.vendor is not None and src.startswith(os.path.join(self.vendor, "")):
            return src
        dest = os.path.join(target_dir, REGISTRY, p.namespace, f"{p.name}-{p.version}")
        if os.path.isdir(dest) and _stamp_of(dest) == p.blake3:
            return dest
        parent = os.path.dirname(dest)
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=TMP_PREFIX, dir=parent)
        try:
            _link_tree(src, os.path.join(tmp, "root"))
            if os.path.isdir(dest):
                shutil.rmtree(dest)
            try:
                os.rename(os.path.join(tmp, "root"), dest)
            except OSError:
                if not os.path.isdir(dest):  # else another build put the same copy there first
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        write_atomic(dest + STAMP, p.blake3 + "\n", mode=0o644)
        return dest


def set_write_permission(root: str, writable: bool) -> None:
    """Give or take the owner's write permission on every regular file of a tree: a cached copy is
    read-only (its directories stay removable); a vendored one is the user's to patch."""
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISREG(mode):
                perm = stat.S_IMODE(mode)
                os.chmod(path, perm | stat.S_IWUSR if writable else perm & ~0o222)


def _link_tree(src: str, dest: str) -> None:
    """A copy of `src` at `dest`: hard links to its read-only files, copies across file systems.
    Symlinks are copied as links (the unpacker made each resolve inside the tree)."""
    def link(s: str, d: str) -> None:
        try:
            os.link(s, d)
        except OSError as e:
            if e.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.EACCES):
                raise
            shutil.copy2(s, d)
    shutil.copytree(src, dest, symlinks=True, copy_function=link)
