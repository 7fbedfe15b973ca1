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


def test_gc_never_follows_a_symlink_planted_under_payloads(tmp_path):
    """A `dir` or `off` action can write `$MCPP_HOME`: links it plants under payloads/ must not
    make gc chmod (or remove) directories outside the store."""
    outside = tmp_path / "outside"
    (outside / "locked" / "deep").mkdir(parents=True)
    (outside / "ns" / "name" / "1.0").mkdir(parents=True)
    (outside / "ns" / "name" / "1.0" / "keep.txt").write_text("mine\n")
    os.chmod(outside / "locked", 0o500)
    root = tmp_path / "payloads"
    (root / ".tmp").mkdir(parents=True)
    (root / "xim" / "gen" / "1.0.0").mkdir(parents=True)
    (root / "xim" / "gen" / "1.0.0" / "escape").symlink_to(outside / "locked")  # inside a payload
    (root / ".tmp" / ".tmp-old").symlink_to(outside / "locked")  # a stale temporary that is a link
    (root / "evil").symlink_to(outside / "ns")  # a namespace that is a link
    (root / "xim" / "other").symlink_to(outside / "ns" / "name")  # a package that is a link
    now = time.time()
    os.utime(root / ".tmp" / ".tmp-old", (now - STALE_TMP_S - 10,) * 2, follow_symlinks=False)
    before = {p: os.stat(p).st_mode for p in (outside / "locked", outside / "locked" / "deep")}
    try:
        report = gc(str(root), 0.0, now + 10)
        assert {p: os.stat(p).st_mode for p in before} == before
        assert (outside / "ns" / "name" / "1.0" / "keep.txt").read_text() == "mine\n"
        assert report.removed == ["xim:gen 1.0.0"]  # the real payload went, its link with it
        assert not (root / "xim" / "gen" / "1.0.0").exists() and not (root / ".tmp" / ".tmp-old").is_symlink()
    finally:
        os.chmod(outside / "locked", 0o700)
