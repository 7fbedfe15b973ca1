"""Which files a compile read, from its make-style depfile (`-MD -MF`)."""
from __future__ import annotations

import os

from mcpp.sandbox import parse_depfile


def discovered_inputs(depfile_text: str, execroot: str, declared: set[str]) -> tuple[str, ...]:
    """Execroot-relative files the compile read beyond its declared inputs.

    Files outside the execroot (system headers) belong to the toolchain, whose identity is
    already in the key; module BMIs are declared inputs already.
    """
    out: dict[str, None] = {}
    for dep in parse_depfile(depfile_text):
        path = os.path.normpath(os.path.join(execroot, dep))
        rel = os.path.relpath(path, execroot)
        if rel.startswith("..") or rel in declared or rel.endswith((".gcm", ".pcm")):
            continue
        if os.path.isfile(path):
            out.setdefault(rel)
    return tuple(sorted(out))
