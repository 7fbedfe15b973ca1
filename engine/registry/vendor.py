"""`mcpp vendor [DIR]`: every locked package's sources, verified, copied into the workspace.

Each package is taken from the source cache (downloaded first when missing, its archive's blake3
checked against the lock before it is unpacked) and copied to `DIR/<namespace>/<name>-<version>/`
with `<name>-<version>.blake3` beside it naming the archive it came from. A build reads that
directory instead of the index when the root manifest says `[source] vendor = "DIR"`, or under
`--offline` when `vendor/` exists: CI can build with no network and no home cache. A directory
of the vendor tree that the lock no longer names is removed (only one written here: it has its
`.blake3` beside it). Each copy is written beside its final place and renamed, so an interrupted
`mcpp vendor` leaves every package whole or absent.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from typing import TYPE_CHECKING

from mcpp.cas.atomic import TMP_PREFIX, write_atomic

from .cache import STAMP, set_write_permission, vendored_dir
from .session import Options, Resolution, ParsedManifests, resolve_workspace, workspace_of

if TYPE_CHECKING:
    from ..core.settings import Settings


def vendor(manifest_path: str, settings: Settings, dest: str | None, *, locked: bool = False) -> tuple[str, Resolution]:
    """Vendor the workspace of `manifest_path` into `dest` (default: `vendor/` at its root)."""
    files = ParsedManifests()
    root, members = workspace_of(os.path.abspath(manifest_path), files)
    resolution = resolve_workspace(files, root, members, settings, Options(locked=locked), force=True)
    assert resolution is not None
    # The index and the cache are the source here, whatever [source] vendor says: this refills it.
    resolution.sources.vendor, resolution.sources.offline, resolution.sources.vendor_only = None, False, False
    target = os.path.abspath(dest) if dest else os.path.join(root, "vendor")
    keep = set()
    for p in resolution.lock.packages.values():
        final = vendored_dir(target, p.namespace, p.name, p.version)
        keep.add(final)
        try:
            with open(final + STAMP) as f:
                if f.read().strip() == p.blake3 and os.path.isdir(final):
                    continue
        except OSError:
            pass
        src = resolution.sources.unpacked(p)
        parent = os.path.dirname(final)
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=TMP_PREFIX, dir=parent)
        try:
            copy = os.path.join(tmp, "root")
            shutil.copytree(src, copy, symlinks=True)
            set_write_permission(copy, writable=True)
            if os.path.isdir(final):
                shutil.rmtree(final)
            os.rename(copy, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        write_atomic(final + STAMP, p.blake3 + "\n", mode=0o666)
    for ns in os.listdir(target) if os.path.isdir(target) else ():
        for entry in os.listdir(os.path.join(target, ns)) if os.path.isdir(os.path.join(target, ns)) else ():
            if entry.endswith(STAMP):
                stale = os.path.join(target, ns, entry[:-len(STAMP)])
                if stale not in keep:
                    shutil.rmtree(stale, ignore_errors=True)
                    os.unlink(stale + STAMP)
    return target, resolution
