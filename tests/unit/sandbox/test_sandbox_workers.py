"""Workers (sandbox/worker.py, sandbox/slot.py): one namespace runs many actions,
and each action still sees only its own inputs, its own /tmp and no process of the one before."""
from __future__ import annotations

import os
import threading
import time

import pytest

from mcpp.sandbox import worker
from mcpp.sandbox.slot import SLOT_SUFFIX


@pytest.fixture
def bwrap_sb(make):
    sb = make("bwrap")  # skips where bwrap cannot run
    assert sb.use_workers, "the worker needs /usr/bin/python3, which Debian 12 has"
    return sb


def slots(work_root):
    base = os.path.join(work_root, "sandbox")
    return [n for n in os.listdir(base) if n.endswith(SLOT_SUFFIX)]


def test_consecutive_actions_share_a_worker_but_nothing_else(bwrap_sb, mkspec, tmp_path, work_root):
    a = tmp_path / "a.txt"
    a.write_text("a\n")
    first = bwrap_sb.run(mkspec(
        ["sh", "-c", "echo $$ > /tmp/pid; echo junk > deep/er/junk; echo x > /tmp/left; "
                     "mkdir /planted /etc/planted && touch /dev/shm/planted && echo planted; "
                     "(sleep 30 &) ; cat a.txt > out/a"],
        inputs={"a.txt": str(a), "deep/er/keep.txt": str(a)}, outputs=("out/a",)))
    assert first.exit_code == 0, first.stderr
    assert first.stdout == b"planted\n"
    [slot] = slots(work_root)

    b = tmp_path / "b.txt"
    b.write_text("b\n")
    second = bwrap_sb.run(mkspec(
        ["sh", "-c", "find . | sort; ls -A /tmp; ls -d /planted /etc/planted /dev/shm/planted 2>/dev/null; "
                     "ps -e -o comm= | grep -c sleep || true"],
        inputs={"b.txt": str(b)}, outputs=()))
    assert second.exit_code == 0, second.stderr
    assert slots(work_root) == [slot]  # the same worker ran both
    assert second.stdout.decode().splitlines() == [".", "./b.txt", "0"]  # no file, dir, /tmp entry or process


@pytest.mark.parametrize("mode", ["bwrap", "dir"])
def test_the_tree_is_what_a_fresh_directory_would_hold(mode, make, mkspec, tmp_path):
    sb = make(mode)
    f = tmp_path / "f"
    f.write_text("f\n")
    listing = "cd @@EXECROOT@@ && find . | sort"
    r1 = sb.run(mkspec(["sh", "-c", listing + "; echo junk > x/junk"], inputs={"x/y/z/f": str(f)},
                       outputs=("o/p/q",)))
    r2 = sb.run(mkspec(["sh", "-c", listing], inputs={"x/f": str(f)}, outputs=("o/r",), cwd="w/v"))
    assert r1.stdout.decode().split() == [".", "./o", "./o/p", "./x", "./x/y", "./x/y/z", "./x/y/z/f"]
    assert r2.stdout.decode().split() == [".", "./o", "./w", "./w/v", "./x", "./x/f"]


@pytest.mark.parametrize("mode", ["bwrap", "dir"])
def test_a_timeout_kills_every_process_of_the_action_and_the_worker_goes_on(mode, make, mkspec, tmp_path):
    mark = tmp_path / "mark"
    sb = make(mode)
    start = time.monotonic()
    # a daemonised grandchild (its own session) that would write after the timeout
    r = sb.run(mkspec(["sh", "-c", f"setsid sh -c 'sleep 1; echo late > {mark}' & sleep 30"], timeout=0.5))
    assert r.timed_out and time.monotonic() - start < 5
    r = sb.run(mkspec(["sh", "-c", "echo ok"]))
    assert (r.exit_code, r.stdout) == (0, b"ok\n")
    time.sleep(1.5)
    assert not mark.exists()


def test_each_thread_has_its_own_worker(bwrap_sb, mkspec, work_root):
    barrier = threading.Barrier(2)

    def one():
        barrier.wait()
        assert bwrap_sb.run(mkspec(["sh", "-c", "sleep 0.3"])).exit_code == 0

    threads = [threading.Thread(target=one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(slots(work_root)) == 2


def test_without_python_inside_actions_run_one_bwrap_each(bwrap_sb, mkspec, monkeypatch):
    monkeypatch.setattr(worker, "PYTHON", "/nonexistent/python3")
    r = bwrap_sb.run(mkspec(["sh", "-c", "echo fallback"]))
    assert (r.exit_code, r.stdout) == (0, b"fallback\n")
    assert bwrap_sb.use_workers is False


def test_a_program_that_cannot_start_is_reported_as_outside_a_worker(bwrap_sb, mkspec, work_root):
    r = bwrap_sb.run(mkspec(["/no/such/program"], label="//t:x"))
    assert r.exit_code == 127
    assert r.stderr == b"error: action //t:x could not start '/no/such/program': No such file or directory\n"
    assert len(slots(work_root)) == 1  # the worker answered and stays
