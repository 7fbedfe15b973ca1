"""The spare build child (engine/server/spare.py): forked while the server is idle, it serves the
next build request with the memory the server has then, and its sandbox's worker already up."""
from __future__ import annotations

import os
import signal
import time

import pytest

from e2e_support import SERVER_ON, alive, write_tree

pytestmark = pytest.mark.one_mode  # sets the server mode per build itself: the server-on run leaves it out

# The program says which process ran it: `mcpp run`'s build process is its parent.
PARENT = {
    "mcpp.toml": """
        [package]
        name = "parent"
        version = "0.1.0"
    """,
    "src/main.cpp": """
        #include <cstdio>
        #include <unistd.h>
        #include "word.hpp"
        int main() { std::printf("%s %d\\n", WORD, (int)getppid()); }
    """,
    "src/word.hpp": '#pragma once\n#define WORD "one"\n',
}


def _status(mcpp, root) -> dict:
    res = mcpp("server", "status", cwd=root, env=SERVER_ON)
    assert res.code == 0, res.err
    return dict(line.split(": ", 1) for line in res.out.splitlines() if ": " in line)


def _run(mcpp, root, timeout: float = 300) -> tuple[str, int]:
    res = mcpp("-q", "run", cwd=root, env={**SERVER_ON, "MCPP_NO_FAST_PATH": "1"}, timeout=timeout)
    assert res.code == 0, res.err
    word, parent = res.out.split()
    return word, int(parent)


def _reaped(pid: int, what: str) -> None:
    """Wait until `pid` is gone from /proc: the server saw its death and reaped it (a killed
    process's leader reads as a zombie while its other threads still exit)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}"):
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{pid}"), what


def _sandbox_dirs(home) -> list[str]:
    """The per-process directories under the home's sandbox (slots, action directories)."""
    base = home / "sandbox"
    return sorted(p.name for p in base.glob("*-*")) if base.is_dir() else []


@pytest.fixture
def project(tmp_path, mcpp):
    root = write_tree(tmp_path / "parent", PARENT)
    yield root
    mcpp("server", "stop", cwd=root, env=SERVER_ON)


def test_the_next_build_runs_in_the_spare_forked_while_idle_and_sees_what_changed(project, mcpp):
    assert _run(mcpp, project)[0] == "one"
    spare = int(_status(mcpp, project)["spare_pid"])
    assert spare and alive(spare)
    (project / "src/word.hpp").write_text('#pragma once\n#define WORD "two"\n')  # seen by the server's watcher
    word, parent = _run(mcpp, project)
    assert (word, parent) == ("two", spare)  # built and run by that spare, with the edit
    status = _status(mcpp, project)
    assert status["builds_from_spare"] == "1"
    # ... and the server keeps a new one for the next request, forked after that build
    assert int(status["spare_pid"]) not in (0, spare)
    (project / "src/word.hpp").write_text('#pragma once\n#define WORD "three"\n')
    assert _run(mcpp, project) == ("three", int(status["spare_pid"]))


def test_a_spare_that_died_is_replaced_and_the_request_is_forked_for(project, mcpp):
    assert _run(mcpp, project)[0] == "one"
    spare = int(_status(mcpp, project)["spare_pid"])
    os.kill(spare, signal.SIGKILL)
    # Until the server has reaped it (it saw the death): this test asks that a dead spare is
    # replaced; a request handed to one still dying is the next test's (it is forked for).
    _reaped(spare, "the server did not reap its killed spare")
    (project / "src/word.hpp").write_text('#pragma once\n#define WORD "two"\n')
    word, parent = _run(mcpp, project)
    assert word == "two" and parent != spare
    status = _status(mcpp, project)
    assert int(status["builds"]) >= 2 and int(status["spare_pid"]) not in (0, spare)


def test_a_spare_that_cannot_take_the_request_is_killed_and_the_request_forked_for(project, mcpp):
    """A spare that does not say it holds the request (stopped here; killed or out of memory in
    the moment it gets it, elsewhere) does not lose it: after `HAND_S` the server kills it and
    forks a build child for the request (engine/server/spare.py: `TAKEN`)."""
    assert _run(mcpp, project)[0] == "one"
    spare = int(_status(mcpp, project)["spare_pid"])
    os.kill(spare, signal.SIGSTOP)
    try:
        (project / "src/word.hpp").write_text('#pragma once\n#define WORD "two"\n')
        word, parent = _run(mcpp, project, timeout=60)
        assert word == "two" and parent != spare
        _reaped(spare, "the silent spare was not killed and reaped")
    finally:
        if os.path.exists(f"/proc/{spare}"):
            os.kill(spare, signal.SIGKILL)


def test_stopping_the_server_ends_its_spare_and_removes_the_spares_sandbox(project, mcpp):
    _run(mcpp, project)
    (project / "src/word.hpp").write_text('#pragma once\n#define WORD "two"\n')
    _run(mcpp, project)  # a build that succeeded in a sandbox: the spare begins that sandbox
    status = _status(mcpp, project)
    spare = int(status["spare_pid"])
    # the spare's sandbox: one it began, or the one the server began ahead and it took over
    # (engine/server/sandbox_ahead.py), named by the process that made it
    makers = (f"{spare}-", f"{status['pid']}-")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not any(name.startswith(makers) for name in _sandbox_dirs(mcpp.home)):
        time.sleep(0.05)
    assert any(name.startswith(makers) for name in _sandbox_dirs(mcpp.home)), _sandbox_dirs(mcpp.home)
    assert mcpp("server", "stop", cwd=project, env=SERVER_ON).code == 0
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (alive(spare) or _sandbox_dirs(mcpp.home)):
        time.sleep(0.05)
    assert not alive(spare)
    assert _sandbox_dirs(mcpp.home) == []


def _kib(path: str, field: str) -> int:
    with open(path) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field} in {path}")


@pytest.mark.skipif(tuple(int(x) for x in os.uname().release.split(".")[:2] if x.isdigit()) < (5, 14),
                    reason="madvise(MADV_POPULATE_WRITE) came with Linux 5.14: an older kernel's spare takes "
                           "its faults during the build")
def test_a_spare_copies_the_servers_memory_while_it_waits(project, mcpp):
    """engine/server/own_pages.py: the next build then reads the server's plan and state without a
    copy-on-write fault per page (bench/RESULTS.md: half a no-op's time in the child)."""
    _run(mcpp, project)
    status = _status(mcpp, project)
    spare = int(status["spare_pid"])
    server_anon = _kib(f"/proc/{status['pid']}/status", "RssAnon")
    deadline = time.monotonic() + 60  # it copies only while a core is idle (SCHED_IDLE)
    own = 0
    while time.monotonic() < deadline:
        own = _kib(f"/proc/{spare}/smaps_rollup", "Private_Dirty")  # pages copied into the spare
        if own >= server_anon // 2:
            break
        time.sleep(0.05)
    assert own >= server_anon // 2, (own, server_anon)
