"""A build run in process leaves its plan to the server it starts (engine/server/bequest.py):
the server's first build plans no more, and whatever changed before the server watched is seen.

`mcpp run` builds in process when no server is up; its program waits for a file `go` (beside
the project: a file made in it would be a change of the tree's shape), and
the server is started only once the command ends: an edit made while it waits comes after the
build began and before any watcher, which is the walk's to find.
"""
from __future__ import annotations

import os
import subprocess
import time

import pytest

from e2e_support import write_tree
from mcpp.engine.server.bequest import since_ns

pytestmark = pytest.mark.one_mode  # sets the server mode per build itself

ON = {"MCPP_NO_SERVER": "0", "MCPP_SERVER_IDLE": "60", "MCPP_SERVER_START": "background",
      "MCPP_NO_FAST_PATH": "1"}

WAITER = {
    "mcpp.toml": '[package]\nname = "waiter"\nversion = "0.1.0"\n',
    "src/main.cpp": """
        #include <chrono>
        #include <cstdio>
        #include <fstream>
        #include <thread>
        int said();
        int main() {
            std::ofstream("../running").close();
            for (int i = 0; i < 1200 && !std::ifstream("../go"); ++i)
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
            std::printf("%d\\n", said());
        }
    """,
    "src/said.cpp": "int said() { return 1; }\n",
}


def _status(mcpp, root) -> dict:
    res = mcpp("server", "status", cwd=root, env=ON)
    assert res.code == 0, res.err
    return {} if res.out.startswith("no server") else dict(line.split(": ", 1) for line in res.out.splitlines())


def _run_in_process_then(mcpp, root, meanwhile) -> None:
    """`mcpp run` with no server up: `meanwhile()` while its program runs (the build done, the
    server not started), then the server it starts, listening."""
    env = {**os.environ, "MCPP_HOME": str(mcpp.home), **ON}
    env.pop("TERM", None)  # as `mcpp(...)` runs it: the same request
    run = subprocess.Popen([mcpp.exe, "run", "--message-format", "json"], cwd=root, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (root.parent / "running").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (root.parent / "running").exists()
        meanwhile()
    finally:
        (root.parent / "go").touch()
        out, err = run.communicate(timeout=120)
    assert run.returncode == 0, err
    deadline = time.monotonic() + 60
    while not _status(mcpp, root) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _status(mcpp, root)


def _a_second_after(root) -> None:
    """Wait until a build begun now counts every file under `root` as written before it: a later
    second, whose start less the clock's slack (`bequest.since_ns`) is after every stamp (a tree
    written in the last 10 ms of a second would otherwise count as changed during the build, and
    nothing would be bequeathed: this failed so under load)."""
    stamped = max(p.lstat().st_ctime_ns for p in root.rglob("*"))
    while since_ns(time.time_ns()) <= stamped:
        time.sleep(1.05 - time.time() % 1)


@pytest.fixture
def waiter(tmp_path, mcpp):
    root = write_tree(tmp_path / "w", WAITER)
    _a_second_after(root)  # written before the build: not a change made during it
    yield root, mcpp
    mcpp("server", "stop", cwd=root, env=ON)


def test_the_servers_first_build_takes_the_plan_of_the_build_that_started_it(waiter):
    root, mcpp = waiter
    _run_in_process_then(mcpp, root, lambda: None)
    status = _status(mcpp, root)
    assert (status["plans_bequeathed"], status["builds"]) == ("1", "0")
    (root / "src/said.cpp").write_text("int said() { return 2; }\n")
    res = mcpp("run", "--message-format", "json", cwd=root, env=ON)
    assert res.code == 0 and res.out.splitlines()[-1] == "2", res.err
    assert res.executed("compile") == ["compile waiter:src/said.cpp"]
    status = _status(mcpp, root)
    assert (status["plans_made"], status["plans_reused"], status["builds"]) == ("0", "1", "1")
    assert not list((mcpp.home / "server").glob("*.bequest"))  # taken, not left behind


def test_a_source_edited_before_the_server_watched_is_built_again(waiter):
    root, mcpp = waiter
    _run_in_process_then(mcpp, root, lambda: (root / "src/said.cpp").write_text("int said() { return 3; }\n"))
    assert _status(mcpp, root)["plans_bequeathed"] == "1"  # an edit of a file the plan read: kept
    res = mcpp("run", "--message-format", "json", cwd=root, env=ON)
    assert res.code == 0 and res.out.splitlines()[-1] == "3", res.err
    assert res.executed("compile") == ["compile waiter:src/said.cpp"]
    assert _status(mcpp, root)["plans_reused"] == "1"


def test_a_source_created_before_the_server_watched_is_planned_and_built(waiter):
    root, mcpp = waiter

    def add_a_unit() -> None:
        (root / "src/said.cpp").write_text("int more();\nint said() { return more(); }\n")
        (root / "src/more.cpp").write_text("int more() { return 4; }\n")

    _run_in_process_then(mcpp, root, add_a_unit)
    assert _status(mcpp, root)["plans_bequeathed"] == "0"  # a file no plan read: nothing kept
    res = mcpp("run", "--message-format", "json", cwd=root, env=ON)
    assert res.code == 0 and res.out.splitlines()[-1] == "4", res.err
    assert sorted(res.executed("compile")) == ["compile waiter:src/more.cpp", "compile waiter:src/said.cpp"]
    assert _status(mcpp, root)["plans_made"] == "1"


def test_a_build_traced_in_process_leaves_its_plan_to_the_next_untraced_one(tmp_path, mcpp):
    """`--trace`, `-q`, `--message-format` change only what a build prints: the same request."""
    root = write_tree(tmp_path / "w", {**WAITER, "src/main.cpp": "int said();\nint main() { return said() - 1; }\n"})
    _a_second_after(root)
    try:
        first = mcpp("-q", "build", "--trace", str(tmp_path / "trace.json"), cwd=root, env=ON)
        assert first.code == 0, first.err
        deadline = time.monotonic() + 60
        while not _status(mcpp, root) and time.monotonic() < deadline:
            time.sleep(0.1)
        (root / "src/said.cpp").write_text("int said() { return 2; }\n")
        res = mcpp("build", "--message-format", "json", cwd=root, env=ON)
        assert res.code == 0 and res.executed("compile") == ["compile waiter:src/said.cpp"], res.err
        status = _status(mcpp, root)
        assert (status["plans_bequeathed"], status["plans_made"], status["plans_reused"]) == ("1", "0", "1")
    finally:
        mcpp("server", "stop", cwd=root, env=ON)


def _server_processes(root) -> list[list[str]]:
    """The command lines of the mcpp servers serving `root` (client.py `SERVE`)."""
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = [a.decode() for a in f.read().split(b"\0") if a]
        except OSError:
            continue
        if any("entry import serve" in a for a in argv) and str(root) in argv:
            found.append(argv)
    return found


def test_the_bequest_is_written_and_the_server_started_after_the_command_has_exited(tmp_path, mcpp):
    """The in-process command's exit is its reply: what it leaves to the server (the plan
    pickled, the server's start) is done by a copy of its process that outlives it, which the
    server waits for before it takes the bequest in (engine/entry.py `_hand_on`)."""
    root = write_tree(tmp_path / "w", {**WAITER, "src/main.cpp": "int said();\nint main() { return said() - 1; }\n"})
    _a_second_after(root)
    env = {**os.environ, "MCPP_HOME": str(mcpp.home), **ON}
    env.pop("TERM", None)
    try:
        build = subprocess.Popen([mcpp.exe, "build", "--message-format", "json"], cwd=root, env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _out, err = build.communicate(timeout=120)  # its pipes end with it: the copy holds neither
        assert build.returncode == 0, err
        deadline = time.monotonic() + 60
        while not _status(mcpp, root) and time.monotonic() < deadline:
            time.sleep(0.1)
        status = _status(mcpp, root)
        assert status["plans_bequeathed"] == "1"
        servers = _server_processes(root)
        assert len(servers) == 1
        # `serve`'s last argument: the process that started it and whose end it awaited
        starter = int(servers[0][-1])
        assert starter != build.pid  # the native client execs the Python one: the command's pid
        assert _ended(starter)  # the copy ended once the server was started
    finally:
        mcpp("server", "stop", cwd=root, env=ON)


def _ended(pid: int) -> bool:
    """Whether process `pid` has exited (gone, or a zombie its new parent has not reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
