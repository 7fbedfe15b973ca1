"""`mcpp cache gc` over the payload store.

What it removes: temporary directories of installs that were killed (older than an hour, so a
running install is never swept), and with `--older-than` the installed versions no build has used
for that long. Use is stamped on the payload's lock file (`.locks/`), not inside the payload,
whose bytes must stay what the archive held. A removed payload is installed again by the next
build that needs it; adopted `system` payloads are never touched.
"""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass

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
    for dirpath, dirs, _files in os.walk(path):
        for d in dirs:
            try:
                os.chmod(os.path.join(dirpath, d), 0o755)
            except OSError:
                pass
    shutil.rmtree(path, ignore_errors=True)


def gc(payloads_root: str, older_than_s: float | None = None, now: float | None = None) -> PayloadGc:
    now = time.time() if now is None else now
    report = PayloadGc()
    tmp = os.path.join(payloads_root, TMP)
    for name in os.listdir(tmp) if os.path.isdir(tmp) else ():
        path = os.path.join(tmp, name)
        try:
            if os.stat(path).st_mtime < now - STALE_TMP_S:
                _rmtree(path)
                report.temp_removed += 1
        except OSError:
            pass
    if older_than_s is None or not os.path.isdir(payloads_root):
        return report
    for ns in sorted(os.listdir(payloads_root)):
        if ns in (LOCKS, TMP, PROBES) or not os.path.isdir(os.path.join(payloads_root, ns)):
            continue
        for name in sorted(os.listdir(os.path.join(payloads_root, ns))):
            for version in sorted(os.listdir(os.path.join(payloads_root, ns, name))):
                path = os.path.join(payloads_root, ns, name, version)
                stamp = lock_path(payloads_root, ns, name, version)
                try:
                    used = os.stat(stamp).st_mtime
                except OSError:
                    used = os.stat(path).st_mtime
                if used < now - older_than_s:
                    _rmtree(path)
                    report.removed.append(f"{ns}:{name} {version}")
    return report
