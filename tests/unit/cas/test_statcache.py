"""StatCache: hash once, persist compactly, and never trust a racily clean entry."""
from __future__ import annotations

import os
import time
from types import SimpleNamespace

import pytest

from mcpp.cas import journal, statcache
from mcpp.cas.digest import digest_bytes
from mcpp.cas.statcache import StatCache, StateDiscarded, stat_key


def settle(directory, *paths) -> None:
    """Wait until the file system clock has ticked past the given files' timestamps.

    Tests that expect a *hit* after reloading need their files to be strictly older than the
    cache's write, exactly as a real edit-then-build sequence is.
    """
    newest = max(max(os.stat(p).st_mtime_ns, os.stat(p).st_ctime_ns) for p in paths)
    probe = os.path.join(directory, ".probe")
    for _ in range(1000):
        with open(probe, "wb"):
            pass
        if os.stat(probe).st_mtime_ns > newest:
            os.unlink(probe)
            return
        time.sleep(0.001)
    raise AssertionError("file system clock did not advance")


def test_digest_and_bytes_hands_back_what_it_hashed_on_a_miss_and_nothing_on_a_hit(tmp_path):
    f = tmp_path / "a.cpp"
    f.write_bytes(b"int a;")
    c = StatCache(tmp_path / "stat")
    assert c.digest_and_bytes(f) == (digest_bytes(b"int a;"), b"int a;")
    assert c.digest_and_bytes(f) == (digest_bytes(b"int a;"), None)
    assert c.digest(f) == digest_bytes(b"int a;")
    assert (c.hashed, c.hits) == (1, 2)


def test_hashes_once_then_hits(tmp_path):
    f = tmp_path / "a.cpp"
    f.write_bytes(b"int a;")
    c = StatCache(tmp_path / "stat")
    assert c.digest(f) == digest_bytes(b"int a;")
    assert c.digest(f) == digest_bytes(b"int a;")
    assert (c.hashed, c.hits) == (1, 1)


def test_persisted_cache_answers_without_hashing(tmp_path):
    files = []
    for i in range(50):
        f = tmp_path / f"src{i}.cpp"
        f.write_bytes(f"int f{i}();".encode())
        files.append(f)
    c = StatCache(tmp_path / "stat")
    expected = [c.digest(f) for f in files]
    settle(tmp_path, *files)
    c.save()

    c2 = StatCache(tmp_path / "stat", hash_file=lambda p: (_ for _ in ()).throw(AssertionError(p)))
    assert [c2.digest(f) for f in files] == expected
    assert (c2.hashed, c2.hits, c2.racy) == (0, 50, 0)


def test_holding_names_the_files_that_still_have_the_recorded_hash(tmp_path):
    names = ["same", "rewritten", "other-hash", "never-hashed", "gone", "racy"]
    paths = {n: tmp_path / n for n in names}
    for n, p in paths.items():
        p.write_bytes(n.encode())
    c = StatCache(tmp_path / "stat")
    hashes = {n: bytes.fromhex(c.digest(p).hash) for n, p in paths.items() if n != "never-hashed"}
    settle(tmp_path, *paths.values())
    c.save()
    paths["rewritten"].write_bytes(b"REWRITTEN")
    paths["gone"].unlink()
    hashes["other-hash"] = bytes.fromhex(digest_bytes(b"not its bytes").hash)
    hashes["never-hashed"] = bytes.fromhex(digest_bytes(b"never-hashed").hash)
    c2 = StatCache(tmp_path / "stat")
    c2._entries.pop(str(paths["racy"]))  # as the guard drops an entry stamped in the tick of the write
    assert c2.holding([(n, str(paths[n]), hashes[n]) for n in names]) == ["same"]
    assert c2.hashed == 0


def test_changed_file_is_rehashed(tmp_path):
    f = tmp_path / "a.h"
    f.write_bytes(b"#define A 1\n")
    c = StatCache(tmp_path / "stat")
    c.digest(f)
    f.write_bytes(b"#define A 22\n")
    assert c.digest(f) == digest_bytes(b"#define A 22\n") and c.hashed == 2


def test_file_replaced_by_rename_is_rehashed(tmp_path):
    f = tmp_path / "a.h"
    f.write_bytes(b"one")
    c = StatCache(tmp_path / "stat")
    c.digest(f)
    st = os.stat(f)
    new = tmp_path / "a.h.new"
    new.write_bytes(b"two")
    os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same mtime, new inode
    os.replace(new, f)
    assert c.digest(f) == digest_bytes(b"two")


def test_entry_stamped_in_the_tick_of_the_write_is_rehashed(tmp_path):
    """git's racy-timestamp guard, at its boundary: `stamp >= written` is suspect."""
    f = tmp_path / "racy.cpp"
    f.write_bytes(b"v1")
    st = os.stat(f)
    stamp = max(st.st_mtime_ns, st.st_ctime_ns)
    cache_file = tmp_path / "stat"
    c = StatCache(cache_file)
    c.digest(f)
    c.save()

    os.utime(cache_file, ns=(stamp, stamp))  # the cache was written in the same tick
    c2 = StatCache(cache_file)
    assert c2.racy == 1
    c2.digest(f)
    assert (c2.hashed, c2.hits) == (1, 0)

    os.utime(cache_file, ns=(stamp + 1, stamp + 1))  # written strictly later: trusted
    c3 = StatCache(cache_file)
    c3.digest(f)
    assert (c3.hashed, c3.hits, c3.racy) == (0, 1, 0)


def fake_stat(mtime_ns: int):
    """A stat that never changes, as for a file rewritten within one timestamp tick."""
    return lambda path: SimpleNamespace(
        st_dev=1, st_ino=2, st_size=2, st_mtime_ns=mtime_ns, st_ctime_ns=mtime_ns
    )


def test_same_tick_modification_is_caught_after_reload(tmp_path):
    f = tmp_path / "a.cpp"
    f.write_bytes(b"v1")
    cache_file = tmp_path / "stat"
    now_ish = time.time_ns() + 10**12  # stamped no earlier than the cache's write
    c = StatCache(cache_file, stat=fake_stat(now_ish))
    assert c.digest(f) == digest_bytes(b"v1")
    c.save()
    f.write_bytes(b"v2")  # same size; the (fake) stat cannot tell
    c2 = StatCache(cache_file, stat=fake_stat(now_ish))
    assert c2.digest(f) == digest_bytes(b"v2")


def test_without_the_guard_an_identical_stat_would_be_trusted(tmp_path):
    """The control for the test above: an old stamp is trusted, stale bytes and all."""
    f = tmp_path / "a.cpp"
    f.write_bytes(b"v1")
    cache_file = tmp_path / "stat"
    c = StatCache(cache_file, stat=fake_stat(1))
    c.digest(f)
    c.save()
    f.write_bytes(b"v2")
    c2 = StatCache(cache_file, stat=fake_stat(1))
    assert c2.digest(f) == digest_bytes(b"v1") and c2.hits == 1


def test_unchanged_cache_is_not_rewritten(tmp_path):
    f = tmp_path / "a.cpp"
    f.write_bytes(b"x")
    cache_file = tmp_path / "stat"
    c = StatCache(cache_file)
    c.digest(f)
    settle(tmp_path, f)
    c.save()
    marker = time.time_ns() + 10**15  # later than anything: any rewrite would change it
    os.utime(cache_file, ns=(marker, marker))
    c2 = StatCache(cache_file)
    c2.digest(f)
    c2.save()
    assert c2.hits == 1 and os.stat(cache_file).st_mtime_ns == marker


def test_unreadable_cache_file_starts_empty(tmp_path):
    cache_file = tmp_path / "stat"
    cache_file.write_bytes(b"\x00garbage")
    f = tmp_path / "a.cpp"
    f.write_bytes(b"x")
    with pytest.warns(StateDiscarded, match="unreadable; discarded"):
        c = StatCache(cache_file)
    assert len(c) == 0 and c.digest(f) == digest_bytes(b"x")
    c.save()
    assert len(StatCache(cache_file)) <= 1


def test_save_is_atomic(tmp_path):
    cache_file = tmp_path / "state" / "stat"
    f = tmp_path / "a.cpp"
    f.write_bytes(b"x")
    c = StatCache(cache_file)
    c.digest(f)
    c.save()
    assert os.listdir(cache_file.parent) == ["stat"]


def test_stat_key(tmp_path):
    f = tmp_path / "out.o"
    assert stat_key(f) is None
    f.write_bytes(b"abc")
    k = stat_key(f)
    assert k.size == 3 and k == stat_key(f)
    f.write_bytes(b"abcd")
    assert stat_key(f) != k


def test_a_reloaded_cache_answers_1000_unchanged_files_without_hashing(tmp_path):
    """How long that pass takes is measured by bench/hot_loops.py."""
    src = tmp_path / "src"
    src.mkdir()
    files = []
    for i in range(1000):
        p = src / f"f{i}.cpp"
        p.write_bytes(b"int x%d;\n" % i * 20)
        files.append(str(p))
    c = StatCache(tmp_path / "stat")
    for p in files:
        c.digest(p)
    settle(tmp_path, *files)
    c.save()
    c2 = StatCache(tmp_path / "stat")
    for p in files:
        c2.digest(p)
    c2.save()
    assert c2.hashed == 0 and c2.hits == 1000
    assert os.path.getsize(tmp_path / "stat") < 250 * 1000  # path + 5 ints + 32-byte hash


def test_recorded_is_the_stat_the_file_was_hashed_at_not_its_stat_now(tmp_path):
    f = tmp_path / "a.c"
    f.write_bytes(b"one")
    cache = StatCache(tmp_path / "stat.cache")
    assert cache.recorded(str(f)) is None  # never read
    cache.digest(str(f))
    hashed = stat_key(str(f))
    assert cache.recorded(str(f)) == hashed
    time.sleep(0.01)
    f.write_bytes(b"two!")  # saved after the build read it: the record keeps what was read
    assert cache.recorded(str(f)) == hashed != stat_key(str(f))


def test_after_a_save_an_entry_recorded_since_the_last_guard_in_its_tick_is_dropped_and_older_ones_kept(tmp_path):
    """The guard after a save looks at the entries recorded since its last pass (the others were
    older than that pass's stamp, so older than this one): a new racy entry still goes."""
    old, new = tmp_path / "old.cpp", tmp_path / "new.cpp"
    old.write_bytes(b"v1")
    new.write_bytes(b"v1")
    cache_file = tmp_path / "stat"
    c = StatCache(cache_file)
    c.digest(old)
    settle(tmp_path, old)
    c.save()
    c = StatCache(cache_file)  # loaded: `old` passed the guard
    assert c.hits == 0 and c.recorded(old) is not None
    future = time.time_ns() + 10**12
    real = c._stat
    c._stat = lambda path: fake_stat(future)(path) if os.fspath(path) == os.fspath(new) else real(path)
    c.digest(new)
    c.save()
    assert c.recorded(new) is None and c.racy == 1  # stamped after the write: not trusted
    assert c.recorded(old) is not None


def test_a_save_stamped_before_the_last_guard_checks_every_entry(tmp_path):
    """A clock that went back (the cache file's last stamp is later than this write): no entry
    is taken as checked."""
    f = tmp_path / "a.cpp"
    f.write_bytes(b"v1")
    cache_file = tmp_path / "stat"
    stamp = time.time_ns() + 10**12
    c = StatCache(cache_file, stat=fake_stat(stamp - 1))
    c.digest(f)
    # as a save on a clock `stamp` ahead writes it (a save now drops the entry from the file)
    journal.write_whole(str(cache_file), statcache._FORMAT, (c._entries,))
    os.utime(cache_file, ns=(stamp, stamp))  # written "later" than the entry: trusted at load
    c2 = StatCache(cache_file, stat=fake_stat(stamp - 1))
    assert c2.racy == 0 and c2.recorded(f) is not None
    c2.forget(tmp_path / "other")
    c2._dirty = True
    c2.save()  # now, before `stamp - 1`: the entry is in this write's future
    assert c2.recorded(f) is None and c2.racy == 1


def test_adopt_takes_anothers_entries_where_it_has_none_each_still_proven_by_its_stat(tmp_path):
    """A warm server's build whose cache file is gone (`rm -rf target`) takes the server's
    entries: an unchanged file is answered without hashing, an edited one is hashed again."""
    kept, edited, new = tmp_path / "kept.cpp", tmp_path / "edited.cpp", tmp_path / "new.cpp"
    for f in (kept, edited, new):
        f.write_bytes(f"int {f.stem[0]};".encode())
    old = StatCache(tmp_path / "old-stat")
    for f in (kept, edited):
        old.digest(f)
    settle(tmp_path, kept, edited, new)
    old.save()
    old = StatCache(tmp_path / "old-stat")  # as the server holds it: loaded from its file
    (tmp_path / "old-stat").unlink()
    edited.write_bytes(b"int x;")  # the same size: only its stamps tell the held entry is stale

    fresh = StatCache(tmp_path / "stat")
    assert fresh.digest(new) == digest_bytes(b"int n;")  # its own entry stays its own
    assert fresh.adopt(old) == 2
    assert fresh.digest(kept) == digest_bytes(b"int k;")
    assert fresh.digest(edited) == digest_bytes(b"int x;")
    assert (fresh.hashed, fresh.hits) == (2, 1)  # new.cpp and the edit were read; kept.cpp was not
    assert fresh.adopt(StatCache(tmp_path / "none")) == 0


def test_adopted_entries_are_saved_and_checked_by_the_next_writes_racy_guard(tmp_path):
    """What was taken is written with the cache (a later in-process build finds it), and the
    save's guard looks at every entry again: an entry stamped at or after that write is not kept."""
    f = tmp_path / "a.cpp"
    f.write_bytes(b"int a;")
    old = StatCache(tmp_path / "old-stat")
    old.digest(f)
    settle(tmp_path, f)
    fresh = StatCache(tmp_path / "stat")
    fresh.adopt(old)
    fresh.save()
    again = StatCache(tmp_path / "stat")
    assert again.digest(f) == digest_bytes(b"int a;") and again.hashed == 0

    late = StatCache(tmp_path / "late-stat", stat=lambda p: SimpleNamespace(  # stamped far in the future
        st_dev=1, st_ino=2, st_size=6, st_mtime_ns=1 << 62, st_ctime_ns=1 << 62))
    late.digest(f)
    fresh = StatCache(tmp_path / "stat2")
    fresh.adopt(late)
    fresh.save()
    assert fresh.recorded(os.fspath(f)) is None and fresh.racy == 1
