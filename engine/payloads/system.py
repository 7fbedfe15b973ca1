"""Adopting an installation already on the machine (`system = "/usr/local/cuda"`).

Nothing is copied: the directory is used in place, read-only, when its probe (argv, the first
word relative to the root) prints the release's version through `match`. The probe is what makes
adoption honest: an index that says `13.0.88` is believed only when the installation says so.
"""
from __future__ import annotations

import functools
import os
import re
import subprocess

from .descriptor import Source

PROBE_TIMEOUT_S = 30


@functools.lru_cache(maxsize=64)
def probed_version(root: str, probe: tuple[str, ...], match: str) -> tuple[str | None, str]:
    """(the version the installation reports, or None; why not, when None)."""
    if not os.path.isdir(root):
        return None, f"`{root}` does not exist"
    argv = [probe[0] if os.path.isabs(probe[0]) else os.path.join(root, probe[0]), *probe[1:]]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, cwd=root,
                             stdin=subprocess.DEVNULL, errors="replace")
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"its probe `{' '.join(argv)}` did not run ({e})"
    m = re.search(match, out.stdout + out.stderr)
    if m is None:
        return None, f"the output of `{' '.join(argv)}` does not match `{match}`"
    return m.group(1), ""


def adopt(source: Source, version: str) -> tuple[str | None, str]:
    """(the adopted root, or None; why not)."""
    found, why = probed_version(source.system, source.probe, source.match)
    if found is None:
        return None, why
    if found != version:
        return None, f"`{source.system}` reports version {found}"
    return source.system, ""


def installed_versions(source_versions: list[tuple[str, Source]]) -> list[str]:
    """Of the releases with a `system` source, those the machine actually has."""
    return [v for v, s in source_versions if adopt(s, v)[0] is not None]
