"""Workers (sandbox/worker.py, sandbox/slot.py): one namespace runs many actions,
and each action still sees only its own inputs, its own /tmp and no process of the one before."""
from __future__ import annotations

import os
import select
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
def test_clearing_a_slot_removes_what_an_action_left_and_follows_no_symlink(mode, make, mkspec, tmp_path):
    """The slot is cleared on the host, where a symlink the action left resolves: clearing must
    unlink the link, never descend through it into the directory it names."""
    sb = make(mode)
    victim = tmp_path / "victim"
    (victim / "sub").mkdir(parents=True)
    (victim / "sub" / "precious").write_text("keep\n")
    f = tmp_path / "f"
    f.write_text("f\n")
    r1 = sb.run(mkspec(["sh", "-c", f"cd @@EXECROOT@@ && ln -s {victim} o/to-host && ln -s {victim}/sub/precious "
                                    "o/file-link && mkdir -p o/n/e/s/t && echo junk > o/n/e/s/t/junk"],
                       inputs={"x/f": str(f)}, outputs=("o/out",)))
    assert r1.exit_code == 0, r1.stderr
    r2 = sb.run(mkspec(["sh", "-c", "cd @@EXECROOT@@ && find . | sort"], inputs={"y": str(f)}, outputs=()))
    assert r2.stdout.decode().split() == [".", "./y"]
    assert (victim / "sub" / "precious").read_text() == "keep\n"


def test_a_cleared_slot_lists_only_what_the_action_could_write(bwrap_sb, mkspec, tmp_path, work_root, monkeypatch):
    """Directories that held only inputs were read-only for the action: the next action's
    clear unlinks the inputs there by name and does not list them (five system calls each);
    every directory the action could write in is still listed and emptied."""
    from mcpp.sandbox import slot as slot_module

    listed: list[str] = []
    real_scandir = os.scandir

    def scandir(path):
        listed.append(str(path))
        return real_scandir(path)

    monkeypatch.setattr(slot_module.os, "scandir", scandir)
    f = tmp_path / "f"
    f.write_text("f\n")
    r1 = bwrap_sb.run(mkspec(
        ["sh", "-c", "cd @@EXECROOT@@ && (echo no > src/lib/planted) 2>/dev/null; echo $? > o/code; "
                     "echo junk > o/junk; mkdir -p w/x && echo junk > w/x/junk; cat src/lib/a.c > o/out"],
        inputs={"src/lib/a.c": str(f), "include/b/h.h": str(f)}, outputs=("o/out",)))
    assert r1.exit_code == 0, r1.stderr
    [name] = slots(work_root)
    root = os.path.join(work_root, "sandbox", name)
    assert open(os.path.join(root, "o", "code")).read().strip() != "0"  # src/lib was read-only for it
    r2 = bwrap_sb.run(mkspec(["sh", "-c", "cd @@EXECROOT@@ && find . | sort"], inputs={"y": str(f)}, outputs=()))
    assert r2.stdout.decode().split() == [".", "./y"]
    seen = {os.path.relpath(p, root) for p in listed if p.startswith(root)}
    assert {".", "o", "w", "w/x"} <= seen  # where it could write: listed
    assert not seen & {"src", "src/lib", "include", "include/b"}  # read-only for it: not listed


@pytest.mark.parametrize("mode", ["bwrap", "dir"])
def test_a_timeout_kills_every_process_of_the_action_and_the_worker_goes_on(mode, make, mkspec, tmp_path):
    mark = tmp_path / "mark"
    sb = make(mode)
    start = time.monotonic()
    # a daemonised grandchild (its own session) that would write after the timeout
    r = sb.run(mkspec(["sh", "-c", f"setsid sh -c 'sleep 1; echo late > {mark}' & sleep 30"], timeout=0.5))
    assert r.timed_out and time.monotonic() - start < 20  # killed at its timeout, not after the 30 s sleep
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


def _files(path):
    return sorted(os.path.relpath(os.path.join(d, f), path) for d, _, fs in os.walk(path) for f in fs)


def test_an_actions_files_go_when_the_next_action_is_prepared_or_the_sandbox_shuts_down(
        bwrap_sb, mkspec, tmp_path, work_root):
    a = tmp_path / "a.txt"
    a.write_text("a\n")
    first = bwrap_sb.run(mkspec(["sh", "-c", "echo junk > junk; cat a.txt > out"], inputs={"a.txt": str(a)},
                                outputs=("out",)))
    assert first.exit_code == 0, first.stderr
    [slot] = slots(work_root)
    # Nobody waits for the unlinks after an action: its input and its undeclared file are still there...
    assert _files(os.path.join(work_root, "sandbox", slot)) == ["a.txt", "junk"]
    assert os.stat(a).st_nlink == 2  # the staged hard link
    # ...and gone before the next action sees the directory.
    second = bwrap_sb.run(mkspec(["sh", "-c", "find . | sort"]))
    assert second.stdout.decode().split() == ["."]
    assert os.stat(a).st_nlink == 1
    bwrap_sb.shutdown()
    assert slots(work_root) == []


def test_a_worker_started_ahead_answers_and_serves_the_actions_of_every_thread(bwrap_sb, mkspec, work_root,
                                                                              one_thread_after_another):
    started = threading.Event()
    done = threading.Event()
    proven = []

    def keeper():  # a worker dies with the thread that started it: this one lives through the test
        proven.append(bwrap_sb.take_ahead(bwrap_sb.start_ahead()))
        started.set()
        done.wait()

    t = threading.Thread(target=keeper)
    t.start()
    try:
        started.wait()
        assert proven == [True]
        ahead = slots(work_root)
        assert len(ahead) == 1
        results = []

        one_thread_after_another(lambda: results.append(bwrap_sb.run(mkspec(["sh", "-c", "echo $$"]))))
        assert [r.exit_code for r in results] == [0, 0]
        assert slots(work_root) == ahead  # both ran in the worker started ahead; none was started late
    finally:
        done.set()
        t.join()


def test_a_worker_whose_thread_ended_is_replaced(bwrap_sb, mkspec, work_root):
    t = threading.Thread(target=lambda: bwrap_sb.take_ahead(bwrap_sb.start_ahead()))
    t.start()
    t.join()  # bwrap's --die-with-parent ends the worker with this thread
    [first] = slots(work_root)
    deadline = time.monotonic() + 5
    while bwrap_sb._idle[0].alive and time.monotonic() < deadline:
        time.sleep(0.01)
    r = bwrap_sb.run(mkspec(["sh", "-c", "echo ok"]))
    assert (r.exit_code, r.stdout) == (0, b"ok\n")
    assert first not in slots(work_root)  # the dead one's slot went with it


@pytest.mark.parametrize("mode", ["bwrap", "dir"])
def test_an_action_in_a_worker_starts_as_from_a_shell(mode, make, mkspec, tmp_path):
    """The executor starts actions with posix_spawn: SIGPIPE is back to its default (Python
    ignores it, and an exec would keep it ignored), stdin is /dev/null, and no descriptor of
    the executor's reaches the action."""
    sb = make(mode)
    r = sb.run(mkspec(["sh", "-c", "yes | head -n1; read x || echo no-input; ls /proc/self/fd | sort -n | tr '\\n' ' '"]))
    assert r.exit_code == 0, r.stderr
    assert r.stderr == b""  # `yes` died of SIGPIPE quietly, not "Broken pipe" on an ignored signal
    lines = r.stdout.decode().splitlines()
    assert lines[:2] == ["y", "no-input"]
    assert lines[2].split() == ["0", "1", "2", "3"]  # 3: the directory `ls` opened


@pytest.mark.parametrize("mode", ["bwrap", "dir"])
def test_a_program_is_found_on_the_actions_path_not_the_executors(mode, make, mkspec, tmp_path):
    tool = tmp_path / "hello-tool"
    tool.write_text("#!/bin/sh\necho from-bin\n")
    tool.chmod(0o755)
    sb = make(mode)
    env = {"PATH": "@@EXECROOT@@/bin:/usr/bin:/bin"}
    r = sb.run(mkspec(["hello-tool"], env=env, inputs={"bin/hello-tool": str(tool)}))
    assert (r.exit_code, r.stdout) == (0, b"from-bin\n"), r.stderr
    missing = sb.run(mkspec(["hello-tool"], env={"PATH": "/usr/bin:/bin"}, inputs={"bin/hello-tool": str(tool)}))
    assert missing.exit_code == 127 and b"hello-tool" in missing.stderr


@pytest.mark.parametrize("mode", ["bwrap", "dir"])
def test_a_relative_path_entry_is_taken_from_the_actions_working_directory(mode, make, mkspec, tmp_path):
    tool = tmp_path / "local-tool"
    tool.write_text("#!/bin/sh\necho from-cwd\n")
    tool.chmod(0o755)
    broken = tmp_path / "broken-tool"
    broken.write_text("#!/nonexistent/interpreter\n")
    broken.chmod(0o755)
    sb = make(mode)
    r = sb.run(mkspec(["local-tool"], env={"PATH": ".:/usr/bin:/bin"}, inputs={"local-tool": str(tool)}))
    assert (r.exit_code, r.stdout) == (0, b"from-cwd\n"), r.stderr
    # as execvp: a candidate that cannot be run does not end the search
    r = sb.run(mkspec(["local-tool"], env={"PATH": "@@EXECROOT@@/a:@@EXECROOT@@/b"},
                      inputs={"a/local-tool": str(broken), "b/local-tool": str(tool)}))
    assert (r.exit_code, r.stdout) == (0, b"from-cwd\n"), r.stderr


def _idle_worker_after(sb, mkspec, argv):
    """Run `argv` in a new worker of `sb` (whatever is idle is set aside first); return that worker."""
    aside, sb._idle[:] = list(sb._idle), []
    r = sb.run(mkspec(argv, inputs={}, outputs=()))
    assert r.exit_code == 0, r.stderr
    [w] = sb._idle
    sb._idle[:] = aside + [w]
    return w


def test_a_worker_answers_before_it_tidies_up_and_says_when_it_is_clean(bwrap_sb, mkspec):
    """The answer comes as soon as the action's last process is gone; the unmounts and the
    emptying of /tmp follow (an unmount may wait milliseconds for an RCU grace period), then a
    `clean` line, which the engine reads before it prepares the slot again."""
    w = _idle_worker_after(bwrap_sb, mkspec, ["sh", "-c", "cd /tmp && seq 1 4000 | xargs touch"])
    assert w.cleaning  # the answer came before the worker's own clean line was read
    assert w.await_clean(30) and not w.cleaning
    r = bwrap_sb.run(mkspec(["sh", "-c", "ls -A /tmp | wc -l"], inputs={}, outputs=()))
    assert r.stdout == b"0\n"  # the next action sees an empty /tmp


def test_an_idle_worker_that_is_clean_is_taken_before_one_still_tidying_up(bwrap_sb, mkspec):
    slow = _idle_worker_after(bwrap_sb, mkspec, ["sh", "-c", "cd /tmp && seq 1 20000 | xargs touch"])
    quick = _idle_worker_after(bwrap_sb, mkspec, ["true"])
    assert quick.await_clean(30)
    bwrap_sb._idle[:] = [slow, quick]  # the slow one has been idle longer
    assert slow.cleaning, "20,000 files in /tmp should take the worker a while to remove"
    taken = bwrap_sb._worker_for(mkspec(["true"], inputs={}, outputs=()))
    assert taken is quick
    bwrap_sb._give_back(taken)


def test_a_worker_that_dies_while_tidying_up_is_replaced(bwrap_sb, mkspec, tmp_path):
    w = _idle_worker_after(bwrap_sb, mkspec, ["sh", "-c", "cd /tmp && seq 1 20000 | xargs touch"])
    os.killpg(w.proc.pid, 9)
    w.proc.wait()
    f = tmp_path / "f"
    f.write_text("f\n")
    r = bwrap_sb.run(mkspec(["sh", "-c", "cat f > o"], inputs={"f": str(f)}, outputs=("o",)))
    assert r.exit_code == 0, r.stderr
    assert w not in bwrap_sb._idle and not w.alive


def test_a_worker_that_died_while_idle_is_retired_not_read_again(bwrap_sb, mkspec):
    """A worker can end while idle (--die-with-parent: the thread that started it exited, as a
    head start's does; or it was killed). The look that finds it gone retires it, whichever
    worker that look takes: a later look does not read the closed worker again (it raised an
    internal error: 'a closed worker is never read')."""
    dead = _idle_worker_after(bwrap_sb, mkspec, ["sh", "-c", "cd /tmp && seq 1 20000 | xargs touch"])
    live = _idle_worker_after(bwrap_sb, mkspec, ["true"])
    assert live.await_clean(30)
    assert dead.cleaning, "20,000 files in /tmp should take the worker a while to remove"
    os.killpg(dead.proc.pid, 9)
    dead.proc.wait()
    # its executor, in a session of its own, ends with bwrap (--die-with-parent) a moment later
    assert select.select([dead._replies], [], [], 10)[0]
    bwrap_sb._idle[:] = [dead, live]
    for _ in range(2):
        taken = bwrap_sb._worker_for(mkspec(["true"], inputs={}, outputs=()))
        assert taken is live
        bwrap_sb._give_back(taken)
    assert dead not in bwrap_sb._idle


def processes_naming(path: str) -> list[bytes]:
    """The command lines of running processes that name `path` (a zombie's reads as empty)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if path.encode() in cmdline:
            found.append(cmdline[:200])
    return found


def test_closing_a_worker_returns_only_when_no_process_of_its_namespace_runs(bwrap_sb, work_root):
    """bwrap's child (the namespace's first process) is in a session of its own, so killing
    bwrap's group does not reach it: --die-with-parent ends it a moment after bwrap. `close`
    waits for that too (bwrap says its pid on --info-fd), so a build that closes its workers
    leaves none of their processes behind, not even for that moment (a first build that fails
    early: tests/e2e/test_cold_start.py)."""
    base = os.path.join(work_root, "sandbox")
    for _ in range(20):  # the moment is short: without the wait, some of 20 closes show it
        w = bwrap_sb.start_ahead()
        assert w is not None and w.pong(10.0)
        assert processes_naming(w.slot.path), "bwrap and its child name the slot they bind"
        w.close()
        assert processes_naming(base) == []
        bwrap_sb._retire(w)


def test_a_shut_down_sandbox_leaves_no_process_of_its_idle_workers(make, work_root):
    """The shutdown kills every worker's group at once, which does not reach the namespace's
    first process; it then closes the idle workers, which waits for that process too, so a
    build that ends (or a first build that fails before it takes the worker begun for it) leaves
    none behind, not even for a moment."""
    base = os.path.join(work_root, "sandbox")
    for _ in range(20):  # the moment is short: without the wait, some of 20 shutdowns show it
        sb = make("bwrap")
        assert sb.take_ahead(sb.start_ahead())  # idle, answering, as a warm-up leaves it
        assert processes_naming(base)
        sb.shutdown()
        assert processes_naming(base) == []
