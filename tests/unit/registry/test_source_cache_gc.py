"""`mcpp cache gc --max-size` counts and evicts the index packages' source cache
(`$MCPP_HOME/registry/<ns>/<name>/<version>/`, engine/state/home_gc.py) like the other installed
things: least recently used first, its `.blake3` record before the tree."""
from __future__ import annotations

import os
import time

from mcpp.cas.home import Home
from mcpp.engine.state import home_gc


def _release(home: Home, name: str, version: str, size: int) -> str:
    d = os.path.join(str(home.root), "registry", "mcpplibs", name, version)
    os.makedirs(os.path.join(d, "src"))
    with open(os.path.join(d, "src", "lib.cpp"), "wb") as f:
        f.write(os.urandom(size))
    with open(d + ".blake3", "w") as f:
        f.write("0" * 64)
    os.chmod(os.path.join(d, "src"), 0o555)  # the cache's trees are read-only
    return d


def test_source_cache_is_counted_and_evicted_least_recently_used_first(tmp_path):
    home = Home(tmp_path / "home")
    old = _release(home, "greet", "1.0.0", 3 << 20)
    time.sleep(0.05)
    new = _release(home, "fmt", "10.2.1", 1 << 20)
    # as if two hours passed: everything is out of the grace window, `old` used before `new`
    report = home_gc.bound(home, 2 << 20, now=time.time() + 7200)
    assert report.before >= 4 << 20
    assert not os.path.exists(old) and not os.path.exists(old + ".blake3")
    assert os.path.isdir(new) and os.path.exists(new + ".blake3")
    assert report.removed == {"host tools, payloads and index sources": 1}
    assert report.after <= 2 << 20


def test_a_recently_used_release_is_kept(tmp_path):
    home = Home(tmp_path / "home")
    d = _release(home, "greet", "1.0.0", 1 << 20)
    report = home_gc.bound(home, 0)
    assert os.path.isdir(d) and report.kept_recent >= 1 << 20
