"""The server's no-op watch (engine/server/noop_watch.py): once armed it answers without a stat,
and every way a recorded file can change under it disarms it."""
from __future__ import annotations

import os
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


def test_an_edit_is_refused_without_the_whole_check(world, monkeypatch):
    """The file an event named has a new stat: the record does not hold, and the request goes to
    a build without the record read again and every file stat'ed (in front of the edit's compile)."""
    tmp_path, watch = world
    assert ask(watch, tmp_path) is not None  # checked and armed
    (tmp_path / "src/a.c").write_text("edited")

    def whole_check(*_args):
        raise AssertionError("the whole check ran for an edit the watch named")

    monkeypatch.setattr(noop, "load_record", whole_check)
    assert ask(watch, tmp_path) is None
    monkeypatch.undo()
    assert ask(watch, tmp_path) is None  # disarmed: the whole check says so again


def test_a_file_closed_unchanged_is_still_answered_by_the_whole_check(world):
    tmp_path, watch = world
    assert ask(watch, tmp_path) is not None  # checked and armed
    open(tmp_path / "src/a.c", "ab").close()  # an event (written and closed), the same stat
    assert ask(watch, tmp_path) is not None
    assert watch.answered_from_watch == 0


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
