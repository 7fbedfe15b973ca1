"""A first build's start (issue 38, "a cold start near zero"): the trace says how long after the
command its first compile began; with no server up, the build runs in process while the
workspace's server starts for the next one; and a toolchain is asked who it is once per content,
so a fresh clone or a CI job with the home restored asks no compiler anything before compiling."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

from e2e_support import write_tree

PROJECT = {
    "mcpp.toml": """
        [package]
        name = "hello"
        version = "0.1.0"
    """,
    "src/main.cpp": '#include "util.hpp"\nint main() { return util(); }\n',
    "src/util.hpp": "int util();\n",
    "src/util.cpp": '#include "util.hpp"\nint util() { return 0; }\n',
}

# A compiler that logs each question about itself (a probe: `-dumpversion`, `-print-search-dirs`,
# ...) and otherwise is the system's gcc, compiles and links included.
WRAPPER = """#!/bin/sh
case "$1" in -dump*|-print-*) echo "$0 $1" >> "{log}" ;; esac
exec /usr/bin/{driver} "$@"
"""


def test_the_trace_starts_at_the_command_and_its_first_compile_follows(tmp_path, mcpp):
    root = write_tree(tmp_path / "p", PROJECT)
    began = time.monotonic()
    res = mcpp("build", "--trace", "trace.json", cwd=root)
    took_us = (time.monotonic() - began) * 1e6
    assert res.code == 0, res.err
    events = json.loads((root / "trace.json").read_text())["traceEvents"]
    marks = {e["name"]: e["ts"] for e in events if e["ph"] == "i"}
    compiles = sorted(e["ts"] for e in events if e["ph"] == "X" and e["cat"] == "compile")
    assert len(compiles) == 2
    # The command's start is the trace's 0; the build, its actions and the first compile follow,
    # all within the time the test saw the command take (the start is the client's, not a server's).
    assert marks["command-start"] == 0 < marks["build-start"] <= marks["actions-start"] <= compiles[0] < took_us
    # and the steps after the actions (the link's end first), in order, before the command ended
    # (the trace's 0, the process's start, is counted in whole clock ticks: up to 10 ms early)
    (link,) = [e for e in events if e["ph"] == "X" and e["cat"] == "link"]
    assert link["ts"] + link["dur"] <= marks["actions-end"] <= marks["records-saved"] <= marks["outputs-stored"] \
        <= marks["build-end"] < took_us + 10_000
    # each action a lane ran says how long after its start its process began (its inputs staged);
    # the first compile was begun ahead, before the schedule (engine/exec/head_start.py)
    ran = {e["name"]: e for e in events if e["ph"] == "X"}
    for name in ("compile hello:src/util.cpp", "link hello:hello"):
        assert 0 <= ran[name]["args"]["staged_ms"] * 1000 <= ran[name]["dur"], ran


def _trace(root) -> tuple[dict[str, float], dict[str, float]]:
    """The trace's instant events and each compile's start, by name, in microseconds."""
    events = json.loads((root / "trace.json").read_text())["traceEvents"]
    return ({e["name"]: e["ts"] for e in events if e["ph"] == "i"},
            {e["name"]: e["ts"] for e in events if e["ph"] == "X" and e["cat"] == "compile"})


def test_a_first_build_starts_its_first_compile_before_the_rest_is_planned(tmp_path, mcpp):
    """engine/exec/head_start.py: the first unit planned (`main.cpp`) compiles while the others
    are planned; the schedule then takes that run as the action's, which is stored and keyed as
    any: the next build with the home kept restores it."""
    root = write_tree(tmp_path / "p", PROJECT)
    res = mcpp("build", "--trace", "trace.json", "--message-format", "json", cwd=root)
    assert res.code == 0, res.err
    marks, compiles = _trace(root)
    first = compiles["compile hello:src/main.cpp"]
    # the actions began with it, before the schedule did; the other compile came with the schedule
    assert abs(first - marks["actions-start"]) < 1000 and first < marks["schedule-start"], (marks, compiles)
    assert marks["schedule-start"] <= compiles["compile hello:src/util.cpp"]
    assert sorted(res.executed("compile")) == ["compile hello:src/main.cpp", "compile hello:src/util.cpp"]
    assert subprocess.run([str(root / "target/dev/hello")]).returncode == 0
    shutil.rmtree(root / "target")
    again = mcpp("build", "--trace", "trace.json", "--message-format", "json", cwd=root)
    assert again.code == 0 and again.executed() == [], again.err  # restored, the link too
    assert "schedule-start" not in _trace(root)[0]  # the home restores: nothing is started ahead


# A first build in process whose `src/main.cpp` is saved anew just after the head start staged
# it, while the rest is still planned: the edit lands between the run's reading and its key.
EDIT_DURING_BUILD = """
import sys
import mcpp.engine.exec.head_start as head_start
offer = head_start.HeadStart.offer

def offer_then_edit(self, action):
    offer(self, action)
    if self.action is not None:
        with open("src/main.cpp", "w") as f:
            f.write('#include "util.hpp"\\nint main() { return util() + 7; }\\n')

head_start.HeadStart.offer = offer_then_edit
from mcpp.engine.cli import dispatch
sys.argv = ["mcpp", "build", "--message-format", "json"]
dispatch.main()
"""


def test_an_edit_saved_while_the_first_compile_runs_ahead_is_keyed_as_what_it_read(tmp_path, mcpp):
    """The run started ahead read the old `main.cpp`: its result is keyed by the old bytes (the
    digests it was staged by), never by the new ones, so the next build compiles the edit
    instead of restoring the old object under the new source's key."""
    import sys

    root = write_tree(tmp_path / "p", PROJECT)
    first = subprocess.run([sys.executable, "-c", EDIT_DURING_BUILD], cwd=root, capture_output=True, text=True,
                           env={**os.environ, "MCPP_HOME": str(mcpp.home), "MCPP_NO_SERVER": "1"})
    assert first.returncode == 0, first.stderr
    assert "+ 7" in (root / "src/main.cpp").read_text()
    assert subprocess.run([str(root / "target/dev/hello")]).returncode == 0  # what the run read
    again = mcpp("build", "--message-format", "json", cwd=root)  # the saved edit: compiled, not restored
    assert again.code == 0 and again.executed("compile") == ["compile hello:src/main.cpp"], again.err
    assert subprocess.run([str(root / "target/dev/hello")]).returncode == 7
    shutil.rmtree(root / "target")
    restored = mcpp("build", "--message-format", "json", cwd=root)  # each source's object under its own key
    assert restored.code == 0 and restored.executed() == [], restored.err
    assert subprocess.run([str(root / "target/dev/hello")]).returncode == 7


def test_a_first_compile_the_plan_makes_otherwise_runs_again_as_planned(tmp_path, mcpp):
    """A package whose only target is shared compiles its library with -fPIC, which only the
    whole plan knows: the compile started ahead (without it) is not the plan's, so it is waited
    for and run again as planned; the object linked is position-independent."""
    root = write_tree(tmp_path / "p", {
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n\n[targets.p]\nkind = "shared"\n',
        "src/a.cpp": "extern int g;\nint a() { return g; }\n",
        "src/b.cpp": "int g = 1;\n"})
    res = mcpp("build", "--trace", "trace.json", "--message-format", "json", cwd=root)
    assert res.code == 0, res.err
    assert "schedule-start" not in _trace(root)[0]
    assert sorted(res.executed("compile")) == ["compile p:src/a.cpp", "compile p:src/b.cpp"]
    relocs = subprocess.run(["readelf", "-rW", str(root / "target/dev/.mcpp/obj/p/src/a.cpp.o")],
                            capture_output=True, text=True, check=True).stdout
    assert "GOTPCREL" in relocs, relocs  # g reached through the GOT: compiled with -fPIC


def test_a_first_compile_the_plan_does_not_make_leaves_no_object(tmp_path, mcpp):
    """`src/a.cpp` is first planned as the library's unit; the plan compiles it only as the
    binary's own (its target has defines): the object started ahead is removed."""
    root = write_tree(tmp_path / "p", {
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n\n[targets.a]\nkind = "bin"\n'
                     'main = "src/a.cpp"\ndefines = ["X=1"]\n',
        "src/a.cpp": "int lib();\nint main() { return lib() - X; }\n",
        "src/lib.cpp": "int lib() { return 1; }\n"})
    res = mcpp("build", "--message-format", "json", cwd=root)
    assert res.code == 0, res.err
    assert sorted(res.executed("compile")) == ["compile p.a:src/a.cpp", "compile p:src/lib.cpp"]
    objects = sorted(str(p.relative_to(root / "target/dev/.mcpp/obj")) for p in root.glob("target/dev/.mcpp/obj/**/*.o"))
    assert objects == ["p.a/src/a.cpp.o", "p/src/lib.cpp.o"]
    assert subprocess.run([str(root / "target/dev/a")]).returncode == 0


@pytest.mark.one_mode  # sets the server mode per build itself
def test_with_no_server_up_the_build_runs_at_once_and_leaves_a_server_for_the_next(tmp_path, mcpp):
    root = write_tree(tmp_path / "p", PROJECT)
    on = {"MCPP_NO_SERVER": "0", "MCPP_SERVER_IDLE": "60", "MCPP_SERVER_START": "background"}

    def status() -> dict:
        res = mcpp("server", "status", cwd=root, env=on)
        assert res.code == 0, res.err
        return {} if res.out.startswith("no server") else dict(line.split(": ", 1) for line in res.out.splitlines())

    try:
        first = mcpp("build", cwd=root, env=on)
        assert first.code == 0 and "Compiling hello" in first.err and first.diagnostics == "", first.err
        deadline = time.monotonic() + 60
        while not status() and time.monotonic() < deadline:  # started by the build, ready a moment later
            time.sleep(0.1)
        assert int(status()["builds"]) == 0  # the first build did not wait for it
        (root / "src/util.cpp").write_text('#include "util.hpp"\nint util() { return 1 - 1; }\n')
        second = mcpp("build", cwd=root, env=on)
        assert second.code == 0 and "Compiling hello" in second.err, second.err
        assert int(status()["builds"]) == 1  # the next one went to the server
    finally:
        mcpp("server", "stop", cwd=root, env=on)


def _server_processes(home) -> list[int]:
    """The pids of server processes started for `home` (listening or not yet): their command
    line is `python -c <engine/server/client.py's SERVE> IDENT ROOT HOME ...`."""
    found = []
    for pid in os.listdir("/proc"):
        try:
            argv = (Path("/proc") / pid / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue
        if any(b"import serve" in a for a in argv) and os.fsencode(str(home)) in argv:
            found.append(int(pid))
    return found


@pytest.mark.one_mode  # sets the server mode per build itself
def test_a_stop_right_after_a_first_build_stops_the_server_that_build_started(tmp_path, mcpp):
    """`mcpp build && mcpp server stop` (a CI job that leaves nothing running): the server the
    build's command starts on its way out imports the engine before it listens, and a stop that
    found no socket then left it to come up behind it. The stop waits for it, and stops it; a
    status waits for it too, and shows it."""
    root = write_tree(tmp_path / "p", PROJECT)
    on = {"MCPP_NO_SERVER": "0", "MCPP_SERVER_IDLE": "60", "MCPP_SERVER_START": "background"}
    try:
        assert mcpp("build", cwd=root, env=on).code == 0
        assert _server_processes(mcpp.home), "the build started no server"
        res = mcpp("server", "stop", "--all", cwd=root, env=on)
        assert (res.code, res.out) == (0, "stopped 1 server\n"), res
        assert _server_processes(mcpp.home) == []
        (root / "src/util.cpp").write_text('#include "util.hpp"\nint util() { return 1 - 1; }\n')
        assert mcpp("build", cwd=root, env=on).code == 0  # in process again, and a server started after
        assert _server_processes(mcpp.home), "the build started no server"
        res = mcpp("server", "status", cwd=root, env=on)  # waits for it too, and shows it
        assert res.code == 0 and res.out.startswith("pid: ") and "\nbuilds: " in res.out, res
        res = mcpp("server", "stop", cwd=root, env=on)
        assert (res.code, res.out) == (0, "stopped server\n"), res
        assert _server_processes(mcpp.home) == []
    finally:
        mcpp("server", "stop", "--all", cwd=root, env=on)


@pytest.mark.one_mode  # sets the server mode per build itself
def test_the_server_started_in_the_background_waits_for_the_command_to_end(tmp_path, mcpp):
    """Its start (an interpreter, then the engine's imports) would take CPU from the build's
    compiles: its process is started when the command that starts it is done, and listens
    after."""
    root = write_tree(tmp_path / "p", {
        "mcpp.toml": '[package]\nname = "waiter"\nversion = "0.1.0"\n',
        "src/main.cpp": """
            #include <fstream>
            #include <thread>
            int main() {
                std::ofstream("running").close();
                for (int i = 0; i < 1200 && !std::ifstream("go"); ++i)
                    std::this_thread::sleep_for(std::chrono::milliseconds(50));
            }
        """,
    })
    on = {"MCPP_NO_SERVER": "0", "MCPP_SERVER_IDLE": "60", "MCPP_SERVER_START": "background"}
    env = {**os.environ, "MCPP_HOME": str(mcpp.home), **on}
    run = subprocess.Popen([mcpp.exe, "run"], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not (root / "running").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (root / "running").exists()
        time.sleep(4)  # a server not held back would be listening by now
        assert mcpp("server", "status", cwd=root, env=on).out.startswith("no server")
        assert _server_processes(mcpp.home) == []  # not even started, while the command runs
        (root / "go").touch()
        assert run.wait(timeout=60) == 0
        deadline = time.monotonic() + 60
        while mcpp("server", "status", cwd=root, env=on).out.startswith("no server") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not mcpp("server", "status", cwd=root, env=on).out.startswith("no server")
    finally:
        (root / "go").touch()
        run.communicate(timeout=60)
        mcpp("server", "stop", cwd=root, env=on)


def _toolchain(where, log) -> None:
    where.mkdir(exist_ok=True)
    for name, driver in (("gcc", "gcc"), ("g++", "g++")):
        path = where / name
        path.write_text(WRAPPER.format(log=log, driver=driver))
        path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _reinstall(where) -> None:
    """The same drivers, written again: new files (inode, mtime) with the same bytes."""
    for name in ("gcc", "g++"):
        path, copy = where / name, where / f".{name}.new"
        shutil.copyfile(path, copy)
        copy.chmod(path.stat().st_mode)
        os.replace(copy, path)


@pytest.mark.skipif(not (os.path.exists("/usr/bin/gcc") and os.path.exists("/usr/bin/g++")), reason="needs gcc")
def test_a_fresh_target_with_the_same_home_asks_no_compiler_and_new_bytes_are_asked(tmp_path, mcpp):
    root = write_tree(tmp_path / "p", PROJECT)
    tc, log = tmp_path / "tc", tmp_path / "asked.log"
    _toolchain(tc, log)
    env = {"PATH": f"{tc}{os.pathsep}{os.environ['PATH']}"}

    def build():
        res = mcpp("build", "--message-format", "json", cwd=root, env=env)
        assert res.code == 0, res.err
        return res, log.read_text().splitlines() if log.exists() else []

    first, asked = build()
    assert len(first.executed("compile")) == 2
    assert len(asked) == 8  # four questions to each driver, once (gcc's -dumpfullversion, not -dumpversion)
    shutil.rmtree(root / "target")
    _reinstall(tc)  # a fresh clone, a CI job: the home kept, the toolchain's files new, its bytes the same
    _, asked_again = build()
    assert asked_again == asked
    (tc / "g++").write_text(WRAPPER.format(log=log, driver="g++") + "# another build of the driver\n")
    shutil.rmtree(root / "target")
    upgraded, asked_then = build()
    assert len(asked_then) == 12 and all(line.startswith(f"{tc}/g++ ") for line in asked_then[8:]), asked_then
    assert len(upgraded.executed("compile")) == 2  # another compiler: nothing of the old one is reused


# A first build in process that notes in the drivers' question log when its first compile is
# handed to the sandbox (engine/exec/head_start.py), and when the head start is given up.
OFFER_LOGGED = """
import sys
import mcpp.engine.exec.head_start as head_start
offer, log = head_start.HeadStart.offer, sys.argv[1]

def logged_offer(self, action):
    offer(self, action)
    with open(log, "a") as f:
        f.write("handed over " + action.id + "\\n" if self.action is not None else "not started\\n")

head_start.HeadStart.offer = logged_offer
from mcpp.engine.cli import dispatch
sys.argv = ["mcpp", "build", "--message-format", "json"]
dispatch.main()
"""


def test_a_first_build_hands_its_first_compile_over_before_it_asks_the_compilers(tmp_path, mcpp):
    """engine/toolchain/compilers.py: with an empty home the drivers are asked who they are when
    their identity is first read (the links, the actions' keys), not before the first compile,
    whose command line needs only their paths; the answers are kept in the home as before."""
    import sys

    root = write_tree(tmp_path / "p", PROJECT)
    tc, log = tmp_path / "tc", tmp_path / "asked.log"
    _toolchain(tc, log)
    env = {**os.environ, "PATH": f"{tc}{os.pathsep}{os.environ['PATH']}", "MCPP_HOME": str(mcpp.home),
           "MCPP_NO_SERVER": "1"}
    res = subprocess.run([sys.executable, "-c", OFFER_LOGGED, str(log)], cwd=root, capture_output=True, text=True,
                         env=env)
    assert res.returncode == 0, res.stderr
    lines = log.read_text().splitlines()
    assert lines[0] == "handed over compile hello:src/main.cpp", "\n".join(lines)
    assert len(lines) == 9 and all(line.startswith(f"{tc}/g") for line in lines[1:]), lines  # then the 8 questions
    assert subprocess.run([str(root / "target/dev/hello")]).returncode == 0
    known = json.loads((mcpp.home / "toolchains.json").read_text())
    assert set(known) == {str(tc / "gcc"), str(tc / "g++")}


# bwrap as the sandbox finds it on PATH, each start logged with when it began (bash's clock: no
# process of its own), then the real one.
TIMED_BWRAP = """#!/bin/bash
echo "$EPOCHREALTIME" >> "{log}"
exec "{bwrap}" "$@"
"""


def test_a_first_build_starts_its_sandbox_while_the_engine_imports(tmp_path, mcpp):
    """engine/build/cold_start.py: with an empty home the `mcpp` process starts the sandbox's
    first worker before it imports the engine, so the build (`build-start`: the engine imported,
    the command line read) finds it coming up instead of starting it then."""
    from mcpp.sandbox.bwrap import find_bwrap

    real = find_bwrap()
    if real is None:
        pytest.skip("no bwrap here: the sandbox is `dir`, which has no worker to start early")
    root = write_tree(tmp_path / "p", PROJECT)
    wrappers, log = tmp_path / "wrappers", tmp_path / "bwrap.log"
    wrappers.mkdir()
    (wrappers / "bwrap").write_text(TIMED_BWRAP.format(log=log, bwrap=real))
    (wrappers / "bwrap").chmod(0o755)
    before = time.time()  # the command starts after this: its trace's instants are later than `before` + ts
    # in process, as a first build runs with no server up (the suite's server mode would wait for one)
    res = mcpp("build", "--trace", "trace.json", cwd=root,
               env={"PATH": f"{wrappers}{os.pathsep}{os.environ['PATH']}", "MCPP_NO_SERVER": "1"})
    assert res.code == 0, res.err
    assert subprocess.run([str(root / "target/dev/hello")]).returncode == 0
    started = [float(line) for line in log.read_text().split()]
    marks, _ = _trace(root)
    # begun before the engine's import (most of the time to `build-start`), not after it
    assert started and started[0] - before < 0.8 * marks["build-start"] / 1e6, (started, before, marks)


def test_a_first_build_that_fails_early_ends_what_it_began(tmp_path, mcpp):
    """What the cold start began (the sandbox's worker) is ended when the build never takes it: a
    manifest error stops the first build before it wants a sandbox."""
    root = write_tree(tmp_path / "p", {**PROJECT, "mcpp.toml": '[package]\nname = "hello"\nversion = 3\n'})
    res = mcpp("build", cwd=root)
    assert res.code == 2 and "mcpp.toml" in res.err and "Traceback" not in res.err, res.err
    slots = mcpp.home / "sandbox"
    assert not slots.exists() or not [p.name for p in slots.iterdir() if p.name.endswith(".slot")]
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            continue
        if str(slots).encode() in cmdline:
            left.append(cmdline[:200])
    assert left == []
