"""A signal to `mcpp run` reaches the program once and never runs anything a second time
(docs/server.md, "Signals"), with the server and without.

The program appends its pid to a file and sleeps: one line in the file after `mcpp` exits means
one run. `mcpp run` exits as the program did: 128 + the signal's number when the signal killed
it, the program's own code when it handled the signal and exited.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from e2e_support import SERVER_ON, Mcpp, mcpp_executable, started, write_tree

pytestmark = pytest.mark.one_mode  # each test runs both modes itself

MODES = {"in_process": {"MCPP_NO_SERVER": "1"}, "server": SERVER_ON}

SLEEPER = {
    "mcpp.toml": """
        [package]
        name = "sleeper"
        version = "0.1.0"
    """,
    # argv[1]: the file to append the pid to; argv[2] == "trap": exit 42 on SIGINT
    "src/main.cpp": """
        #include <csignal>
        #include <cstdio>
        #include <cstring>
        #include <unistd.h>
        static void on_int(int) { _exit(42); }
        int main(int argc, char** argv) {
            if (argc > 2 && std::strcmp(argv[2], "trap") == 0) std::signal(SIGINT, on_int);
            FILE* f = std::fopen(argv[1], "a");
            std::fprintf(f, "%d\\n", (int)getpid());
            std::fclose(f);
            for (int i = 0; i < 600; ++i) sleep(1);
            return 0;
        }
    """,
}


@pytest.fixture
def sleeper(tmp_path, mcpp):
    """(root, mcpp, pid file) of the program above, built; its servers are stopped afterwards."""
    root = write_tree(tmp_path / "sleeper", SLEEPER)
    assert mcpp("build", cwd=root, env=MODES["in_process"]).code == 0
    pids = tmp_path / "pids"
    yield root, mcpp, pids
    mcpp("server", "stop", cwd=root, env=SERVER_ON)
    for pid in (pids.read_text().split() if pids.exists() else []):  # whatever a failing test left
        _kill(int(pid))


def _start_run(mcpp: Mcpp, root, pids, mode: str, *program_args: str) -> subprocess.Popen:
    env = {**os.environ, "MCPP_HOME": str(mcpp.home), **MODES[mode]}
    env.pop("TERM", None)
    proc = subprocess.Popen(started([mcpp_executable(), "run", "--", str(pids), *program_args]), cwd=root,
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 120
    while not (pids.exists() and pids.read_text().endswith("\n")):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the program did not start: {proc.communicate()}")
        time.sleep(0.05)
    time.sleep(0.2)  # into its sleep (and its handler installed)
    return proc


def _one_run(pids) -> int:
    """The pid of the only run of the program; fails where it ran again."""
    time.sleep(0.5)  # a second run would have written by now
    runs = pids.read_text().split()
    assert len(runs) == 1, f"the program ran {len(runs)} times"
    return int(runs[0])


def _gone(pid: int, seconds: float = 10) -> bool:
    from mcpp.engine.server.registry import alive, wait_gone

    return not wait_gone([pid], seconds) and not alive(pid)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM])
def test_a_hang_up_or_terminate_runs_the_program_once_and_exits_with_the_signals_code(sleeper, mode, signum):
    root, mcpp, pids = sleeper
    proc = _start_run(mcpp, root, pids, mode)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    program = _one_run(pids)
    assert proc.returncode == 128 + signum, (proc.returncode, err)
    assert "building in process" not in err and "warning" not in err, err
    assert _gone(program), "the program outlived the signal sent to `mcpp run`"


@pytest.mark.parametrize("mode", MODES)
def test_a_program_that_handles_ctrl_c_gives_mcpp_run_its_own_exit_code(sleeper, mode):
    root, mcpp, pids = sleeper
    proc = _start_run(mcpp, root, pids, mode, "trap")
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    _one_run(pids)
    assert proc.returncode == 42, (proc.returncode, err)
    assert "didn't exit successfully" not in err and "interrupted" not in err, err


@pytest.mark.parametrize("mode", MODES)
def test_ctrl_c_that_kills_the_program_exits_130_without_calling_it_a_crash(sleeper, mode):
    root, mcpp, pids = sleeper
    proc = _start_run(mcpp, root, pids, mode)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    program = _one_run(pids)
    assert proc.returncode == 130, (proc.returncode, err)
    assert "didn't exit successfully" not in err, err
    assert _gone(program)


def test_a_server_killed_while_its_program_runs_is_not_run_again_in_process(sleeper):
    """The request was the server's: the client says the server stopped and exits, never
    running the command a second time."""
    root, mcpp, pids = sleeper
    proc = _start_run(mcpp, root, pids, "server")
    server = int(dict(line.split(": ", 1) for line in
                      mcpp("server", "status", cwd=root, env=SERVER_ON).out.splitlines())["pid"])
    os.kill(server, signal.SIGKILL)
    _out, err = proc.communicate(timeout=60)
    program = _one_run(pids)
    assert proc.returncode == 1, (proc.returncode, err)
    assert "building in process" not in err, err
    assert "error: the mcpp server stopped before the command finished" in err
    assert "it was not run again" in err
    assert _gone(program), "the program outlived its server's build process"  # told by PR_SET_PDEATHSIG


ENDLESS_PROGRAM = {  # a build that runs until it is stopped: its build program never ends
    "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
    "src/main.cpp": "int main() { return 0; }\n",
    "build.star": "def spin():\n    for i in range(2147483647):\n        for j in range(2147483647):\n            pass\nspin()\n",
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM])
def test_a_hang_up_or_terminate_during_a_build_cancels_it_as_ctrl_c_does(tmp_path, mcpp, mode, signum):
    root = write_tree(tmp_path / "endless", ENDLESS_PROGRAM)
    env = {**os.environ, "MCPP_HOME": str(mcpp.home), **MODES[mode]}
    env.pop("TERM", None)
    proc = subprocess.Popen(started([mcpp_executable(), "build"]), cwd=root, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(3)  # into the build program
        proc.send_signal(signum)
        _out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
        mcpp("server", "stop", cwd=root, env=SERVER_ON)
    assert proc.returncode == 128 + signum, (proc.returncode, err)
    assert "error: interrupted" in err and "Traceback" not in err and "building in process" not in err, err
