"""Timeouts, shutdown, Ctrl-C and stale directories: nothing an action starts outlives it."""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
import uuid

import pytest

from mcpp.sandbox import SandboxClosed, SandboxPool, reclaim_stale
from mcpp.sandbox.slot import SLOT_SUFFIX


def unique_sleep() -> str:
    """A `sleep` argument no other process has, to find the action's processes in /proc."""
    return f"30.{uuid.uuid4().int % 10**9:09d}"


def processes_with(arg: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{pid}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if arg.encode() in argv and state != b"Z":
            found.append(int(pid))
    return found


def wait_gone(arg: str, within: float = 3.0) -> list[int]:
    deadline = time.monotonic() + within
    while (left := processes_with(arg)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


def wait_running(pool: SandboxPool, arg: str, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not (pool.running and processes_with(arg)):
        assert time.monotonic() < deadline, "the action did not start"
        time.sleep(0.01)


@pytest.mark.parametrize("mode", ["bwrap", "dir", "off"])
def test_timeout_kills_the_whole_process_tree_fast(mode, make, mkspec, tmp_path, work_root):
    arg = unique_sleep()
    sb = make(mode)
    start = time.monotonic()
    r = sb.run(mkspec(["sh", "-c", f"sleep {arg} & sleep {arg}; echo never"], timeout=0.5, root=str(tmp_path)))
    assert r.timed_out
    assert r.exit_code != 0
    assert time.monotonic() - start < 20  # killed at its timeout, not waited for: the sleeps last 30 s
    assert wait_gone(arg) == []  # the background child died with the group
    # Nothing is left but the thread's reused slot (dir), without a file in it.
    left = os.listdir(os.path.join(work_root, "sandbox"))
    assert all(n.endswith(SLOT_SUFFIX) for n in left), left
    assert [f for n in left for _, _, fs in os.walk(os.path.join(work_root, "sandbox", n)) for f in fs] == []


@pytest.mark.parametrize("mode", ["dir", "off"])
def test_background_children_are_killed_when_the_action_exits(mode, make, mkspec, tmp_path):
    arg = unique_sleep()
    r = make(mode).run(mkspec(["sh", "-c", f"sleep {arg} >/dev/null 2>&1 & echo started"], root=str(tmp_path)))
    assert (r.exit_code, r.stdout) == (0, b"started\n")
    assert wait_gone(arg) == []


@pytest.mark.parametrize("mode", ["bwrap", "dir"])
def test_shutdown_kills_running_actions_and_removes_their_directories(mode, make, mkspec, work_root):
    arg = unique_sleep()
    sb = make(mode)
    errors = []

    def worker():
        try:
            sb.run(mkspec(["sh", "-c", f"sleep {arg}; sleep {arg}"]))
        except BaseException as e:  # noqa: BLE001 - recorded for the assertion
            errors.append(e)

    t = threading.Thread(target=worker)
    t.start()
    wait_running(sb.pool, arg)
    sb.shutdown()
    t.join(20)
    assert not t.is_alive()  # interrupted: the action sleeps 30 s
    assert len(errors) == 1 and isinstance(errors[0], SandboxClosed)
    assert wait_gone(arg) == []
    assert os.listdir(os.path.join(work_root, "sandbox")) == []
    with pytest.raises(SandboxClosed):
        sb.run(mkspec(["true"]))


def test_keyboard_interrupt_kills_the_action_and_cleans_up(make, mkspec, work_root):
    arg = unique_sleep()
    sb = make("dir")

    def interrupt():
        wait_running(sb.pool, arg)
        os.kill(os.getpid(), signal.SIGINT)

    # A suite started as a background job inherits SIGINT ignored: take the terminal's default.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        t = threading.Thread(target=interrupt)
        t.start()
        with pytest.raises(KeyboardInterrupt):
            sb.run(mkspec(["sleep", arg]))
        t.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert wait_gone(arg) == []
    assert os.listdir(os.path.join(work_root, "sandbox")) == []


def test_pool_as_context_manager_shuts_down_on_exit(work_root):
    with SandboxPool(work_root) as pool:
        d = pool.new_action_dir()
        assert os.path.isdir(d)
    assert not os.path.exists(d) and pool.closed


def test_reclaim_stale_removes_directories_of_dead_engines_only(work_root):
    base = os.path.join(work_root, "sandbox")
    dead = subprocess.Popen(["true"])
    dead.wait()
    live = subprocess.Popen(["sleep", "30"])
    try:
        def mk(name):
            os.makedirs(os.path.join(base, name, "obj"))
            with open(os.path.join(base, name, "obj", "a.o"), "w") as f:
                f.write("x")
            return os.path.join(base, name)

        of_dead = [mk(f"{dead.pid}-0"), mk(f"{dead.pid}-0.out")]
        of_live = mk(f"{live.pid}-3")
        reused = mk(f"{live.pid}-4")  # written an hour before its pid's process started
        os.utime(reused, (time.time() - 3600, time.time() - 3600))
        mine = mk(f"{os.getpid()}-999")
        other = mk("not-a-pid")

        removed = reclaim_stale(work_root)
        assert sorted(removed) == sorted(of_dead + [reused])
        for path in of_dead + [reused]:
            assert not os.path.exists(path)
        for path in (of_live, mine, other):
            assert os.path.isdir(path)
    finally:
        live.kill()
        live.wait()


def test_a_new_pool_reclaims_stale_directories(work_root):
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = os.path.join(work_root, "sandbox", f"{dead.pid}-7")
    os.makedirs(stale)
    SandboxPool(work_root).shutdown()
    assert not os.path.exists(stale)
