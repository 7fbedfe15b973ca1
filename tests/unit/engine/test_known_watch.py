"""The knowledge's files kept proven between builds (engine/server/known_watch.py): what the
server checked after a build stays proven until an event names a file, and every way a file
can change under the watch makes the next build check it (or everything) again."""
from __future__ import annotations

import os
import time

import pytest

from mcpp.cas.statcache import StatCache
from mcpp.engine.server import known_watch, noop_watch
from mcpp.engine.server.noop_watch import NoopWatch
from mcpp.engine.state.unchanged import Knowledge, Unchanged

NAMES = ("src/a.c", "src/b.c", "inc/h.h", "out/a.o")


@pytest.fixture
def world(tmp_path):
    """An execroot whose files a build keyed, the stat cache it left, its knowledge, and a
    proof armed over them (as the server makes after the build)."""
    for rel in NAMES:
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        (tmp_path / rel).write_text(rel)
    stats = StatCache(tmp_path / "stat")
    digests = {rel: str(stats.digest(tmp_path / rel)) for rel in NAMES}
    time.sleep(0.02)  # saved a clock tick after the writes, as a build's end is
    stats.save()
    stats = StatCache(tmp_path / "stat")
    knowledge = Knowledge({}, digests, {}, str(tmp_path))
    watch = NoopWatch()
    if watch.fileno() is None:
        pytest.skip("no inotify on this kernel: the build checks every file itself")
    proof = known_watch.arm(watch, "known", knowledge, stats)
    yield tmp_path, watch, knowledge, stats, proof
    watch.close()


def _steps_and_result(steps):
    """How many times the generator `steps` paused, and what it returned."""
    pauses = 0
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return pauses, done.value
        pauses += 1


def _refresh(watch, proof, knowledge, stats):
    """`known_watch.refreshing` run to its end, as the server runs it with no request between."""
    return _steps_and_result(known_watch.refreshing(watch, proof, knowledge, stats))[1]


def test_every_file_is_proven_after_the_check_and_stays_so_without_events(world):
    tmp_path, watch, knowledge, stats, proof = world
    assert proof.proven == knowledge.digests
    assert known_watch.given(watch, proof) == (knowledge.digests, set())


def test_the_next_build_stats_only_what_an_event_named(world, monkeypatch):
    tmp_path, watch, knowledge, stats, proof = world
    (tmp_path / "src/b.c").write_text("edited")
    given = known_watch.given(watch, proof)
    assert given == (knowledge.digests, {"src/b.c"})
    asked = []
    real = StatCache.holding
    monkeypatch.setattr(StatCache, "holding", lambda self, files: asked.extend(f[0] for f in files) or real(self, files))
    proven = Unchanged(knowledge, watched=given).proven(stats)
    assert asked == ["src/b.c"]
    assert set(proven) == set(NAMES) - {"src/b.c"}


def test_a_file_with_another_hard_link_is_always_checked(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src/a.c").write_text("a")
    os.link(tmp_path / "src/a.c", tmp_path / "elsewhere.c")  # a write through it raises no event in src/
    stats = StatCache(tmp_path / "stat")
    knowledge = Knowledge({}, {"src/a.c": str(stats.digest(tmp_path / "src/a.c"))}, {}, str(tmp_path))
    watch = NoopWatch()
    if watch.fileno() is None:
        pytest.skip("no inotify on this kernel")
    proof = known_watch.arm(watch, "known", knowledge, stats)
    with open(tmp_path / "elsewhere.c", "w") as f:
        f.write("b")
    assert known_watch.given(watch, proof)[1] == {"src/a.c"}
    watch.close()


@pytest.mark.parametrize("change", ["a directory removed", "a directory renamed", "re-armed elsewhere"])
def test_when_anything_may_have_changed_nothing_is_given(world, change):
    tmp_path, watch, knowledge, stats, proof = world
    if change == "a directory removed":
        os.unlink(tmp_path / "out/a.o")
        os.rmdir(tmp_path / "out")
    elif change == "a directory renamed":
        os.rename(tmp_path / "inc", tmp_path / "inc2")
        os.mkdir(tmp_path / "inc")
        (tmp_path / "inc/h.h").write_text("inc/h.h")
    else:
        known_watch.arm(watch, "known", knowledge, stats)  # the old proof is no longer armed
    assert known_watch.given(watch, proof) is None


def test_a_file_changed_before_the_check_is_not_proven(world):
    tmp_path, watch, knowledge, stats, proof = world
    (tmp_path / "src/a.c").write_text("changed after the build, before the server looked")
    again = known_watch.arm(watch, "known", knowledge, stats)
    assert "src/a.c" not in again.proven and set(again.proven) == set(NAMES) - {"src/a.c"}


def test_a_refreshed_proof_checks_again_only_what_an_event_named(world, monkeypatch):
    """A no-op build hands the same knowledge back: the server keeps its proof, checking only
    the files touched since, and counts events from the refresh on."""
    tmp_path, watch, knowledge, stats, proof = world
    (tmp_path / "inc/h.h").write_text("inc/h.h")  # the same bytes, a new stat: checked, left to the build to hash
    (tmp_path / "src/a.c").write_text("edited!")  # other bytes: no longer proven
    asked = []
    real = StatCache.holding
    monkeypatch.setattr(StatCache, "holding", lambda self, files: asked.extend(f[0] for f in files) or real(self, files))
    again = _refresh(watch, proof, knowledge, stats)
    assert sorted(asked) == ["inc/h.h", "src/a.c"]
    assert set(again.proven) == set(NAMES) - {"src/a.c", "inc/h.h"}
    assert known_watch.given(watch, again) == (again.proven, set())  # those events are behind it now
    (tmp_path / "src/b.c").write_text("later")
    assert known_watch.given(watch, again)[1] == {"src/b.c"}
    assert known_watch.given(watch, proof) is None  # the old proof is replaced


def test_a_proof_whose_watch_saw_everything_may_have_changed_is_armed_afresh(world):
    tmp_path, watch, knowledge, stats, proof = world
    os.rename(tmp_path / "src", tmp_path / "src-moved")  # an event on a watched directory itself
    assert _refresh(watch, proof, knowledge, stats) is None


def test_an_event_right_after_the_refresh_read_the_watch_is_not_lost(world, monkeypatch):
    """The refresh reads what changed, then counts events from there: a write landing between
    the two is named by the next build, not swallowed by a second read of the queue."""
    tmp_path, watch, knowledge, stats, proof = world
    real = NoopWatch.changed

    def changed_then_a_write(self, armed):
        out = real(self, armed)
        (tmp_path / "src/b.c").write_text("written just after the read")
        time.sleep(0.05)  # the event is in the kernel's queue before the refresh goes on
        return out

    monkeypatch.setattr(NoopWatch, "changed", changed_then_a_write)
    again = _refresh(watch, proof, knowledge, stats)
    monkeypatch.setattr(NoopWatch, "changed", real)
    assert "src/b.c" in known_watch.given(watch, again)[1]


def test_a_hard_link_made_after_arming_makes_the_refresh_check_the_file_from_then_on(world, tmp_path_factory):
    tmp_path, watch, knowledge, stats, proof = world
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    os.link(tmp_path / "inc/h.h", elsewhere / "h.h")  # no event in a watched directory
    again = _refresh(watch, proof, knowledge, stats)
    assert "inc/h.h" in known_watch.given(watch, again)[1]  # a write through the other name raises none either


def test_the_proof_of_an_edits_knowledge_checks_only_the_files_it_keys_anew(world, monkeypatch):
    """An edit's build hands back knowledge a few digests apart (the source, its object): the
    refresh checks those and what an event named, and keeps the rest proven."""
    tmp_path, watch, knowledge, stats, proof = world
    (tmp_path / "src/a.c").write_text("edited")
    (tmp_path / "out/a.o").write_text("its object")
    new_stats = StatCache(tmp_path / "stat")
    digests = dict(knowledge.digests, **{rel: str(new_stats.digest(tmp_path / rel)) for rel in ("src/a.c", "out/a.o")})
    time.sleep(0.02)
    new_stats.save()
    new_stats = StatCache(tmp_path / "stat")
    after_edit = Knowledge({}, digests, {}, str(tmp_path))
    asked = []
    real = StatCache.holding
    monkeypatch.setattr(StatCache, "holding", lambda self, files: asked.extend(f[0] for f in files) or real(self, files))
    again = _refresh(watch, proof, after_edit, new_stats)
    assert sorted(asked) == ["out/a.o", "src/a.c"]
    assert again.proven == digests  # the edited files proven with their new digests, the rest kept
    (tmp_path / "inc/h.h").write_text("later")
    assert known_watch.given(watch, again)[1] == {"inc/h.h"}


def test_the_refresh_takes_link_counts_a_slice_at_a_time_and_a_build_forked_meanwhile_gets_the_last_proof(
        world, monkeypatch, tmp_path_factory):
    """The server runs the refresh one step per turn of its loop (daemon.py `_in_steps`), so a
    request right after a build waits for one slice of `stat`s, not for all of them. Between
    two steps the last proof is still the armed one (a build forked then is given it, with
    every event since it was armed), and what happens meanwhile is not lost: a write is named
    by the next build, a hard link made before its file's slice is counted."""
    tmp_path, watch, knowledge, stats, proof = world
    monkeypatch.setattr(noop_watch, "REARM_SLICE", 1)
    files = [f[1] for f in knowledge.files()]  # the order their link counts are taken in
    (tmp_path / "src/a.c").write_text("edited before the refresh")
    steps = known_watch.refreshing(watch, proof, knowledge, stats)
    next(steps)  # the events read, the first file's link count taken
    (tmp_path / "src/b.c").write_text("written between two steps")
    os.link(files[-1], tmp_path_factory.mktemp("elsewhere") / "x")  # raises no event where it is watched
    given = known_watch.given(watch, proof)  # a build forked now
    assert given is not None and {"src/a.c", "src/b.c"} <= given[1]
    pauses, again = _steps_and_result(steps)
    assert pauses == len(files) - 2  # one pause between each two files: len(files) - 1 in all
    assert "src/a.c" not in again.proven
    last = os.path.relpath(files[-1], tmp_path)
    assert {"src/b.c", last} <= known_watch.given(watch, again)[1]
    assert known_watch.given(watch, proof) is None  # replaced once the refresh is done


def test_a_refresh_whose_watch_is_armed_anew_meanwhile_gives_no_proof(world, monkeypatch):
    tmp_path, watch, knowledge, stats, proof = world
    monkeypatch.setattr(noop_watch, "REARM_SLICE", 1)
    steps = known_watch.refreshing(watch, proof, knowledge, stats)
    next(steps)
    newer = known_watch.arm(watch, "known", knowledge, stats)  # the key's watch replaced between two steps
    assert _steps_and_result(steps)[1] is None
    assert known_watch.given(watch, newer) == (newer.proven, set())


def test_the_refresh_counts_links_as_a_stat_of_each_path_would(tmp_path, tmp_path_factory):
    """The refresh takes link counts relative to each opened directory (one path walk per
    directory): it finds the files with several names that a `stat` of each full path finds,
    through a directory only searchable, a tree output's `dir/`, and past a file gone."""
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (tmp_path / "src").mkdir()
    (tmp_path / "gen/docs").mkdir(parents=True)
    (tmp_path / "locked").mkdir()
    for rel in ("src/a.c", "src/b.c", "src/gone.c", "locked/l.h", "gen/docs/i.html"):
        (tmp_path / rel).write_text(rel)
    os.link(tmp_path / "src/b.c", elsewhere / "b.c")
    os.link(tmp_path / "locked/l.h", elsewhere / "l.h")
    paths = [str(tmp_path / p) for p in ("src/a.c", "gen/docs/", "src/b.c", "locked/l.h", "src/gone.c")]
    watch = NoopWatch()
    if watch.fileno() is None:
        pytest.skip("no inotify on this kernel: the build checks every file itself")
    try:
        armed = watch.arm_files("known", paths)
        os.unlink(tmp_path / "src/gone.c")
        (tmp_path / "locked").chmod(0o111)  # search only: no listing, no opening for reading
        try:
            again = _steps_and_result(watch.rearming(armed))[1]
        finally:
            (tmp_path / "locked").chmod(0o755)
        by_stat = [k for k, p in enumerate(paths) if os.path.exists(p) and os.stat(p).st_nlink > 1]
        assert again.linked == by_stat == [1, 2, 3]  # a directory has two names at least
    finally:
        watch.close()
