"""The warm build server (docs/server.md): builds through it behave as in process.

These tests turn the server on whatever mode the suite runs in; each stops its server at the end.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time

import pytest

from mcpp.cas.statcache import StatCache

from e2e_support import Mcpp, alive, mcpp_executable, serving_pid, started, write_tree

pytestmark = pytest.mark.one_mode  # sets the server mode per build itself: the server-on run leaves it out

ON = {"MCPP_NO_SERVER": "0", "MCPP_SERVER_IDLE": "60"}

HELLO = {
    "mcpp.toml": """
        [package]
        name = "hello"
        version = "0.1.0"
    """,
    "src/main.cpp": """
        #include <cstdio>
        #include "greet.hpp"
        int main() { std::puts(GREETING); }
    """,
    "src/greet.hpp": '#pragma once\n#define GREETING "hello"\n',
}


def _slow_project(root, units: int = 6) -> None:
    """A build that takes seconds at -j1: each unit includes <regex> and instantiates it."""
    files = dict(HELLO)
    for i in range(units):
        files[f"src/slow{i}.cpp"] = (f'#include <regex>\n#include <string>\n'
                                     f'bool slow{i}(const std::string& s) {{ return std::regex_match(s, std::regex("a+{i}")); }}\n')
    write_tree(root, files)


def _status(mcpp: Mcpp, root) -> dict:
    res = mcpp("server", "status", cwd=root, env=ON)
    assert res.code == 0, res.err
    if res.out.startswith("no server"):
        return {}
    return dict(line.split(": ", 1) for line in res.out.splitlines())


@pytest.fixture
def served(tmp_path, mcpp):
    """(root, mcpp) for a hello project; its server is stopped afterwards."""
    root = write_tree(tmp_path / "hello", HELLO)
    yield root, mcpp
    mcpp("server", "stop", cwd=root, env=ON)


def _popen(mcpp: Mcpp, root, *args: str) -> subprocess.Popen:
    env = {**os.environ, "MCPP_HOME": str(mcpp.home), **ON}
    env.pop("TERM", None)
    return subprocess.Popen(started([mcpp_executable(), *args]), cwd=root, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for_line(proc: subprocess.Popen, needle: str) -> list[str]:
    lines = []
    for line in proc.stderr:  # status lines go to stderr
        lines.append(line)
        if needle in line:
            return lines
    raise AssertionError(f"no {needle!r} in {lines}")


def test_build_goes_through_a_server_and_reuses_it(served):
    root, mcpp = served
    first = mcpp("build", cwd=root, env=ON)
    assert first.code == 0 and "Compiling hello" in first.err, first.err
    assert first.diagnostics == ""
    status = _status(mcpp, root)
    assert status["root"] == str(root) and int(status["builds"]) == 1
    res = mcpp("run", cwd=root, env=ON)
    assert res.code == 0 and res.out.endswith("hello\n"), res.err
    again = _status(mcpp, root)
    assert again["pid"] == status["pid"] and int(again["builds"]) == 2


def test_no_server_flag_and_env_build_in_process(served):
    root, mcpp = served
    assert mcpp("build", "--no-server", cwd=root, env=ON).code == 0
    assert mcpp("--no-server", "build", cwd=root, env=ON).code == 0
    assert mcpp("build", cwd=root, env={"MCPP_NO_SERVER": "1"}).code == 0
    assert _status(mcpp, root) == {}


def test_output_exit_code_and_json_match_in_process(tmp_path, mcpp):
    files = {**HELLO, "src/main.cpp": "int main() { return undeclared; }\n"}
    results = {}
    for mode, env in (("in-process", {"MCPP_NO_SERVER": "1"}), ("server", ON)):
        root = write_tree(tmp_path / mode / "hello", files)
        human = mcpp("build", cwd=root, env=env)
        json_res = mcpp("build", "--message-format", "json", cwd=root, env=env)
        results[mode] = (human, json_res)
        mcpp("server", "stop", cwd=root, env=ON)
    (h1, j1), (h2, j2) = results["in-process"], results["server"]
    assert h1.code == h2.code == 1
    assert h1.err == h2.err and "error: 'undeclared' was not declared" in h2.err
    assert j1.code == j2.code == 1

    def shape(res):
        return [(e.get("reason"), e.get("id"), e.get("status")) for e in
                (json.loads(line) for line in res.out.splitlines())]

    assert shape(j1) == shape(j2)


def test_run_passes_stdin_arguments_and_exit_code(served):
    root, mcpp = served
    (root / "src/main.cpp").write_text(
        "#include <iostream>\n#include <string>\n"
        "int main(int argc, char** argv) { std::string s; std::getline(std::cin, s);\n"
        "  std::cout << s << ' ' << argv[1] << std::endl; return 7; }\n")
    env = {**os.environ, "MCPP_HOME": str(mcpp.home), **ON}
    p = subprocess.run([mcpp_executable(), "-q", "run", "--", "arg"], cwd=root, env=env, input="typed\n",
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 7 and p.stdout == "typed arg\n", p.stderr
    assert _status(mcpp, root) != {}


def test_environment_and_working_directory_are_the_clients(served):
    """A build program's environment variable and the working directory come from each client,
    never from the server or the build before."""
    root, mcpp = served
    (root / "build.star").write_text(
        'mode = mcpp.rerun_if_env_changed("GREETING_MODE")\n'
        'if mode:\n    mcpp.define("GREETING_MODE=\\"" + mode + "\\"")\n')
    (root / "src/main.cpp").write_text(
        '#include <cstdio>\n#ifndef GREETING_MODE\n#define GREETING_MODE "plain"\n#endif\n'
        'int main() { std::puts(GREETING_MODE); }\n')
    assert mcpp("-q", "run", cwd=root, env={**ON, "GREETING_MODE": "loud"}).out == "loud\n"
    assert mcpp("-q", "run", cwd=root, env=ON).out == "plain\n"
    (root / "src/sub").mkdir()
    outputs = []
    for env in (ON, {"MCPP_NO_SERVER": "1"}):
        (root / "src/main.cpp").write_text(f'#include <cstdio>\nint main() {{ std::puts("{len(outputs)}"); }}\n')
        res = mcpp("--manifest-path", "../../mcpp.toml", "build", cwd=root / "src/sub", env=env)
        assert res.code == 0, res.err
        outputs.append(re.sub(r"in [0-9.]+s", "in Ts", res.err))
    assert outputs[0] == outputs[1] and "Compiling hello" in outputs[0]


@pytest.mark.heavy
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGHUP])
def test_ctrl_c_or_a_hang_up_cancels_the_build_as_in_process(tmp_path, mcpp, signum):
    root = tmp_path / "slow"
    _slow_project(root)
    try:
        proc = _popen(mcpp, root, "build", "-j", "1")
        _wait_for_line(proc, "Compiling")
        time.sleep(0.3)
        proc.send_signal(signum)
        _out, err = proc.communicate(timeout=60)
        assert proc.returncode == 128 + signum and "error: interrupted" in err, err
        assert "building in process" not in err
        res = mcpp("build", "-j", "2", cwd=root, env=ON)  # the build lock was released
        assert res.code == 0, res.err
    finally:
        mcpp("server", "stop", cwd=root, env=ON)


@pytest.mark.heavy
def test_killed_server_mid_build_is_an_error_not_a_second_build_and_the_next_build_is_right(tmp_path, mcpp):
    root = tmp_path / "slow"
    _slow_project(root)
    try:
        mcpp("metadata", cwd=root)  # nothing: just a project that loads
        proc = _popen(mcpp, root, "build", "-j", "1")
        _wait_for_line(proc, "Compiling")
        pid = int(_status(mcpp, root)["pid"])
        time.sleep(0.3)
        os.kill(pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 1, err
        assert err.startswith("error: the mcpp server stopped before the command finished (see "), err
        assert "it was not run again" in err and "building in process" not in err
        assert "Finished" not in err
        # The next build, through a fresh server, finishes what the cancelled one left.
        res = mcpp("build", "--message-format", "json", cwd=root, env={**ON, "MCPP_NO_FAST_PATH": "1"})
        assert res.code == 0, res.err
        assert int(_status(mcpp, root)["pid"]) != pid
        assert mcpp("-q", "run", cwd=root, env=ON).out == "hello\n"
    finally:
        mcpp("server", "stop", cwd=root, env=ON)


@pytest.mark.heavy
def test_a_crashed_build_process_is_an_error_not_a_second_build(tmp_path, mcpp):
    """The server lives on; its build child for this request dies (as a segfault would)."""
    root = tmp_path / "slow"
    _slow_project(root)
    try:
        proc = _popen(mcpp, root, "build", "-j", "1")
        _wait_for_line(proc, "Compiling")
        server = int(_status(mcpp, root)["pid"])
        with open(f"/proc/{server}/task/{server}/children") as f:
            (build_child,) = [int(p) for p in f.read().split()]
        os.kill(build_child, signal.SIGKILL)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 128 + signal.SIGKILL, err
        assert "error: the mcpp server's build process died (signal 9); it was not run again" in err
        assert "building in process" not in err and "Finished" not in err
        assert int(_status(mcpp, root)["pid"]) == server
        res = mcpp("build", cwd=root, env=ON)
        assert res.code == 0, res.err
        assert mcpp("-q", "run", cwd=root, env=ON).out == "hello\n"
    finally:
        mcpp("server", "stop", cwd=root, env=ON)


def test_a_server_of_another_version_steps_aside(served):
    root, mcpp = served
    assert mcpp("build", cwd=root, env=ON).code == 0
    old = _status(mcpp, root)
    # Speak to it as a client of another mcpp would.
    from mcpp.engine.server import paths, protocol

    ident = paths.server_id(str(root), str(mcpp.home))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(paths.socket_path(ident))
    protocol.send(sock, {"op": "build", "identity": "another mcpp", "argv": ["build"]}, [0, 1, 2])
    assert protocol.receive(sock) == {"restart": "version"}
    sock.close()
    res = mcpp("build", cwd=root, env={**ON, "MCPP_NO_FAST_PATH": "1"})
    assert res.code == 0 and res.diagnostics == ""
    assert _status(mcpp, root)["pid"] != old["pid"]
    log = (mcpp.home / "server" / f"{ident}.log").read_text()
    assert f"[{old['pid']}] a client of another version or installation: making way for its server" in log


def test_server_stop_and_idle_exit(served):
    root, mcpp = served
    assert mcpp("build", cwd=root, env={**ON, "MCPP_SERVER_IDLE": "1"}).code == 0
    pid = serving_pid(mcpp.home, root)  # not `server status`'s: asking may outlast a second of idling
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and alive(pid):
        time.sleep(0.2)
    assert not alive(pid)
    assert mcpp("build", cwd=root, env={**ON, "MCPP_NO_FAST_PATH": "1"}).code == 0
    assert _status(mcpp, root) != {}
    res = mcpp("server", "stop", cwd=root, env=ON)
    assert res.out.strip() == "stopped server"
    assert re.match(r"no server", mcpp("server", "status", cwd=root, env=ON).out)


@pytest.mark.parametrize("watcher", ["inotify", "stat"])
def test_the_plan_is_reused_only_while_it_holds(served, watcher):
    root, mcpp = served
    env = {**ON, "MCPP_SERVER_WATCHER": watcher, "MCPP_NO_FAST_PATH": "1"}
    (root / "src/other.hpp").write_text('#pragma once\n#define OTHER "other"\n')

    def run_and_status(expected: str) -> dict:
        res = mcpp("-q", "run", cwd=root, env=env)
        assert res.code == 0 and res.out == expected, res.err
        status = _status(mcpp, root)
        assert status["watcher"] == ("inotify" if watcher == "inotify" else "stat scan")
        return {k: int(status[k]) for k in ("plans_made", "plans_reused")}

    assert run_and_status("hello\n") == {"plans_made": 1, "plans_reused": 0}
    assert run_and_status("hello\n") == {"plans_made": 1, "plans_reused": 1}
    # A body edit: same includes, same module facts: the plan holds, the compile runs.
    (root / "src/main.cpp").write_text('#include <cstdio>\n#include "greet.hpp"\n'
                                       'int main() { std::puts(GREETING "!"); }\n')
    assert run_and_status("hello!\n") == {"plans_made": 1, "plans_reused": 2}
    # A new #include line: planned again (the compile's header set changed).
    (root / "src/main.cpp").write_text('#include <cstdio>\n#include "greet.hpp"\n#include "other.hpp"\n'
                                       'int main() { std::puts(OTHER); }\n')
    assert run_and_status("other\n") == {"plans_made": 2, "plans_reused": 2}
    # The included header's edit reaches the binary (its new contents are read, not remembered).
    (root / "src/other.hpp").write_text('#pragma once\n#define OTHER "changed"\n')
    assert run_and_status("changed\n")["plans_reused"] == 3
    # A new source file: the shape of the tree changed, planned again, and it is compiled.
    (root / "src/extra.cpp").write_text("int extra() { return 1; }\n")
    assert run_and_status("changed\n") == {"plans_made": 3, "plans_reused": 3}
    assert (root / "target/dev/.mcpp/obj/hello/src/extra.cpp.o").is_file()
    # A manifest edit: the graph differs, planned again.
    (root / "mcpp.toml").write_text('[package]\nname = "hello"\nversion = "0.2.0"\n')
    assert run_and_status("changed\n")["plans_made"] == 4


def test_a_rebuild_after_the_target_directory_is_removed_hashes_no_unchanged_source(served):
    """`rm -rf target` removes the stat cache with the outputs; the server still holds what it
    loaded from it (engine/server/state_memo.py: `reopen`), so the rebuild stats the sources,
    restores every output from the action cache and reads no source to hash it (10,000 sources:
    about a second). A file edited meanwhile has another stat: it is hashed again and built."""

    root, mcpp = served
    env = {**ON, "MCPP_NO_FAST_PATH": "1"}

    def build() -> tuple[dict, list[str]]:
        res = mcpp("build", "--message-format", "json", cwd=root, env=env)
        assert res.code == 0, res.err
        done = next(e for e in res.events if e.get("reason") == "build-finished")
        return done, res.executed()

    def held_states() -> None:  # the server has read back the state files of the last build
        deadline = time.monotonic() + 30
        while int(_status(mcpp, root).get("states_held", 0)) < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert int(_status(mcpp, root)["states_held"]) >= 1

    build()  # in process; it starts the server
    assert build()[0]["fresh"] >= 1  # through the server, which then holds its state files
    held_states()
    shutil.rmtree(root / "target")
    done, ran = build()
    assert ran == [] and done["cached"] == 2 and done["files_hashed"] == 0, done
    assert subprocess.run([str(root / "target/dev/hello")], capture_output=True, text=True).stdout == "hello\n"

    held_states()
    time.sleep(0.02)  # a new stamp for the edit
    (root / "src/greet.hpp").write_text('#pragma once\n#define GREETING "hello again"\n')
    shutil.rmtree(root / "target")
    done, ran = build()
    assert ran == ["compile hello:src/main.cpp", "link hello:hello"] and done["files_hashed"] == 1, (done, ran)
    assert subprocess.run([str(root / "target/dev/hello")], capture_output=True, text=True).stdout == "hello again\n"


def test_the_servers_imported_engine_is_left_out_of_its_collections(served):
    """What the server imported once (engine/entry.py `serve`) is frozen: the full collections
    after its builds, whose state and plans it replaces, walk only what it holds for them."""
    root, mcpp = served
    assert mcpp("build", cwd=root, env=ON).code == 0
    assert int(_status(mcpp, root)["objects_frozen"]) > 10_000


def test_a_build_that_saved_nothing_leaves_the_servers_state_as_it_is(served):
    """A no-op through the full engine writes no state file, so the server does not read its
    state back (a thousand units: tens of milliseconds a later build would wait behind); an
    edit's build, given the server's state, hands back what it changed, and the server applies
    that instead of reading the files (10,000 units: ~0.1 s, state_memo.py)."""
    root, mcpp = served
    env = {**ON, "MCPP_NO_FAST_PATH": "1"}

    def build_and_status(out: str = "hello") -> tuple[int, int, int]:
        res = mcpp("run", "--message-format", "json", cwd=root, env=env)
        assert res.code == 0 and res.out.splitlines()[-1] == out, res.err
        status = _status(mcpp, root)
        return int(status["states_loaded"]), int(status["states_held"]), int(status["states_updated"])

    def racy_outputs_settled(counts: tuple[int, int, int], out: str = "hello") -> tuple[int, int, int]:
        """An output the last build wrote in the same clock tick as its save left the stat cache
        (the racy-timestamp guard, cas/statcache.py): the next build hashes it again and rightly
        saves. Such a build is run here first, so that the no-op checked next has nothing to hash."""
        dev = root / "target/dev"
        outputs = [*(dev / ".mcpp/obj").rglob("*.o"), *(p for p in dev.iterdir() if p.is_file() and p.name[0] != ".")]
        cache = StatCache(dev / ".mcpp/stat")
        if all(cache.recorded(p) is not None for p in outputs):
            return counts
        return build_and_status(out)

    first = build_and_status()
    assert first[0] >= 1 and first[1] >= 1 and first[2] == 0
    built = racy_outputs_settled(first)
    assert build_and_status() == built
    for n, greeting in enumerate(("hi", "hey"), 1):
        time.sleep(0.02)  # a new stamp for the edit
        (root / "src/greet.hpp").write_text(f'#pragma once\n#define GREETING "{greeting}"\n')
        assert build_and_status(greeting) == (built[0], built[1], built[2] + n)
    settled = racy_outputs_settled((built[0], built[1], built[2] + 2), "hey")
    assert build_and_status("hey") == settled  # and what it holds is the files
    shutil.rmtree(root / "target")  # files that are not the ones a build handed back changes of
    assert build_and_status("hey")[0] > built[0]


def test_a_no_op_hands_back_the_knowledge_it_was_given_and_the_server_keeps_its_proof(served):
    """A full-engine no-op ends with the knowledge it was given: the server refreshes the proof
    it holds (only files touched since are checked again) instead of proving three thousand
    files anew after every build, nor after an edit's build (only what it keys anew is checked);
    the builds after an edit are still right."""
    root, mcpp = served
    env = {**ON, "MCPP_NO_FAST_PATH": "1"}

    def build(expect_out: str) -> dict:
        res = mcpp("run", "--message-format", "json", cwd=root, env=env)
        assert res.code == 0, res.err
        assert res.out.splitlines()[-1] == expect_out
        return _status(mcpp, root)

    build("hello")
    first = int(build("hello")["proofs_refreshed"])
    second = int(build("hello")["proofs_refreshed"])
    assert second > first
    time.sleep(0.02)
    (root / "src/greet.hpp").write_text('#pragma once\n#define GREETING "hi"\n')
    status = build("hi")
    assert int(status["plans_reused"]) >= 1
    # an edit's knowledge, a few digests apart: its proof refreshed too, not made anew
    assert int(status["proofs_refreshed"]) > second
    time.sleep(0.02)
    (root / "src/greet.hpp").write_text('#pragma once\n#define GREETING "hey"\n')
    build("hey")  # and what it holds proven is so


def test_a_home_that_cannot_hold_the_server_is_named_by_the_build(tmp_path, mcpp):
    """The client cannot make `$MCPP_HOME/server`: no traceback and no server warning; the
    in-process build names what is in the way, as without a server."""
    root = write_tree(tmp_path / "hello", HELLO)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    res = mcpp("build", cwd=root, env={**ON, "MCPP_HOME": str(blocker / "home")})
    assert res.code == 2 and "Traceback" not in res.err, res.err
    assert f"error: {blocker}/home/config.toml: cannot read: Not a directory" in res.err, res.err
    assert "server" not in res.err, res.err


@pytest.mark.parametrize("moved", ["home", "workspace"])
def test_a_home_or_workspace_replaced_under_the_same_path_gets_a_new_server(served, moved):
    """The server is named by paths; what it holds describes the directories it started with.
    One moved aside and made again under the same path is another directory: the server hands
    over at the next request (the client starts a new one), and the old one exits."""

    root, mcpp = served
    assert mcpp("build", cwd=root, env=ON).code == 0
    old = int(_status(mcpp, root)["pid"])
    if moved == "home":
        os.rename(mcpp.home, f"{mcpp.home}.old")
        os.mkdir(mcpp.home)
    else:
        os.rename(root, f"{root}.old")
        shutil.copytree(f"{root}.old", root, symlinks=True)
    res = mcpp("build", "--message-format", "json", cwd=root, env={**ON, "MCPP_NO_FAST_PATH": "1"})
    assert res.code == 0 and "warning" not in res.err, res.err
    new = int(_status(mcpp, root)["pid"])
    assert new != old
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and alive(old):
        time.sleep(0.2)
    assert not alive(old)
    assert mcpp("run", cwd=root, env=ON).out.endswith("hello\n")


def test_the_server_begins_the_next_builds_sandbox_and_the_next_fork_takes_it_over(served):
    """Once a build has answered its client, the server starts the first worker of the sandbox
    the next build will want (engine/server/sandbox_ahead.py), and the next fork it makes (the
    build child, or the spare) takes the worker over and runs the build's actions in it; the
    server reaps each worker once its build has ended it: no zombie is left."""
    root, mcpp = served
    env = {**ON, "MCPP_NO_FAST_PATH": "1"}
    for greeting in ("hello", "hi", "hey", "hello again"):
        time.sleep(0.02)  # a new stamp for the edit
        (root / "src/greet.hpp").write_text(f'#pragma once\n#define GREETING "{greeting}"\n')
        res = mcpp("run", "--message-format", "json", cwd=root, env=env)
        assert res.code == 0, res.err
        assert res.out.splitlines()[-1] == greeting
    status = _status(mcpp, root)
    assert int(status["sandboxes_begun_ahead"]) >= 2
    assert int(status["sandboxes_handed_over"]) >= 2
    server = int(status["pid"])
    deadline = time.monotonic() + 5
    while True:  # the last build's child may still be ending its sandbox
        with open(f"/proc/{server}/task/{server}/children") as f:
            children = f.read().split()
        states = []
        for child in children:
            try:
                with open(f"/proc/{child}/stat") as f:
                    states.append(f.read().rsplit(")", 1)[1].split()[0])
            except FileNotFoundError:
                pass
        if "Z" not in states or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert "Z" not in states


def test_a_builds_state_files_are_read_back_when_it_answers_not_when_its_child_exits(served, tmp_path):
    """Once a build has answered (`Hooks.on_reply`), the server reads back the state files it
    holds that the build rewrote: a build run right after (forked before the last one's child
    has exited and its hand-off is taken in) is given them instead of loading them itself. The
    child's later hand-off then finds them read already."""
    from mcpp.engine.server import state_memo, warm

    root, mcpp = served
    in_process = {"MCPP_NO_SERVER": "1"}
    assert mcpp("build", cwd=root, env=in_process).code == 0
    state = root / "target" / "dev" / ".mcpp"
    paths = (str(state / "stat"), str(state / "actions"), str(root), str(state / "scans"))
    hooks = warm.Hooks(str(root), "test", str(tmp_path))
    try:
        loaded = state_memo.preload(paths)
        assert loaded is not None
        hooks.states[paths] = loaded
        hooks.on_reply()
        assert hooks.states_loaded == 0  # nothing changed since: nothing read
        time.sleep(0.02)  # a new stamp for the edit
        (root / "src/greet.hpp").write_text('#pragma once\n#define GREETING "hi"\n')
        assert mcpp("build", cwd=root, env=in_process).code == 0
        generation = hooks.generation
        hooks.on_reply()
        assert hooks.states_loaded == 1 and hooks.generation > generation
        assert hooks.states[paths][0] == state_memo.stamps(paths)
        assert state_memo.held(hooks.states, paths) is not None  # what a child forked now is given
    finally:
        hooks.watcher.close()


def test_an_include_line_written_through_a_hard_link_made_from_elsewhere_plans_again(served, tmp_path):
    """The plan's watcher watches directories: a write through a link made from an unwatched
    directory raises nothing there. The file's own (inode) watch names it, and the reused
    plan's scans of it are checked: a new `#include` line plans again."""
    root, mcpp = served
    env = {**ON, "MCPP_NO_FAST_PATH": "1"}
    (root / "src/other.hpp").write_text('#pragma once\n#define OTHER "other"\n')

    def run_and_status(expected: str) -> dict:
        res = mcpp("-q", "run", cwd=root, env=env)
        assert res.code == 0 and res.out == expected, res.err
        status = _status(mcpp, root)
        return {k: int(status[k]) for k in ("plans_made", "plans_reused")}

    assert run_and_status("hello\n") == {"plans_made": 1, "plans_reused": 0}
    assert run_and_status("hello\n") == {"plans_made": 1, "plans_reused": 1}
    (tmp_path / "elsewhere").mkdir()
    os.link(root / "src/main.cpp", tmp_path / "elsewhere/main.cpp")
    with open(tmp_path / "elsewhere/main.cpp", "r+") as f:  # the same inode
        f.truncate()
        f.write('#include <cstdio>\n#include "greet.hpp"\n#include "other.hpp"\nint main() { std::puts(OTHER); }\n')
    assert run_and_status("other\n") == {"plans_made": 2, "plans_reused": 1}


def test_a_server_told_to_stop_has_freed_its_name_when_it_answers(served):
    """`mcpp server stop` then `mcpp build` at once, while the last build's child still winds
    down (the stop then does not wait for the server to exit): once the stop is answered the
    socket name is free, so the build starts a server of its own instead of queueing its request
    on the stopping one's listener, which would drop it ("the server stopped before the command
    finished")."""
    root, mcpp = served
    assert mcpp("build", cwd=root, env=ON).code == 0  # leaves a sandbox begun ahead, then a spare
    time.sleep(0.5)
    from mcpp.engine.server import client, paths

    ident = paths.server_id(str(root), str(mcpp.home))
    reply = client.request_once(ident, {"op": "stop"})
    assert reply is not None and reply["stopping"] is True
    assert not os.path.exists(paths.socket_path(ident))
    res = mcpp("build", cwd=root, env={**ON, "MCPP_NO_FAST_PATH": "1"})
    assert res.code == 0, res.err
