"""Hermetic actions through the real CLI: undeclared inputs fail, outputs do not depend on the
checkout's path, `--sandbox off` still works and says it is not hermetic."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from e2e_support import Mcpp, copy_example


def undeclared_header_project(project, tmp_path):
    outside = tmp_path / "outside-include"
    outside.mkdir()
    (outside / "secret.hpp").write_text("#pragma once\ninline int secret() { return 7; }\n")
    return project({
        "mcpp.toml": f'[package]\nname = "leaky"\nversion = "0.1.0"\n[build]\ncxxflags = ["-I{outside}"]\n',
        "src/main.cpp": '#include "secret.hpp"\nint main() { return secret() == 7 ? 0 : 1; }\n',
    }), outside / "secret.hpp"


@pytest.mark.parametrize("mode", ["bwrap", "dir"])
def test_an_undeclared_header_through_an_absolute_include_path_fails(project, tmp_path, mcpp, mode):
    root, header = undeclared_header_project(project, tmp_path)
    res = mcpp("build", "--sandbox", mode, cwd=root)
    assert res.code == 1, res.out + res.err
    assert "secret.hpp" in res.err
    if mode == "dir":
        assert f"error: action compile leaky:src/main.cpp read undeclared input {header}" in res.err
    else:
        assert "secret.hpp: No such file or directory" in res.err


def test_sandbox_off_builds_it_and_says_it_is_not_hermetic(project, tmp_path, mcpp):
    root, _ = undeclared_header_project(project, tmp_path)
    res = mcpp("build", "--sandbox", "off", cwd=root)
    assert res.code == 0, res.err
    assert "warning: --sandbox off: actions run directly in the project directory" in res.err
    assert "not hermetic" in res.err


@pytest.mark.parametrize("mode", ["bwrap", "dir", "off"])
def test_two_checkouts_give_byte_identical_objects_and_binaries(tmp_path, tmp_path_factory, mode):
    trees = []
    for where in ("first/checkout", "second/much/deeper/checkout"):
        root = copy_example("02-with-deps", tmp_path / where)
        # A separate store for each, so nothing is shared through the cache.
        Mcpp(tmp_path_factory.mktemp("home"))("build", "--sandbox", mode, cwd=root / "app", check=True)
        trees.append(root / "app" / "target" / "dev")
    # gcc 12 writes its working directory into module CMIs: only under bwrap (always /execroot)
    # are the CMIs themselves identical too.
    suffixes = (".o", ".a", "") + ((".gcm",) if mode == "bwrap" else ())
    files = sorted(p.relative_to(trees[0]) for p in trees[0].rglob("*")
                   if p.is_file() and p.suffix in suffixes
                   and (p.suffix or ".mcpp" not in p.parts))  # not the engine's state files
    assert any(p.suffix == ".o" for p in files) and (trees[0] / "app").is_file()
    assert any(p.suffix == ".a" for p in files)
    for rel in files:
        assert (trees[0] / rel).read_bytes() == (trees[1] / rel).read_bytes(), f"{rel} differs"


def test_actions_see_only_their_declared_environment(project, mcpp):
    root = project({"mcpp.toml": '[package]\nname = "envy"\nversion = "0.1.0"\n',
                    "src/main.cpp": "#ifdef LEAK\n#error leaked\n#endif\nint main() {}\n"})
    # CPATH would add an include path and CXXFLAGS-like variables must not reach the compiler.
    res = mcpp("build", cwd=root, env={"CPATH": "/nonexistent", "GCC_EXEC_PREFIX": "/nonexistent/"})
    assert res.code == 0, res.err


def _slow_project(project, n=6):
    files = {"mcpp.toml": '[package]\nname = "slow"\nversion = "0.1.0"\n',
             "src/main.cpp": "int main() {}\n"}
    for i in range(n):
        # Enough template work to keep the compiler busy for a moment.
        files[f"src/s{i}.cpp"] = ("#include <map>\n#include <string>\n#include <regex>\n"
                                  f"std::map<std::string, std::regex> table{i}() {{ return {{{{\"a\", std::regex(\"a+\")}}}}; }}\n")
    return project(files)


def _compilers_running_under(path) -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "cc1plus" in line and str(path) in line]


def test_ctrl_c_ends_running_actions_and_removes_their_sandboxes(project, mcpp):
    import os
    import signal
    import time

    from e2e_support import mcpp_executable, started

    root = _slow_project(project)
    env = {**os.environ, "MCPP_HOME": str(mcpp.home)}
    proc = subprocess.Popen(started([mcpp_executable(), "build", "-j", "2", "--sandbox", "dir"]), cwd=root,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sandboxes = mcpp.home / "sandbox"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(p.is_dir() and not p.name.endswith(".out")
                                                  for p in sandboxes.glob("*-*")):
        time.sleep(0.02)
    assert proc.poll() is None, "the build ended before an action started"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err
    time.sleep(0.2)
    assert _compilers_running_under(mcpp.home) == []
    assert [p.name for p in sandboxes.glob("*-*") if p.is_dir() and not p.name.endswith(".out")] == []


@pytest.mark.heavy
def test_stale_sandbox_directories_of_a_killed_build_are_reclaimed(project, mcpp):
    import os
    import signal
    import time

    from e2e_support import mcpp_executable

    root = _slow_project(project)
    # In process: the sandbox directories are named by the engine's pid, and the kill must reach it.
    env = {**os.environ, "MCPP_HOME": str(mcpp.home), "MCPP_NO_SERVER": "1"}
    proc = subprocess.Popen([mcpp_executable(), "build", "-j", "2", "--sandbox", "dir"], cwd=root, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    sandboxes = mcpp.home / "sandbox"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(p.is_dir() for p in sandboxes.glob(f"{proc.pid}-*")):
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)  # the engine and its compilers, with no chance to clean up
    proc.wait()
    stale = [p for p in sandboxes.glob(f"{proc.pid}-*")]
    assert stale, "the killed build left no sandbox directory to reclaim"
    assert mcpp("build", "--sandbox", "dir", cwd=root).code == 0
    assert [p for p in sandboxes.glob(f"{proc.pid}-*")] == []
