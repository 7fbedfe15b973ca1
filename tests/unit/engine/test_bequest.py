"""The plan an in-process build leaves to the server it starts (engine/server/bequest.py): what
the server's walk of the roots lets it keep, and the request a plan serves."""
from __future__ import annotations

import os
import pickle
import time

from mcpp.engine.server import bequest
from mcpp.engine.server.child_memory import HandOff
from mcpp.engine.server.plan_memo import Entry
from mcpp.engine.cli.request_key import request_key


def _tree(root) -> dict[str, str]:
    files = {"mcpp.toml": "[package]\n", "src/a.cpp": "int a;\n", "src/b.cpp": "int b;\n", "include/h.hpp": "\n",
             "README": "\n", "target/dev/a.o": "x"}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return {rel: str(root / rel) for rel in files}


def _left(root, paths: dict[str, str]) -> tuple[bequest.Bequest, Entry]:
    """A bequest whose build began now, after the tree was written, and the plan it holds: the
    sources scanned and globbed, the header included."""
    # The build begins in a later second, whose start less the clock's slack (`since_ns`) is
    # after every stamp of the tree: a tree written in the last 10 ms of a second would
    # otherwise count as written after the build began (this test failed so under load).
    stamped = max(os.stat(p).st_ctime_ns for p in paths.values())
    while bequest.since_ns(time.time_ns()) <= stamped:
        time.sleep(1.05 - time.time() % 1)
    globs = {(str(root), ("src/**/*.cpp",), None): ["src/a.cpp", "src/b.cpp"]}
    handoff = HandOff(None, (), None, None, globs)
    entry = Entry(None, b"", [str(root)], {paths["src/a.cpp"]: None, paths["src/b.cpp"]: None},
                  {paths["include/h.hpp"]: ()})
    return bequest.Bequest("key", time.time_ns(), 0, handoff), entry


def test_nothing_changed_since_the_build_began(tmp_path):
    paths = _tree(tmp_path)
    left, entry = _left(tmp_path, paths)
    (tmp_path / "target/dev/b.o").write_text("the build's own output")  # target/ is not looked at
    assert bequest.rewritten(left, entry, [str(tmp_path)]) == set()


def test_a_file_the_plan_read_rewritten_since_is_handed_on_as_rewritten(tmp_path):
    paths = _tree(tmp_path)
    left, entry = _left(tmp_path, paths)
    (tmp_path / "src/a.cpp").write_text("int a = 1;\n")
    os.chmod(tmp_path / "include/h.hpp", 0o600)  # a status change counts the same
    assert bequest.rewritten(left, entry, [str(tmp_path)]) == {paths["src/a.cpp"], paths["include/h.hpp"]}


def test_a_file_created_or_edited_that_the_plan_did_not_read_keeps_nothing(tmp_path):
    paths = _tree(tmp_path)
    left, entry = _left(tmp_path, paths)
    (tmp_path / "src/c.cpp").write_text("int c;\n")  # a glob would find it
    assert bequest.rewritten(left, entry, [str(tmp_path)]) is None
    (tmp_path / "src/c.cpp").unlink()
    assert bequest.rewritten(left, entry, [str(tmp_path)]) == set()
    (tmp_path / "mcpp.toml").write_text("[package]\nname = 'x'\n")  # read, but not as a scanned file
    assert bequest.rewritten(left, entry, [str(tmp_path)]) is None


def test_a_file_the_plan_read_that_is_gone_keeps_nothing(tmp_path):
    paths = _tree(tmp_path)
    left, entry = _left(tmp_path, paths)
    (tmp_path / "src/b.cpp").unlink()
    assert bequest.rewritten(left, entry, [str(tmp_path)]) is None


def test_a_directory_moved_in_with_old_files_keeps_nothing(tmp_path):
    """A rename stamps the moved directory, not the files inside it: the files below a
    directory stamped since the build began must all be known."""
    paths = _tree(tmp_path / "p")
    old = tmp_path / "elsewhere"
    old.mkdir()
    (old / "d.cpp").write_text("int d;\n")
    left, entry = _left(tmp_path / "p", paths)
    os.rename(old, tmp_path / "p/src/more")
    assert bequest.rewritten(left, entry, [str(tmp_path / "p")]) is None


def test_a_directory_stamped_by_an_edit_inside_it_keeps_the_plan(tmp_path):
    """An editor that saves by renaming a new file over the old one stamps the directory too:
    every file below it is known, so only the edited file counts as rewritten."""
    paths = _tree(tmp_path)
    left, entry = _left(tmp_path, paths)
    (tmp_path / "src/a.cpp.new").write_text("int a = 2;\n")
    os.rename(tmp_path / "src/a.cpp.new", tmp_path / "src/a.cpp")
    assert bequest.rewritten(left, entry, [str(tmp_path)]) == {paths["src/a.cpp"]}


def test_a_change_in_the_second_the_build_began_counts_as_after_it():
    """Some file systems keep whole seconds, and the kernel's clock lags a tick: a stamp from the
    second the build began in may be a change made after it."""
    began = 1_700_000_123_400_000_000
    assert bequest.since_ns(began) == 1_700_000_123_000_000_000 - bequest.CLOCK_SLACK_NS


def test_the_same_request_whatever_the_build_prints():
    def key(*argv: str, **change) -> str:
        return request_key({"argv": list(argv), "cwd": "/w", "env": {"A": "1"}, "umask": 0o22, **change})

    plain = key("build", "-j", "2")
    assert key("build", "-j2", "--trace", "t.json", "--message-format", "json", "-q") == plain
    assert key("-v", "--color", "never", "build", "-j", "2", "--timings=json") == plain
    assert key("build", "-j", "2", "--release") != plain
    assert key("build", "-j", "1") != plain
    assert key("build", "-j", "2", env={"A": "2"}) != plain
    assert key("run", "--trace", "t.json") != key("run")  # a line only click reads: word for word


def test_a_damaged_or_foreign_bequest_is_none_and_removed(tmp_path):
    path = tmp_path / "x-1.bequest"
    for data in (b"not a pickle", pickle.dumps({"plan": "of someone else"})):
        path.write_bytes(data)
        assert bequest.take(str(path)) is None and not path.exists()
    assert bequest.take(str(path)) is None  # none at all
