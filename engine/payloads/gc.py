"""`mcpp cache gc` over the payload store.

What it removes: temporary directories of installs that were killed (older than an hour, so a
running install is never swept), and with `--older-than` the installed versions no build has used
for that long. Use is stamped on the payload's lock file (`.locks/`), not inside the payload,
whose bytes must stay what the archive held. A removed payload is installed again by the next
build that needs it; adopted `system` payloads are never touched.
"""
from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass

from mcpp.cas.maintenance import remove_tree

from .install import LOCKS, TMP, lock_path
from .system import PROBES

STALE_TMP_S = 3600


@dataclass
class PayloadGc:
    temp_removed: int = 0
    removed: list = None

    def __post_init__(self):
        self.removed = self.removed or []


def _rmtree(path: str) -> None:
    try:
        remove_tree(path)
    except OSError:
        pass


def real_subdirs(path: str) -> list[str]:
    """The names of the real directories in `path` (a symlink is not followed: whatever one
    planted here points to lies outside the store, and gc neither lists nor removes it). A folder
    that cannot be read lists nothing: gc skips what it cannot see rather than fail."""
    try:
        with os.scandir(path) as entries:
            return sorted(e.name for e in entries if e.is_dir(follow_symlinks=False))
    except OSError:
        return []


def _real_dir(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def installed(payloads_root: str) -> Iterator[tuple[str, str, float | None]]:
    """Each installed payload version: (`ns:name version`, its directory, the mtime of its lock
    stamp, which every use touches, or None where it has none)."""
    for ns in real_subdirs(payloads_root):
        if ns in (LOCKS, TMP, PROBES):
            continue
        for name in real_subdirs(os.path.join(payloads_root, ns)):
            for version in real_subdirs(os.path.join(payloads_root, ns, name)):
                try:
                    used: float | None = os.stat(lock_path(payloads_root, ns, name, version)).st_mtime
                except OSError:
                    used = None
                yield f"{ns}:{name} {version}", os.path.join(payloads_root, ns, name, version), used


def gc(payloads_root: str, older_than_s: float | None = None, now: float | None = None) -> PayloadGc:
    now = time.time() if now is None else now
    report = PayloadGc()
    tmp = os.path.join(payloads_root, TMP)
    for name in os.listdir(tmp) if _real_dir(tmp) else ():
        path = os.path.join(tmp, name)
        try:
            if os.lstat(path).st_mtime < now - STALE_TMP_S:
                _rmtree(path)
                report.temp_removed += 1
        except OSError:
            pass
    if older_than_s is None or not os.path.isdir(payloads_root):  # the root may be the user's link to a disk
        return report
    for label, path, used in installed(payloads_root):
        if (used if used is not None else os.lstat(path).st_mtime) < now - older_than_s:
            _rmtree(path)
            report.removed.append(label)
    return report
