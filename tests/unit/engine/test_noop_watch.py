"""The server's no-op watch (engine/server/noop_watch.py): once armed it answers without a stat,
and every way a recorded file can change under it disarms it."""
from __future__ import annotations

import os
import shutil
import time

import pytest

from mcpp.engine.state import noop
from mcpp.engine.server.noop_watch import NoopWatch
from mcpp.engine.server.source_watch import SourceWatch

ARGV = ["build"]


@pytest.fixture
def world(tmp_path, monkeypatch):
    """Files a build depended on: one reached through a directory link in a directory nothing
    else is recorded in (`links/cur -> ../v1`), one plain, one not there yet; and a record."""
    home = tmp_path / "home"
    monkeypatch.setenv("MCPP_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    for version in ("v1", "v2"):
        (tmp_path / version).mkdir()
        (tmp_path / version / "cfg.h").write_text(version)
    (tmp_path / "links").mkdir()
    os.symlink("../v1", tmp_path / "links/cur")
    (tmp_path / "src").mkdir()
    (tmp_path / "src/a.c").write_text("a")
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc/h.h").write_text("h")
    files = [str(tmp_path / "links/cur/cfg.h"), str(tmp_path / "src/a.c"), str(tmp_path / "gone/maybe.h"),
             str(tmp_path / "inc/h.h")]
    time.sleep(0.02)  # the build that records them begins a tick after they were written
    started = noop.begin(ARGV)
    assert noop.record(ARGV, ("Finished", "dev in {elapsed}"), files, [str(tmp_path / "src")], 1, started)
    time.sleep(0.02)  # files as new as the record are doubted; these are older now
    watch = NoopWatch()
    if watch.fileno() is None:
        pytest.skip("no inotify on this kernel: the server stat-checks every record instead")
    yield tmp_path, watch
    watch.close()


def ask(watch: NoopWatch, tmp_path) -> str | None:
    return watch.answer(ARGV, str(tmp_path), dict(os.environ), False, time.monotonic())


def test_armed_after_one_check_then_answered_from_the_watch(world):
    tmp_path, watch = world
    assert ask(watch, tmp_path).startswith("Finished dev in ")
    assert watch.answered_from_watch == 0
    assert ask(watch, tmp_path) is not None and ask(watch, tmp_path) is not None
    assert watch.answered_from_watch == 2


def _repoint(tmp_path):
    os.unlink(tmp_path / "links/cur")
    os.symlink("../v2", tmp_path / "links/cur")


def test_a_neighbour_no_record_lists_disarms_nothing(world):
    tmp_path, watch = world
    assert ask(watch, tmp_path) is not None  # checked and armed
    (tmp_path / "inc/notes.txt").write_text("a file beside a header, in no glob's directory")
    assert ask(watch, tmp_path) is not None
    assert watch.answered_from_watch == 1


CHANGES = {
    "a plain file rewritten": lambda t: (t / "src/a.c").write_text("b"),
    "a header beside other files rewritten": lambda t: (t / "inc/h.h").write_text("H"),
    "a file behind a link rewritten": lambda t: (t / "v1/cfg.h").write_text("V1"),
    "a link on the way re-pointed": _repoint,
    "a missing file appearing in a missing directory": lambda t: ((t / "gone").mkdir(), (t / "gone/maybe.h").write_text("")),
    "a new file in a globbed directory": lambda t: (t / "src/b.c").write_text(""),
    "the record removed": lambda t: [os.unlink(p) for p in (t / "home/noop").iterdir()],
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_each_change_disarms(world, change):
    tmp_path, watch = world
    assert ask(watch, tmp_path) is not None  # checked and armed
    CHANGES[change](tmp_path)
    assert ask(watch, tmp_path) is None, change
    assert watch.answered_from_watch == 0


def test_a_write_through_a_hard_link_made_after_arming_is_not_answered(world, tmp_path_factory):
    """A link made from a directory nothing watches, and a write through it, raise no event in
    the file's directory: the file's own (inode) watch names it."""
    tmp_path, watch = world
    assert ask(watch, tmp_path) is not None and ask(watch, tmp_path) is not None  # armed, answered from the watch
    other = tmp_path_factory.mktemp("elsewhere") / "h.h"
    os.link(tmp_path / "inc/h.h", other)
    with open(other, "r+") as f:  # the same inode
        f.write("H")
    assert ask(watch, tmp_path) is None
    assert watch.answered_from_watch == 1


def test_a_directory_watched_under_two_names_is_watched_anew_under_both_once_it_is_gone(tmp_path):
    """A directory reached through a link and by its own path is one watch: when the directory
    goes, neither name may keep that dead watch, or whatever is armed later over the new
    directory under that name would hear nothing from it."""
    (tmp_path / "real").mkdir()
    os.symlink("real", tmp_path / "alias")
    watch = NoopWatch()
    if watch.fileno() is None:
        pytest.skip("no inotify on this kernel")
    try:
        names = [str(tmp_path / "real"), str(tmp_path / "alias")]
        dead = {watch._watch(n)[0] for n in names}
        assert len(dead) == 1  # one inode, one watch
        shutil.rmtree(tmp_path / "real")
        watch.drain()  # IN_IGNORED
        (tmp_path / "real").mkdir()
        for n in names:
            assert watch._watch(n)[0] not in dead, n
    finally:
        watch.close()


def test_a_file_watched_also_where_a_directory_is_awaited_is_forgotten_as_both(tmp_path):
    """`inc/vector` is a file, and `inc/vector/x.h` (missing) is awaited in it: the file's watch is
    also the one `_watch` gives for that directory. When the file goes, neither may keep it."""
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc/vector").write_text("a header")
    watch = NoopWatch()
    if watch.fileno() is None:
        pytest.skip("no inotify on this kernel")
    try:
        armed = watch.arm_files("k", [str(tmp_path / "inc/vector"), str(tmp_path / "inc/vector/x.h")])
        assert armed is not None
        dead = watch._watch(str(tmp_path / "inc/vector"))[0]
        os.unlink(tmp_path / "inc/vector")
        changed = watch.changed(armed)  # None: an event on an awaited directory's own watch voids it
        assert changed is None or str(tmp_path / "inc/vector") in changed
        (tmp_path / "inc/vector").mkdir()
        assert watch._watch(str(tmp_path / "inc/vector"))[0] != dead
    finally:
        watch.close()


def test_an_edit_is_refused_without_the_whole_check(world, monkeypatch):
    """The file an event named has a new stat: the record does not hold, and the request goes to
    a build without the record read again and every file stat'ed (in front of the edit's compile)."""
    tmp_path, watch = world
    assert ask(watch, tmp_path) is not None  # checked and armed
    (tmp_path / "src/a.c").write_text("edited")

    def whole_check(*_args):
        raise AssertionError("the whole check ran for an edit the watch named")

    with monkeypatch.context() as patched:
        patched.setattr(noop, "load_record", whole_check)
        assert ask(watch, tmp_path) is None
        assert ask(watch, tmp_path) is None  # and again, until a build's record is armed


def test_a_file_closed_unchanged_is_still_answered_by_the_whole_check(world):
    tmp_path, watch = world
    assert ask(watch, tmp_path) is not None  # checked and armed
    open(tmp_path / "src/a.c", "ab").close()  # an event (written and closed), the same stat
    assert ask(watch, tmp_path) is not None
    assert watch.answered_from_watch == 0


def _build_again(tmp_path, edit=None):
    """A build of ARGV again, as the server's child runs one after the edit (if any): its record
    marked pending, the files read, the record written anew."""
    if edit is not None:
        edit(tmp_path)
        time.sleep(0.02)
    started = noop.begin(ARGV)
    files = [str(tmp_path / "links/cur/cfg.h"), str(tmp_path / "src/a.c"), str(tmp_path / "gone/maybe.h"),
             str(tmp_path / "inc/h.h")]
    time.sleep(0.02)
    assert noop.record(ARGV, ("Finished", "dev in {elapsed}"), files, [str(tmp_path / "src")], 1, started)
    time.sleep(0.02)


@pytest.mark.parametrize("edit", [None, lambda t: (t / "src/a.c").write_text("edited")],
                         ids=["a no-op", "an edit"])
def test_a_new_record_is_armed_from_the_watch_checking_only_what_it_changed(world, monkeypatch, edit):
    """After a build (a no-op, or one that read an edited file) the server arms its new record
    from the previous one's watch: only the files whose stamps changed are stat'ed, not all."""
    tmp_path, watch = world
    assert ask(watch, tmp_path) is not None  # checked and armed
    _build_again(tmp_path, edit)
    checked = []
    unheld = noop.unheld
    with monkeypatch.context() as patched:
        patched.setattr(noop, "unheld", lambda record, only=None, most=0: (checked.append(only),
                                                                           unheld(record, only, most))[1])
        watch.prepare(ARGV, str(tmp_path), dict(os.environ))
    assert checked == [[] if edit is None else [1]]  # src/a.c is the record's second file
    assert ask(watch, tmp_path) is not None
    assert watch.answered_from_watch == 1
    (tmp_path / "inc/h.h").write_text("H")  # the watch still sees every file
    assert ask(watch, tmp_path) is None


def test_a_file_changed_after_the_build_read_it_is_not_carried(world):
    tmp_path, watch = world
    assert ask(watch, tmp_path) is not None
    _build_again(tmp_path)
    (tmp_path / "inc/h.h").write_text("saved after the build read it")
    watch.prepare(ARGV, str(tmp_path), dict(os.environ))
    assert ask(watch, tmp_path) is None


def test_an_edited_file_saved_again_after_the_build_is_not_carried(world, monkeypatch):
    """Builds run back to back: the next edit is saved before the server takes the last
    build's record in. That record does not hold, and the whole check need not say so; the
    next build's record is carried from the watch of the last one that held."""
    tmp_path, watch = world
    assert ask(watch, tmp_path) is not None
    _build_again(tmp_path, lambda t: (t / "src/a.c").write_text("edited"))
    (tmp_path / "src/a.c").write_text("edited again, after the build read it")

    def whole_check(*_args):
        raise AssertionError("the whole check ran where a changed file said enough")

    with monkeypatch.context() as patched:
        patched.setattr(watch, "_checked_record", whole_check)
        watch.prepare(ARGV, str(tmp_path), dict(os.environ))
        assert ask(watch, tmp_path) is None
        _build_again(tmp_path)  # the build of the second edit
        watch.prepare(ARGV, str(tmp_path), dict(os.environ))
    assert ask(watch, tmp_path) is not None
    assert watch.answered_from_watch == 1


def test_a_record_checked_after_the_next_edit_stays_armed_with_that_file(world, monkeypatch):
    """Builds run back to back, and nothing was armed (the server's first look, or the last
    record did not hold): the record's whole check comes after the next edit was saved. It does
    not hold, and stays armed with the edited file, so the next build's record is carried from
    it rather than checked whole again in front of the build after."""
    tmp_path, watch = world
    (tmp_path / "src/a.c").write_text("edited before the server looked")
    watch.prepare(ARGV, str(tmp_path), dict(os.environ))  # checked whole: src/a.c differs

    def whole_check(*_args):
        raise AssertionError("the whole check ran where the stale file said enough")

    with monkeypatch.context() as patched:
        patched.setattr(watch, "_checked_record", whole_check)
        assert ask(watch, tmp_path) is None  # not a no-op: the edited file differs
        _build_again(tmp_path)  # the build of the edit
        watch.prepare(ARGV, str(tmp_path), dict(os.environ))
        assert ask(watch, tmp_path) is not None
    assert watch.answered_from_watch == 1
    (tmp_path / "inc/h.h").write_text("H")  # every other file is still watched
    assert ask(watch, tmp_path) is None


def test_a_record_checked_after_many_files_changed_is_not_kept_armed(world, monkeypatch):
    tmp_path, watch = world
    monkeypatch.setattr("mcpp.engine.server.noop_watch.MOST_STALE", 1)
    (tmp_path / "src/a.c").write_text("edited")
    (tmp_path / "inc/h.h").write_text("edited")
    watch.prepare(ARGV, str(tmp_path), dict(os.environ))
    assert watch._armed == {}


def test_source_watch_ignores_byte_code_and_sees_a_source_edit(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/mod.py").write_text("x = 1\n")
    watch = SourceWatch([str(tmp_path / "pkg")])
    if watch.fileno() is None:
        pytest.skip("no inotify on this kernel: the server digests its sources on every request instead")
    try:
        assert watch.quiet()
        (tmp_path / "pkg/__pycache__").mkdir()
        (tmp_path / "pkg/__pycache__/mod.cpython-311.pyc").write_bytes(b"")
        assert watch.quiet()
        (tmp_path / "pkg/mod.py").write_text("x = 2\n")
        assert not watch.quiet()
    finally:
        watch.close()
