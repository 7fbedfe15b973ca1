"""The knowledge's files kept proven between builds (engine/server/known_watch.py): what the
server checked after a build stays proven until an event names a file, and every way a file
can change under the watch makes the next build check it (or everything) again."""
from __future__ import annotations

import os
import time
from pathlib import Path

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


def _rewrite_in_place(path, text: str) -> None:
    with open(path, "r+") as f:  # the same inode: what a write through another of its names does
        f.seek(0)
        f.truncate()
        f.write(text)


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


def test_a_write_through_a_hard_link_made_before_arming_is_named(tmp_path):
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


def test_a_hard_link_made_after_arming_is_named_and_so_is_a_write_through_it_after_the_refresh(
        world, tmp_path_factory):
    """A link made from a directory the server does not watch raises no event in the file's
    directory, nor does a write through it: the file's own (inode) watch sees both."""
    tmp_path, watch, knowledge, stats, proof = world
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    os.link(tmp_path / "inc/h.h", elsewhere / "h.h")  # its link count changes
    assert "inc/h.h" in known_watch.given(watch, proof)[1]
    again = _refresh(watch, proof, knowledge, stats)
    assert known_watch.given(watch, again)[1] == set()  # watched, so not stat-checked every time
    _rewrite_in_place(elsewhere / "h.h", "through the other name")
    assert known_watch.given(watch, again)[1] == {"inc/h.h"}


def test_a_write_through_a_hard_link_made_after_the_refresh_is_named(world, tmp_path_factory):
    """The link made after the last build (when no count of links is taken) and the write
    through it both come before the next build: the inode watch names the file."""
    tmp_path, watch, knowledge, stats, proof = world
    again = _refresh(watch, proof, knowledge, stats)
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    os.link(tmp_path / "src/b.c", elsewhere / "b.c")
    _rewrite_in_place(elsewhere / "b.c", "through the other name")
    assert known_watch.given(watch, again)[1] == {"src/b.c"}


def test_a_file_replaced_by_a_build_is_watched_by_its_new_inode(world, tmp_path_factory):
    """An output rewritten by a rename is a new inode: the refresh watches it before checking
    it, so a write through a link made to it later is named."""
    tmp_path, watch, knowledge, stats, proof = world
    (tmp_path / "out/a.o.tmp").write_text("out/a.o")  # the same bytes, a new inode
    os.replace(tmp_path / "out/a.o.tmp", tmp_path / "out/a.o")
    assert known_watch.given(watch, proof)[1] == {"out/a.o"}
    again = _refresh(watch, proof, knowledge, stats)
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    os.link(tmp_path / "out/a.o", elsewhere / "a.o")
    _rewrite_in_place(elsewhere / "a.o", "tampered")
    assert "out/a.o" in known_watch.given(watch, again)[1]


def test_past_the_inode_watch_budget_every_file_is_checked_each_time(tmp_path, monkeypatch):
    """Where the server may watch no more inodes (a quarter of the user's inotify limit), the
    files it could not watch are stat-checked on every build: no event would name a write
    through another name."""
    monkeypatch.setattr(noop_watch, "_file_watch_budget", lambda: 2)
    for rel in NAMES:
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        (tmp_path / rel).write_text(rel)
    stats = StatCache(tmp_path / "stat")
    knowledge = Knowledge({}, {rel: str(stats.digest(tmp_path / rel)) for rel in NAMES}, {}, str(tmp_path))
    watch = NoopWatch()
    if watch.fileno() is None:
        pytest.skip("no inotify on this kernel: the build checks every file itself")
    try:
        proof = known_watch.arm(watch, "known", knowledge, stats)
        assert watch.files_watched == 2
        assert len(known_watch.given(watch, proof)[1]) == len(NAMES) - 2
        again = _refresh(watch, proof, knowledge, stats)
        assert len(known_watch.given(watch, again)[1]) == len(NAMES) - 2
    finally:
        watch.close()


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


def test_the_refresh_watches_named_files_a_slice_at_a_time_and_a_build_forked_meanwhile_gets_the_last_proof(
        world, monkeypatch, tmp_path_factory):
    """The server runs the refresh one step per turn of its loop (daemon.py `_in_steps`), so a
    request right after a build that rewrote many files waits for one slice of watches, not for
    all of them. Between two steps the last proof is still the armed one (a build forked then
    is given it, with every event since it was armed), and what happens meanwhile is not lost:
    a write is named by the next build, and so is a hard link made to a file."""
    tmp_path, watch, knowledge, stats, proof = world
    monkeypatch.setattr(noop_watch, "REARM_SLICE", 1)
    for rel in NAMES:
        (tmp_path / rel).write_text(f"{rel} edited before the refresh")
    steps = known_watch.refreshing(watch, proof, knowledge, stats)
    next(steps)  # the events read, the first named file watched anew
    (tmp_path / "src/b.c").write_text("written between two steps")
    os.link(tmp_path / "inc/h.h", tmp_path_factory.mktemp("elsewhere") / "x")  # raises no event in inc/
    given = known_watch.given(watch, proof)  # a build forked now
    assert given is not None and {"src/a.c", "src/b.c"} <= given[1]
    pauses, again = _steps_and_result(steps)
    assert pauses == len(NAMES) - 2  # one pause between each two files: len(NAMES) - 1 in all
    assert "src/a.c" not in again.proven
    assert {"src/b.c", "inc/h.h"} <= known_watch.given(watch, again)[1]
    assert known_watch.given(watch, proof) is None  # replaced once the refresh is done


def test_a_refresh_whose_watch_is_armed_anew_meanwhile_gives_no_proof(world, monkeypatch):
    tmp_path, watch, knowledge, stats, proof = world
    monkeypatch.setattr(noop_watch, "REARM_SLICE", 1)
    for rel in ("src/a.c", "src/b.c"):  # two files to watch anew: two steps
        (tmp_path / rel).write_text("edited")
    steps = known_watch.refreshing(watch, proof, knowledge, stats)
    next(steps)
    newer = known_watch.arm(watch, "known", knowledge, stats)  # the key's watch replaced between two steps
    assert _steps_and_result(steps)[1] is None
    assert known_watch.given(watch, newer) == (newer.proven, set())



def test_a_file_unreadable_for_a_moment_keeps_its_inode_watch(world, tmp_path_factory, monkeypatch):
    """Another arming that cannot stat a file for a moment (rights, a loop on the way) must not
    let go of the inode watch the proof relies on: only a path that names nothing does."""
    tmp_path, watch, knowledge, stats, proof = world
    again = _refresh(watch, proof, knowledge, stats)
    real_lstat = os.lstat

    def denied(path, *args, **kwargs):
        if str(path).endswith("src/b.c"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_lstat(path, *args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(os, "lstat", denied)
        watch.arm_files("another request", [str(tmp_path / "src/b.c")])
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    os.link(tmp_path / "src/b.c", elsewhere / "b.c")
    _rewrite_in_place(elsewhere / "b.c", "through the other name")
    assert "src/b.c" in known_watch.given(watch, again)[1]


@pytest.mark.parametrize("root", ["/work/ws", "/work/ws/", "/", "", Path("/work/ws")])
def test_the_knowledges_paths_are_the_ones_os_path_join_makes(root):
    """`Knowledge.files` builds each file's path by concatenation: the same string
    `os.path.join(execroot, rel)` gives (the stat cache holds digests under it), a system
    header's absolute path and a path with `..` included."""
    rels = ["src/a.c", "inc/h.h", "../other/x.h", "/usr/include/stdio.h", "a", ".hidden/b"]
    digests = {rel: "ab" * 32 + "/7" for rel in rels}
    files = Knowledge({}, digests, {}, root).files()
    assert [(rel, path) for rel, path, _ in files] == [(rel, os.path.join(root, rel)) for rel in rels]
    assert {h for _, _, h in files} == {bytes.fromhex("ab" * 32)}
