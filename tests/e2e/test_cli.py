"""The command line: new, clean, run's exit code, -p, --manifest-path, subdirectories, -q/-v, progress."""
from __future__ import annotations

import os
import pty
import re
import subprocess

from e2e_support import copy_example, mcpp_executable


def test_new_binary_then_run(tmp_path, mcpp):
    res = mcpp("new", "demo", cwd=tmp_path)
    assert res.code == 0 and "Created binary (application) `demo` package" in res.err
    res = mcpp("run", cwd=tmp_path / "demo")
    assert res.code == 0 and "Hello, world!" in res.out


def test_new_library_then_test(tmp_path, mcpp):
    assert mcpp("new", "geo-lib", "--lib", cwd=tmp_path).code == 0
    res = mcpp("test", cwd=tmp_path / "geo-lib")
    assert res.code == 0, res.err
    assert "basic ... ok" in res.out and "1 passed; 0 failed" in res.out


def test_new_refuses_an_existing_directory(tmp_path, mcpp):
    (tmp_path / "taken").mkdir()
    res = mcpp("new", "taken", cwd=tmp_path)
    assert res.code == 2 and "already exists" in res.err


def test_clean_removes_target(tmp_path, mcpp):
    root = copy_example("01-hello", tmp_path)
    mcpp("build", cwd=root, check=True)
    assert (root / "target").is_dir()
    res = mcpp("clean", cwd=root)
    assert res.code == 0 and not (root / "target").exists()


def test_run_forwards_the_exit_code(project, mcpp):
    root = project({"mcpp.toml": '[package]\nname = "x"\nversion = "0.1.0"\n',
                    "src/main.cpp": "#include <cstdlib>\nint main(int argc, char**) { return argc == 3 ? 7 : 0; }\n"})
    assert mcpp("run", "--", "a", "b", cwd=root).code == 7
    assert mcpp("run", cwd=root).code == 0


def test_build_from_a_subdirectory_and_with_manifest_path(tmp_path, mcpp):
    root = copy_example("01-hello", tmp_path)
    res = mcpp("build", cwd=root / "src")
    assert res.code == 0 and (root / "target" / "dev" / "hello").is_file()
    res = mcpp("--manifest-path", str(root / "mcpp.toml"), "build", "--message-format", "json", cwd=tmp_path)
    assert res.code == 0 and res.executed() == []


def test_package_flag_selects_one_workspace_member(tmp_path, mcpp):
    root = copy_example("04-workspace", tmp_path)
    res = mcpp("build", "-p", "units", "--message-format", "json", cwd=root)
    assert res.code == 0
    assert {e["package"] for e in res.events if e["reason"] == "action-finished"} == {"units"}
    res = mcpp("build", "-p", "nope", cwd=root)
    assert res.code == 2 and "package `nope` is not part of this build" in res.err


def test_quiet_prints_nothing_but_the_program(tmp_path, mcpp):
    root = copy_example("01-hello", tmp_path)
    res = mcpp("-q", "run", cwd=root)
    assert res.out == "Hello, world!\n"


def test_verbose_prints_commands(tmp_path, mcpp):
    root = copy_example("01-hello", tmp_path)
    res = mcpp("-v", "build", cwd=root)
    assert "     Running `" in res.err and " -c src/main.cpp " in res.err


def test_progress_counter_on_a_terminal(tmp_path, mcpp):
    root = copy_example("01-hello", tmp_path)
    primary, secondary = pty.openpty()
    env = {**os.environ, "MCPP_HOME": str(mcpp.home), "TERM": "xterm"}
    proc = subprocess.Popen([mcpp_executable(), "build", "-j", "1"], cwd=root, env=env,
                            stdout=secondary, stderr=secondary)
    os.close(secondary)
    chunks = []
    while True:
        try:
            data = os.read(primary, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait()
    raw = b"".join(chunks).decode()
    text = re.sub(r"\x1b\[[0-9;]*m", "", raw)  # drop colours, keep the cursor controls
    assert proc.returncode == 0
    assert "Building [" in text and re.search(r"\] [0-3]/3: ", text)  # the live counter: done/total
    assert "\r\x1b[2K" in text  # redrawn in place, and cleared before the final line
    assert "Finished dev" in text


def test_compile_commands_json_is_written_under_target(tmp_path, mcpp):
    import json
    root = copy_example("01-hello", tmp_path)
    mcpp("build", cwd=root, check=True)
    assert not os.path.lexists(root / "compile_commands.json")  # the source tree is left alone unasked
    entries = json.loads((root / "target" / "compile_commands.json").read_text())
    assert sorted(os.path.basename(e["file"]) for e in entries) == ["greeting.cpp", "main.cpp"]
    assert all(e["directory"] == str(root) for e in entries)


def test_unknown_command_is_a_usage_error(tmp_path, mcpp):
    res = mcpp("frobnicate", cwd=tmp_path)
    assert res.code == 2 and "Traceback" not in res.err
