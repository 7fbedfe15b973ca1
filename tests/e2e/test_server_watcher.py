"""The server's watcher (engine/server/watcher.py) on a real file system: inotify and the stat
scan answer the same question the same way."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mcpp.engine.server import watcher
from mcpp.engine.server.watcher import IN_Q_OVERFLOW, Inotify, StatScan

pytestmark = pytest.mark.one_mode  # drives the watcher in process, no build: the server-on run leaves it out


@pytest.fixture(params=[Inotify, StatScan], ids=["inotify", "stat"])
def tree(request, tmp_path):
    (tmp_path / "src/sub").mkdir(parents=True)
    (tmp_path / "src/a.cpp").write_text("int a;\n")
    (tmp_path / "src/sub/b.cpp").write_text("int b;\n")
    (tmp_path / "mcpp.toml").write_text("[package]\n")
    watcher = request.param()
    assert watcher.watch(str(tmp_path))
    yield tmp_path, watcher
    watcher.close()


def test_nothing_changed(tree):
    root, w = tree
    assert not w.since(w.token()).everything and w.since(w.token()).files == set()


def test_a_rewrite_is_one_changed_file(tree):
    root, w = tree
    t = w.token()
    (root / "src/sub/b.cpp").write_text("int b2;\n")
    changes = w.since(t)
    assert not changes.everything and changes.files == {str(root / "src/sub/b.cpp")}


def test_a_rename_over_an_existing_file_is_a_rewrite(tree):
    """How many editors save: write a temporary file, rename it over the original."""
    root, w = tree
    t = w.token()
    (root / "src/a.cpp.new").write_text("int a2;\n")
    w.drain()  # the server reads events as they come: the temporary name is seen, then gone
    os.rename(root / "src/a.cpp.new", root / "src/a.cpp")
    changes = w.since(t)
    assert not changes.everything and str(root / "src/a.cpp") in changes.files


@pytest.mark.parametrize("change", ["create", "delete", "mkdir", "chmod", "rename"])
def test_a_change_of_shape_is_everything(tree, change):
    root, w = tree
    t = w.token()
    if change == "create":
        (root / "src/new.cpp").write_text("int n;\n")
    elif change == "delete":
        (root / "src/sub/b.cpp").unlink()
    elif change == "mkdir":
        (root / "src/more").mkdir()
    elif change == "chmod":
        os.chmod(root / "src/a.cpp", 0o000)
    else:
        os.rename(root / "src/a.cpp", root / "src/c.cpp")
    assert w.since(t).everything


def test_target_and_dot_directories_are_not_watched(tree):
    root, w = tree
    t = w.token()
    (root / "target/dev").mkdir(parents=True)
    (root / "target/dev/x.o").write_text("o")
    (root / "compile_commands.json").write_text("[]")
    (root / ".git").mkdir()
    (root / ".git/index").write_text("i")
    (root / "src/.a.cpp.swp").write_text("s")
    changes = w.since(t)
    assert not changes.everything and changes.files == set()


def test_a_new_directory_is_watched_from_then_on(tree):
    root, w = tree
    (root / "src/more").mkdir()
    w.drain()
    (root / "src/more/m.cpp").write_text("int m;\n")
    w.drain()
    t = w.token()
    (root / "src/more/m.cpp").write_text("int m2;\n")
    changes = w.since(t)
    assert not changes.everything and changes.files == {str(root / "src/more/m.cpp")}


@pytest.fixture
def inotify_tree(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src/a.cpp").write_text("int a;\n")
    w = Inotify()
    assert w.watch(str(tmp_path))
    yield tmp_path, w
    w.close()


def test_a_queue_overflow_is_everything_and_the_watch_recovers(inotify_tree):
    root, w = inotify_tree
    t = w.token()
    w._event(-1, IN_Q_OVERFLOW, "")  # what the kernel queues when events were lost
    assert w.since(t).everything
    t2 = w.token()  # every directory is listed again
    (root / "src/a.cpp.new").write_text("int a2;\n")
    os.rename(root / "src/a.cpp.new", root / "src/a.cpp")
    changes = w.since(t2)
    assert not changes.everything and changes.files >= {str(root / "src/a.cpp")}


def test_a_directory_over_the_listing_bound_is_everything(inotify_tree, monkeypatch):
    """The work of one answer is bounded: a directory too large to list again within it reads
    as "anything may have changed", which the build handles by planning (exact on its own)."""
    root, w = inotify_tree
    t = w.token()
    for i in range(50):
        (root / f"src/n{i}.txt").write_text("n")
    os.unlink(root / "src/n0.txt")
    monkeypatch.setattr(watcher, "RELIST_BUDGET", 10)
    w.token()
    assert w.since(t).everything


def test_many_events_in_one_directory_list_it_once(inotify_tree, monkeypatch):
    root, w = inotify_tree
    listed = []
    real = watcher._listing_digest
    monkeypatch.setattr(watcher, "_listing_digest", lambda *a: listed.append(a[0]) or real(*a))
    t = w.token()
    for i in range(500):
        (root / f"src/n{i}.txt").write_text("n")
        if i % 50 == 0:
            w.drain()  # the server reads events as they come
    assert w.since(t).everything
    assert listed == [str(root / "src")]


# Run without the two capabilities that read past file modes (as the server of a user who is not
# root runs; tests/e2e/test_hermetic_cache.py `unprivileged`): a directory of mode 000 then cannot
# be watched, as for any user.
_UNREADABLE_THEN_READABLE = """
import os, sys
from mcpp.engine.server.watcher import Inotify
root = sys.argv[1]
w = Inotify()
assert w.watch(root)
os.chmod(os.path.join(root, "src"), 0o755)  # readable again: watched from now on
w.drain()
t = w.token()
os.chmod(os.path.join(root, "src", "a.cpp"), 0)
print("everything" if w.since(t).everything else "nothing")
"""


def test_a_directory_unreadable_when_watched_is_watched_once_readable(tmp_path):
    """The server of a build that failed on an unreadable source directory watches it once it
    is readable again: a later change under it (here a file made unreadable) is not missed, and
    the next build does not take the plan the last one made."""
    from test_hermetic_cache import unprivileged

    (tmp_path / "src").mkdir()
    (tmp_path / "src/a.cpp").write_text("int a;\n")
    os.chmod(tmp_path / "src", 0)
    try:
        res = subprocess.run([*unprivileged(), sys.executable, "-c", _UNREADABLE_THEN_READABLE, str(tmp_path)],
                             capture_output=True, text=True, timeout=60)
    finally:
        os.chmod(tmp_path / "src", 0o755)
        os.chmod(tmp_path / "src/a.cpp", 0o644)
    assert res.returncode == 0 and res.stdout.strip() == "everything", res.stderr
