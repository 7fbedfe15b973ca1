"""Status lines (`Compiling`, `Finished`, `Running`) go to stderr, as Cargo's do: stdout carries
only what the program prints (or the JSON events of `--message-format json`), so
`mcpp run > out.txt` captures the program's output alone. Checked in both server modes (the
server relays the client's own descriptors; its no-op answer writes the `Finished` line too)."""
from __future__ import annotations

import json
import os
import subprocess

from e2e_support import HELLO_PACKAGE, mcpp_executable


def test_run_redirected_to_a_file_captures_only_the_programs_output(project, mcpp, tmp_path):
    root = project(HELLO_PACKAGE)
    for attempt in range(2):  # a full build, then the no-op path
        out_file = tmp_path / f"out{attempt}.txt"
        with open(out_file, "w") as out:
            p = subprocess.run([mcpp_executable(), "run"], cwd=root, stdout=out, stderr=subprocess.PIPE,
                               text=True, env=_env(mcpp), timeout=300)
        assert p.returncode == 0, p.stderr
        assert out_file.read_text() == "hello\n"
        assert "Finished dev" in p.stderr and "Running `target/dev/hello`" in p.stderr
        if attempt == 0:
            assert "Compiling hello v0.1.0 (.)" in p.stderr


def test_build_prints_nothing_on_stdout_and_its_noop_answer_goes_to_stderr(project, mcpp):
    root = project(HELLO_PACKAGE)
    first = mcpp("build", cwd=root)
    assert first.code == 0 and first.out == "", first.out
    assert "Compiling hello" in first.err and "Finished dev" in first.err
    again = mcpp("build", cwd=root)  # answered by the no-op fast path (or the server's)
    assert again.code == 0 and again.out == ""
    assert again.err.startswith("    Finished dev"), again.err


def test_json_events_stay_on_stdout_and_the_status_lines_on_stderr(project, mcpp):
    root = project(HELLO_PACKAGE)
    res = mcpp("run", "--message-format", "json", cwd=root, env={"MCPP_NO_FAST_PATH": "1"})
    assert res.code == 0, res.err
    lines = res.out.splitlines()
    assert lines[-1] == "hello"  # the program's own line, after the events
    assert all(json.loads(line)["reason"] for line in lines[:-1])
    assert "Finished dev" in res.err and "Finished" not in res.out


def test_new_and_clean_report_on_stderr(tmp_path, mcpp):
    res = mcpp("new", "demo", "--vcs", "none", cwd=tmp_path)
    assert res.code == 0 and res.out == "" and "Created binary (application) `demo` package" in res.err
    mcpp("build", cwd=tmp_path / "demo", check=True)
    clean = mcpp("clean", cwd=tmp_path / "demo")
    assert clean.code == 0 and clean.out == "" and "Removed" in clean.err


def _env(mcpp) -> dict:
    env = {**os.environ, "MCPP_HOME": str(mcpp.home)}
    env.pop("TERM", None)
    return env
