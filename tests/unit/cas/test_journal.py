"""cas/journal.py: a state file is a snapshot plus the changes of each save; a load gives what was
saved, whatever was cut short or written by someone else in between."""
from __future__ import annotations

import marshal
import os
import time

import pytest

from mcpp.cas import journal
from mcpp.cas.statcache import StatCache, StateDiscarded

FMT = "test-journal-1"


def _shaped(d: dict) -> bool:
    return isinstance(d, dict) and all(isinstance(k, str) and isinstance(v, int) for k, v in d.items())


def _load(path) -> journal.Loaded | None:
    return journal.load(str(path), FMT, 1, _shaped)


def _state(n: int) -> dict[str, int]:
    return {f"k{i}": i for i in range(n)}


def test_a_save_of_a_few_keys_appends_them_and_a_load_gives_the_whole_state(tmp_path):
    path = tmp_path / "state"
    d = _state(100)
    st = journal.save(str(path), FMT, (d,), (set(d),), None)  # no file yet: whole
    whole = st.st_size
    d["k1"], d["new"] = -1, 7
    del d["k2"]
    st2 = journal.save(str(path), FMT, (d,), ({"k1", "new", "k2"},), journal.stamp(st))
    assert st2.st_ino == st.st_ino and whole < st2.st_size < whole + 100  # appended, not rewritten
    found = _load(path)
    assert found is not None and found.payload == (d,) and found.stamp == journal.stamp(st2)


def test_a_file_changed_since_its_writer_read_it_is_written_whole(tmp_path):
    """Another writer appended (or rewrote) the file since: appending after it would mix the two."""
    path = tmp_path / "state"
    d = _state(100)
    st = journal.save(str(path), FMT, (d,), (set(d),), None)
    other = dict(d, k5=-5)
    journal.append(str(path), FMT, (({"k5": -5}, ()),), journal.stamp(st))
    d["k1"] = -1
    st2 = journal.save(str(path), FMT, (d,), ({"k1"},), journal.stamp(st))  # stale stamp
    assert st2.st_ino != st.st_ino  # written whole (a new file renamed over)
    assert _load(path).payload == (d,) != (other,)


def test_a_state_file_that_is_a_link_is_replaced_not_appended_through(tmp_path):
    """A state file's name made a link to another file of the same format (another project's
    state): a load follows it, so its stamp is that file's, but the save must not write into
    it: the link is replaced by a file of its own, the other file left as it was."""
    other = tmp_path / "elsewhere" / "state"
    other.parent.mkdir()
    d = _state(100)
    journal.save(str(other), FMT, (d,), (set(d),), None)
    before = other.read_bytes()
    path = tmp_path / "state"
    path.symlink_to(other)
    found = _load(path)
    assert found.stamp == journal.stamp(os.stat(other))
    loaded = found.payload[0]
    loaded["k1"] = -1
    journal.save(str(path), FMT, (loaded,), ({"k1"},), found.stamp)
    assert other.read_bytes() == before
    assert not path.is_symlink() and _load(path).payload == (loaded,)


def test_a_frame_cut_short_ends_the_file_and_the_next_save_writes_it_whole(tmp_path):
    """A build killed while appending: the load keeps what came before and gives no stamp, so
    nothing is ever appended after the partial frame."""
    path = tmp_path / "state"
    d = _state(100)
    st = journal.save(str(path), FMT, (d,), (set(d),), None)
    before = dict(d)
    d["k1"] = -1
    st2 = journal.save(str(path), FMT, (d,), ({"k1"},), journal.stamp(st))
    os.truncate(path, st2.st_size - 3)
    found = _load(path)
    assert found.payload == (before,) and found.stamp is None
    loaded = found.payload[0]
    loaded["k3"] = -3
    st3 = journal.save(str(path), FMT, (loaded,), ({"k3"},), found.stamp)
    assert st3.st_ino != st.st_ino
    again = _load(path)
    assert again.payload == (dict(before, k3=-3),) and again.stamp == journal.stamp(st3)


def test_frames_that_would_outgrow_the_snapshot_make_a_whole_write(tmp_path):
    path = tmp_path / "state"
    d = _state(50)
    st = journal.save(str(path), FMT, (d,), (set(d),), None)
    first = st.st_size
    for round_ in range(200):
        d[f"k{round_ % 10}"] = -round_
        st = journal.save(str(path), FMT, (d,), ({f"k{round_ % 10}"},), journal.stamp(st))
        assert st.st_size <= 2 * first + 100  # the file never holds much more than twice the state
    assert _load(path).payload == (d,)


def test_a_save_that_touched_most_keys_writes_the_file_whole(tmp_path):
    path = tmp_path / "state"
    d = _state(10)
    st = journal.save(str(path), FMT, (d,), (set(d),), None)
    d.update({k: -v for k, v in d.items()})
    st2 = journal.save(str(path), FMT, (d,), (set(d),), journal.stamp(st))
    assert st2.st_ino != st.st_ino and _load(path).payload == (d,)


def _with_frames(*frames: object) -> bytes:
    out = journal.MAGIC
    for f in frames:
        body = marshal.dumps(f)
        out += len(body).to_bytes(8, "big") + body
    return out


@pytest.mark.parametrize("data, why", [
    (_with_frames((FMT, {"a": 1}), (FMT, ({"b": "not an int"}, ()))), "wrong-shaped"),  # a change of the wrong shape
    (_with_frames((FMT, {"a": 1}), (FMT, ({}, (3,)))), "wrong-shaped"),  # a removed key that is no key
    (_with_frames((FMT, {"a": 1}), (FMT,)), "wrong-shaped"),  # a change for no dictionary
    (_with_frames((FMT, {"a": "x"})), "wrong-shaped"),
    (journal.MAGIC + (5).to_bytes(8, "big") + b"\xffjunk", "unreadable"),
    (journal.MAGIC, "unreadable"),
    (b"\x00garbage", "unreadable"),
])
def test_damaged_files_are_unusable(tmp_path, data, why):
    path = tmp_path / "state"
    path.write_bytes(data)
    with pytest.raises(journal.Unusable) as e:
        _load(path)
    assert e.value.why == why


@pytest.mark.parametrize("data", [
    marshal.dumps(("test-journal-0", {"a": 1})),  # an earlier version's single blob
    _with_frames(("another-format", {"a": 1})),
])
def test_another_version_or_format_starts_over_quietly(tmp_path, data):
    path = tmp_path / "state"
    path.write_bytes(data)
    with pytest.raises(journal.Foreign):
        _load(path)


def _fake_stat(mtime_ns: int):
    real = os.stat

    def stat(path):
        st = real(path)
        return os.stat_result((st.st_mode, st.st_ino, st.st_dev, st.st_nlink, st.st_uid, st.st_gid, st.st_size,
                               0, 0, 0, 0, 0, 0, mtime_ns, mtime_ns, mtime_ns))
    return stat


def test_a_racy_entry_dropped_at_one_save_is_out_of_the_file_for_a_load_after_a_later_save(tmp_path):
    """The stat cache's guard (an entry stamped no earlier than its save is not trusted) holds per
    save: once a later save appends, a load guards by that later write, so the entry the first
    save's guard dropped must already be out of the file."""
    racy_file, other = tmp_path / "racy.cpp", tmp_path / "other.cpp"
    racy_file.write_bytes(b"v1")
    kept = [tmp_path / f"kept{i}.cpp" for i in range(8)]  # enough that one change is appended
    for f in (other, *kept):
        f.write_bytes(f.name.encode())
    cache_file = tmp_path / "stat"
    ahead = time.time_ns() + 10**12  # stamped after the first save's write: racy there
    c = StatCache(cache_file, stat=lambda p: _fake_stat(ahead)(p) if os.fspath(p) == os.fspath(racy_file)
                  else os.stat(p))
    for f in (racy_file, other, *kept):
        c.digest(str(f))
    c.save()
    assert c.recorded(str(racy_file)) is None and c.racy == 1  # dropped in memory
    ino = os.stat(cache_file).st_ino
    # The next build starts from this copy as a server keeps it (state_memo.taking): what it
    # saves is what it touches, not the entry dropped before.
    c.touched.clear()
    c._stat = os.stat
    os.utime(other, ns=(1, 1))
    c.digest(str(other))
    c.save()
    assert os.stat(cache_file).st_ino == ino  # appended
    os.utime(cache_file, ns=(ahead + 1, ahead + 1))  # a write later than the entry's stamp
    loaded = StatCache(cache_file, stat=lambda p: _fake_stat(ahead)(p) if os.fspath(p) == os.fspath(racy_file)
                       else os.stat(p))
    assert loaded.recorded(str(racy_file)) is None  # never trusted: the file lost it at the first save
    assert loaded.recorded(str(other)) is not None


def test_a_stat_cache_saved_by_appending_loads_as_it_was(tmp_path):
    files = [tmp_path / f"f{i}.cpp" for i in range(20)]
    for f in files:
        f.write_bytes(f.name.encode())
    past = time.time_ns() - 10**10
    for f in files:
        os.utime(f, ns=(past, past))
    cache_file = tmp_path / "stat"
    c = StatCache(cache_file)
    for f in files:
        c.digest(str(f))
    c.save()
    whole = os.stat(cache_file)
    c = StatCache(cache_file)  # the next build's
    files[0].write_bytes(b"changed")
    os.utime(files[0], ns=(past + 1, past + 1))
    c.digest(str(files[0]))
    c.forget(str(files[1]))
    c.save()
    after = os.stat(cache_file)
    assert after.st_ino == whole.st_ino and after.st_size > whole.st_size  # appended
    loaded = StatCache(cache_file)
    assert loaded._entries == c._entries and loaded.stamp == journal.stamp(after)


def test_a_damaged_change_frame_in_the_stat_cache_is_discarded_with_a_warning(tmp_path):
    cache_file = tmp_path / "stat"
    f = tmp_path / "a.cpp"
    f.write_bytes(b"x")
    c = StatCache(cache_file)
    c.digest(str(f))
    c.save()
    with open(cache_file, "ab") as out:
        body = marshal.dumps(("mcpp-statcache-2", ({str(f): (1, 2)}, ())))
        out.write(len(body).to_bytes(8, "big") + body)
    with pytest.warns(StateDiscarded, match="wrong-shaped; discarded"):
        loaded = StatCache(cache_file)
    assert len(loaded) == 0
