"""The manifests above a directory: the one upward search for `mcpp.toml`.

A command finds its package as the nearest `mcpp.toml` at or above its working directory, and
its workspace as a manifest further up that lists it (`package/locate.py`); the warm server's
client names its server after the workspace root it guesses the same way (`server/paths.py`).
All of them walk the same directories in the same order through `manifests_above`.
Standard library only: the server's client runs it before the engine is imported.
"""

import os
from _collections_abc import Iterator  # what `collections.abc` re-exports, already loaded

MANIFEST_NAME = "mcpp.toml"


def manifests_above(start: str) -> Iterator[str]:
    """Each `mcpp.toml` file in `start` (made absolute) and in its parents, nearest first."""
    d = os.path.abspath(start)
    while True:
        candidate = os.path.join(d, MANIFEST_NAME)
        if os.path.isfile(candidate):
            yield candidate
        parent = os.path.dirname(d)
        if parent == d:
            return
        d = parent
