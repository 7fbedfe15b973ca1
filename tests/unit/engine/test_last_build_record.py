"""`last-build.json` (what `mcpp cache stats` reports): rewritten only when it changes."""
from __future__ import annotations

import json
import os

from mcpp.cas.home import Home
from mcpp.engine.build.compose import record_last_build
from mcpp.engine.exec.pipeline import Counters


def test_a_build_like_the_last_leaves_the_record_untouched(tmp_path):
    home = Home.of(tmp_path)
    record_last_build(home, Counters(fresh=12))
    first = os.stat(home.last_build)
    record_last_build(home, Counters(fresh=12))  # one no-op after another writes nothing
    again = os.stat(home.last_build)
    assert (again.st_ino, again.st_mtime_ns) == (first.st_ino, first.st_mtime_ns)
    record_last_build(home, Counters(fresh=11, executed=1))
    with open(home.last_build) as f:
        assert json.load(f) == {"fresh": 11, "cache_hits": 0, "remote_hits": 0, "executed": 1, "failed": 0}
