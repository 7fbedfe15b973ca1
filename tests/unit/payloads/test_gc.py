"""`mcpp cache gc` over the payload store: stale interrupted installs go, running ones and used
payloads stay."""
from __future__ import annotations

import os
import time

from mcpp.engine.payloads.gc import STALE_TMP_S, gc


def test_stale_temps_and_unused_versions_are_removed(tmp_path):
    root = tmp_path / "payloads"
    old_tmp, new_tmp = root / ".tmp" / ".tmp-old", root / ".tmp" / ".tmp-new"
    for d in (old_tmp, new_tmp, root / "xim" / "gen" / "1.0.0" / "bin", root / "xim" / "gen" / "2.0.0", root / ".locks"):
        d.mkdir(parents=True)
    now = time.time()
    os.utime(old_tmp, (now - STALE_TMP_S - 10,) * 2)
    (root / ".locks" / "xim+gen+1.0.0.lock").touch()
    os.utime(root / ".locks" / "xim+gen+1.0.0.lock", (now - 10 * 86400,) * 2)
    (root / ".locks" / "xim+gen+2.0.0.lock").touch()  # used just now
    os.chmod(root / "xim" / "gen" / "1.0.0" / "bin", 0o555)  # read-only trees are removed too

    assert gc(str(root), None, now).removed == []  # without an age only temporaries go
    assert not old_tmp.exists() and new_tmp.exists()
    report = gc(str(root), 86400, now)
    assert report.removed == ["xim:gen 1.0.0"]
    assert sorted(os.listdir(root / "xim" / "gen")) == ["2.0.0"]
