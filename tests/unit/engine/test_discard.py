"""engine/exec/discard.py: a stale output is moved aside at once and deleted by a thread."""
from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from mcpp.cas.action import Action
from mcpp.engine.exec.action_runner import prepare_outputs
from mcpp.engine.exec import discard as discard_module
from mcpp.engine.exec.discard import Discard


def test_a_stale_output_is_moved_aside_then_deleted_after_the_action(tmp_path, monkeypatch):
    out = tmp_path / "bin" / "app"
    out.parent.mkdir()
    out.write_bytes(b"old" * 100_000)
    inode = out.stat().st_ino
    go = threading.Event()
    real = discard_module.delete
    monkeypatch.setattr(discard_module, "delete", lambda path: (go.wait(10), real(path)))
    discard = Discard(str(tmp_path / ".mcpp" / "discarded"))
    prepare_outputs(str(tmp_path), Action(id="link app", argv=("ld",), outputs=("bin/app",)), discard)
    assert not out.exists()
    # the action waited for a rename: the file is whole in the discard directory, named by this pid
    moved = list((tmp_path / ".mcpp" / "discarded").iterdir())
    assert [(p.name, p.stat().st_ino) for p in moved] == [(f"{os.getpid()}-0", inode)]
    go.set()
    discard.close()
    assert list((tmp_path / ".mcpp" / "discarded").iterdir()) == []


def test_nothing_there_is_no_error_and_starts_no_thread(tmp_path):
    discard = Discard(str(tmp_path / "discarded"))
    assert discard.take(str(tmp_path / "absent")) is False
    assert not discard._thread.running
    discard.close()


def test_a_directory_where_the_file_is_declared_is_removed(tmp_path):
    (tmp_path / "out" / "x").mkdir(parents=True)
    (tmp_path / "out" / "x" / "f").write_text("f")
    discard = Discard(str(tmp_path / "discarded"))
    assert discard.take(str(tmp_path / "out" / "x")) is True
    discard.close()
    assert not (tmp_path / "out" / "x").exists() and list((tmp_path / "discarded").iterdir()) == []


def test_another_filesystem_is_deleted_in_place(tmp_path):
    shm = "/dev/shm"
    if not os.path.isdir(shm) or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second filesystem (/dev/shm) to rename across")
    elsewhere = os.path.join(shm, f"mcpp-discard-test-{os.getpid()}")
    with open(elsewhere, "w") as f:
        f.write("x")
    try:
        discard = Discard(str(tmp_path / "discarded"))
        assert discard.take(elsewhere) is True  # EXDEV: deleted where it is
        assert not os.path.exists(elsewhere)
        assert not discard._thread.running
    finally:
        if os.path.exists(elsewhere):
            os.unlink(elsewhere)


def test_what_a_killed_build_left_is_swept_and_a_live_builds_is_kept(tmp_path):
    directory = tmp_path / "discarded"
    directory.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    left = directory / f"{dead.stdout.strip()}-0"
    left.write_text("left by a build that was killed")
    live = directory / f"{os.getppid()}-3"  # a process that runs: a concurrent build's, in flight
    live.write_text("moved by a build still running")
    (tmp_path / "stale").write_text("old")
    discard = Discard(str(directory))
    discard.take(str(tmp_path / "stale"))
    discard.close()
    assert sorted(p.name for p in directory.iterdir()) == [live.name]


def test_a_stale_output_that_is_a_symlink_or_holds_one_deletes_the_link_not_its_target(tmp_path):
    """An action may leave an output that is a link out of target/, or a directory holding one:
    moving and deleting it removes the links and never what they point at."""
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "file").write_text("keep")
    (outside / "dir" / "inner").write_text("keep too")
    out = tmp_path / "root" / "out"
    out.mkdir(parents=True)
    (out / "app").symlink_to(outside / "file")
    (out / "tree").mkdir()
    (out / "tree" / "escape").symlink_to(outside / "dir")
    discard = Discard(str(tmp_path / "root" / "discarded"))
    prepare_outputs(str(tmp_path / "root"), Action(id="gen", argv=("gen",), outputs=("out/app", "out/tree")), discard)
    discard.close()
    assert list((tmp_path / "root" / "discarded").iterdir()) == []
    assert not os.path.lexists(out / "app") and not os.path.lexists(out / "tree")
    assert (outside / "file").read_text() == "keep" and (outside / "dir" / "inner").read_text() == "keep too"
    (out / "app").symlink_to(outside / "file")  # and without a discard directory: deleted in place
    prepare_outputs(str(tmp_path / "root"), Action(id="gen", argv=("gen",), outputs=("out/app",)))
    assert not os.path.lexists(out / "app") and (outside / "file").read_text() == "keep"
