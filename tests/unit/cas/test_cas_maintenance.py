"""stats, verify, gc and clean over a whole mcpp home."""
from __future__ import annotations

import os
import time

from mcpp.cas.action_cache import ActionCache, ActionEntry
from mcpp.cas.digest import Digest
from mcpp.cas.home import Home
from mcpp.cas.materialize import Materializer
from mcpp.cas.maintenance import clean, gc, stats, verify
from cas_testdata import flip_byte, object_like

K = ["%02x" % i + "e" * 62 for i in range(8)]


def entry(*outputs: Digest, stderr: Digest | None = None) -> ActionEntry:
    return ActionEntry(outputs={f"out{i}": (d, 0o644) for i, d in enumerate(outputs)}, stderr=stderr)


def age(path, seconds_ago: float) -> None:
    t = time.time() - seconds_ago
    os.utime(path, (t, t))


def test_stats_counts_blobs_entries_and_sizes(home, store):
    a = store.put(object_like(100_000))
    b = store.put(b"tiny")
    ac = ActionCache(home.ac)
    ac.put(K[0], entry(a))
    ac.add_manifest(K[1], ["x.h"])
    Materializer(store, home.mat).path(a)
    s = stats(home)
    assert s["blobs"] == 2
    assert s["uncompressed_bytes"] == a.size + b.size
    assert 0 < s["stored_bytes"] < s["uncompressed_bytes"]
    assert (s["action_entries"], s["manifests"]) == (1, 1)
    assert (s["materialized_files"], s["materialized_bytes"]) == (1, a.size)
    assert s["temp_files"] == 0 and s["blobs_without_size"] == 0


def test_stats_of_an_empty_home(home):
    assert stats(home)["blobs"] == 0


def test_verify_names_corrupted_blobs_and_keeps_them(home, store, local):
    good = store.put(object_like(50_000, seed=1))
    bad = store.put(object_like(50_000, seed=2))
    path = local.path_of(bad)
    flip_byte(path, os.path.getsize(path) // 2)
    assert verify(home) == [bad]
    assert os.path.exists(path)  # not deleted unless asked
    assert verify(home, delete=True) == [bad]
    assert not os.path.exists(path) and local.has(good)
    assert verify(home) == []


def test_verify_reports_undecodable_blob(home, store, local):
    d = store.put(b"x" * 1000)
    os.chmod(local.path_of(d), 0o644)
    with open(local.path_of(d), "wb") as f:
        f.write(b"garbage!")
    assert [c.hash for c in verify(home)] == [d.hash]


def test_gc_keeps_referenced_blobs_and_drops_the_rest(home, store, local):
    kept_out = store.put(b"object referenced by an entry")
    kept_err = store.put(b"warning: referenced stderr")
    orphan = store.put(b"nobody needs me")
    ActionCache(home.ac).put(K[0], entry(kept_out, stderr=kept_err))
    report = gc(home, grace_s=0)
    assert local.has(kept_out) and local.has(kept_err) and not local.has(orphan)
    assert report.blobs_removed == 1 and report.entries_removed == 0


def test_gc_grace_window_protects_fresh_unreferenced_blobs(home, store, local):
    fresh = store.put(b"output whose entry is being written right now")
    old = store.put(b"old orphan")
    age(local.path_of(old), 3600)
    gc(home)  # default grace
    assert local.has(fresh) and not local.has(old)


def test_gc_older_than_evicts_old_entries_and_their_blobs(home, store, local):
    shared = store.put(b"shared by both entries")
    only_old = store.put(b"only the old entry")
    only_new = store.put(b"only the new entry")
    ac = ActionCache(home.ac)
    ac.put(K[0], entry(shared, only_old))
    ac.put(K[1], entry(shared, only_new))
    age(ac.path_of(K[0]), 8 * 86400)
    report = gc(home, older_than_s=7 * 86400, grace_s=0)
    assert ac.get(K[0]) is None and ac.get(K[1]) is not None
    assert local.has(shared) and local.has(only_new) and not local.has(only_old)
    assert report.entries_removed == 1 and report.blobs_removed == 1


def test_gc_max_size_evicts_least_recently_used_first(home, store, local):
    ac = ActionCache(home.ac)
    shared = store.put(object_like(20_000, seed=99))
    blobs = []
    for i in range(4):
        d = store.put(os.urandom(50_000))  # incompressible: ~50 KB on disk each
        blobs.append(d)
        ac.put(K[i], entry(d, shared))
        age(ac.path_of(K[i]), 1000 - i * 100)  # K[0] least recently used
    before = stats(home)["stored_bytes"]
    report = gc(home, max_size=before - 60_000, grace_s=0)
    assert ac.get(K[0]) is None and ac.get(K[1]) is None  # two evictions needed
    assert ac.get(K[2]) is not None and ac.get(K[3]) is not None
    assert not local.has(blobs[0]) and not local.has(blobs[1])
    assert local.has(blobs[2]) and local.has(blobs[3]) and local.has(shared)
    assert report.bytes_after <= before - 60_000 and report.bytes_freed > 100_000
    # Invariant: every remaining entry's blobs are still there.
    for f in ac.iter_files():
        e = ac.get(f.key)
        assert local.find_missing(e.blobs()) == []


def test_gc_removes_materialized_copies_of_deleted_blobs(home, store, local):
    mat = Materializer(store, home.mat)
    kept = store.put(b"kept")
    gone = store.put(b"gone")
    ActionCache(home.ac).put(K[0], entry(kept))
    mat.path(kept)
    mat.path(gone)
    mat.path(gone, executable=True)
    report = gc(home, grace_s=0)
    assert report.mat_removed == 2
    assert os.path.exists(mat.path(kept)) and stats(home)["materialized_files"] == 1


def test_gc_removes_malformed_entries(home):
    ac = ActionCache(home.ac)
    p = ac.path_of(K[0])
    os.makedirs(os.path.dirname(p))
    with open(p, "w") as f:
        f.write("{")
    assert gc(home).malformed_removed == 1 and not os.path.exists(p)


def test_clean_empties_the_stores(home, store):
    d = store.put(b"x")
    ActionCache(home.ac).put(K[0], entry(d))
    Materializer(store, home.mat).path(d)
    ro = home.tool / "x" / "pkg@1.0" / "include"
    ro.mkdir(parents=True)
    (ro / "a.h").write_text("")
    os.chmod(ro, 0o555)
    os.chmod(ro.parent, 0o555)
    home.payloads.mkdir()
    (home.payloads / "keep").write_text("")
    clean(home)
    for sub in (home.cas, home.ac, home.mat, home.tool):
        assert os.listdir(sub) == []
    assert os.listdir(home.payloads) == ["keep"]  # not a store clean owns


def test_clean_of_a_missing_home(tmp_path):
    clean(tmp_path / "nothing-here")


def test_gc_sweeps_abandoned_temp_files_but_not_fresh_ones(home, store):
    d = store.put(b"x")
    ActionCache(home.ac).put(K[0], entry(d))
    old = os.path.join(home.ac, K[0][:2], ".tmp-abandoned")
    fresh = os.path.join(home.ac, K[0][:2], ".tmp-in-flight")
    for p in (old, fresh):
        open(p, "w").close()
    age(old, 2 * 3600)
    assert stats(home)["temp_files"] == 2
    assert gc(home).temp_removed == 1
    assert not os.path.exists(old) and os.path.exists(fresh)
