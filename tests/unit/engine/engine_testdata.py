"""Helpers for the engine core's unit tests: real files in a temporary execroot, no compiler."""
from __future__ import annotations

import os

from mcpp.cas.statcache import StatCache
from mcpp.engine.state.incremental import BuildState


def open_state(execroot, state_dir) -> BuildState:
    """A build state as a new build loads it from disk."""
    return BuildState(str(state_dir / "actions"), str(execroot), StatCache(state_dir / "stat"))


def write(root, rel: str, text: str) -> str:
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path
