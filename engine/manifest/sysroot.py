"""`[target.<triple>] sysroot`: an explicit sysroot is checked, never searched past.

A directory that exists but lacks the platform's marker files would only fail later, at link
time, with a message about `crt1.o` that names neither the manifest nor the key. An explicit
path that is wrong is a mistake to report, not a reason to look elsewhere, so no fallback is
tried after it. The markers are per os, below; adding a platform is a row here.
"""
from __future__ import annotations

import os

from ..core.errors import ManifestError, Position
from .triples import Triple

# os -> (marker files, the directories of a sysroot they may sit in; {triple} is the target's)
MARKERS = {
    "linux": (("crt1.o", "libc.a"), ("usr/lib", "usr/lib/{triple}", "usr/lib64", "lib", "lib64")),
    "windows": (("kernel32.lib",), ("lib", "Lib", "usr/lib")),
    "macos": (("libSystem.tbd",), ("usr/lib",)),
}


def check_sysroot(root: str, written: str, target: Triple, pos: Position) -> str:
    """The absolute sysroot, or a positioned error naming what is missing."""
    path = os.path.normpath(os.path.join(root, written))
    if not os.path.isdir(path):
        raise ManifestError(f"sysroot `{written}` does not exist (paths resolve against the manifest's directory)", pos)
    files, dirs = MARKERS[target.os]
    dirs = tuple(d.format(triple=target.text) for d in dirs)
    for d in dirs:
        if all(os.path.isfile(os.path.join(path, d, f)) for f in files):
            return path
    raise ManifestError(
        f"sysroot `{written}` is not a {target.os} sysroot: none of {', '.join(dirs)} holds "
        f"{' and '.join(files)}; an explicit sysroot is used as written and never searched past, so fix the "
        f"path or remove the key", pos)
