"""Servers that clean up after themselves (docs/server.md, "Using it"): `mcpp server list`,
`mcpp server stop --all`, the idle timeout (`MCPP_SERVER_IDLE`, `[server] idle-timeout`, 15
minutes by default) and the cap on servers per home (`[server] max-servers`, 4 by default).
Real servers, started by real builds.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time

import pytest

from e2e_support import SERVER_ON, Mcpp, Result, mcpp_executable, serving_pid, write_tree

pytestmark = pytest.mark.one_mode  # turns the server on for its own builds

from mcpp.engine.server.registry import alive, wait_gone  # noqa: E402 - after the mode is set


def _package(root, name: str):
    return write_tree(root, {
        "mcpp.toml": f"""
            [package]
            name = "{name}"
            version = "0.1.0"
        """,
        "src/main.cpp": "int main() { return 0; }\n",
    })


def _mcpp(mcpp: Mcpp, *args: str, cwd, env: dict | None = None, unset: tuple[str, ...] = ()) -> Result:
    """`mcpp ARGS` with `env` over the suite's environment, less the variables in `unset`."""
    full = {**os.environ, "MCPP_HOME": str(mcpp.home), **(env or {})}
    for name in (*unset, "TERM"):
        full.pop(name, None)
    p = subprocess.run([mcpp_executable(), *args], cwd=cwd, env=full, capture_output=True, text=True, timeout=300)
    return Result(p.returncode, p.stdout, p.stderr)


def _listed(mcpp: Mcpp, cwd) -> list[dict]:
    res = mcpp("server", "list", "--format", "json", cwd=cwd)
    assert res.code == 0, res.err
    return [s for s in json.loads(res.out) if s["home"] == str(mcpp.home)]


def _exits(pid: int, seconds: float = 30) -> bool:
    return not wait_gone([pid], seconds)


@pytest.fixture
def workspaces(tmp_path, mcpp):
    """Make packages `a`, `b`, ... under tmp_path; every server of the home is stopped afterwards."""
    yield lambda *names: [_package(tmp_path / n, n) for n in names]
    mcpp("server", "stop", "--all", cwd=tmp_path)


def test_server_list_shows_each_server_with_its_pid_memory_and_idle_time(tmp_path, mcpp, workspaces):
    a, b = workspaces("a", "b")
    for root in (a, b):
        assert mcpp("build", cwd=root, env=SERVER_ON).code == 0
    pids = {root: serving_pid(mcpp.home, root) for root in (a, b)}
    first = {s["workspace"]: s for s in _listed(mcpp, tmp_path)}
    assert {w: s["pid"] for w, s in first.items()} == {str(a): pids[a], str(b): pids[b]}
    assert all(s["memory_kb"] > 1024 and s["idle_s"] >= 0 and s["running"] == 0 for s in first.values())
    time.sleep(1.5)
    # Asking is not using: the idle time goes on.
    again = {s["workspace"]: s for s in _listed(mcpp, tmp_path)}
    assert all(again[w]["idle_s"] >= first[w]["idle_s"] + 1 for w in first)

    table = mcpp("server", "list", cwd=tmp_path)
    assert table.code == 0, table.err
    head, *rows = table.out.splitlines()
    assert head.split() == ["WORKSPACE", "HOME", "PID", "MEMORY", "IDLE"]
    for root in (a, b):
        (row,) = [r.split() for r in rows if r.startswith(str(root) + " ")]
        assert row[1] == str(mcpp.home) and row[2] == str(pids[root]) and row[4] == "MiB"
        assert row[5].endswith("s") and int(row[5][:-1]) >= 1  # idle: `2s`
    assert re.fullmatch(r"\d+ servers, \d+\.\d MiB", rows[-1]), rows[-1]  # every server of this user


def test_server_stop_all_stops_every_server_of_this_home_and_no_other(tmp_path, mcpp, workspaces, tmp_path_factory):
    a, b = workspaces("a", "b")
    other = Mcpp(tmp_path_factory.mktemp("other-home"))
    c = _package(tmp_path / "c", "c")
    for cli, root in ((mcpp, a), (mcpp, b), (other, c)):
        assert cli("build", cwd=root, env=SERVER_ON).code == 0
    pids = [serving_pid(mcpp.home, a), serving_pid(mcpp.home, b)]
    kept = serving_pid(other.home, c)
    try:
        res = mcpp("server", "stop", "--all", cwd=tmp_path)  # no workspace needed
        assert res.code == 0 and res.out == "stopped 2 servers\n", res
        assert not any(alive(p) for p in pids), "a stopped server's process is still running"
        assert _listed(mcpp, tmp_path) == []
        assert mcpp("server", "stop", "--all", cwd=tmp_path).out == "stopped 0 servers\n"
        assert alive(kept), "--all stopped a server of another home"
    finally:
        other("server", "stop", "--all", cwd=tmp_path)
    assert _exits(kept, 10)


def test_the_least_recently_used_server_exits_beyond_max_servers(tmp_path, mcpp, workspaces):
    (mcpp.home / "config.toml").write_text("[server]\nmax-servers = 2\n")
    a, b, c = workspaces("a", "b", "c")
    assert mcpp("build", cwd=a, env=SERVER_ON).code == 0
    assert mcpp("build", cwd=b, env=SERVER_ON).code == 0
    time.sleep(0.2)
    assert mcpp("build", "-q", cwd=a, env={**SERVER_ON, "MCPP_NO_FAST_PATH": "1"}).code == 0  # a: used last
    pid = {root: serving_pid(mcpp.home, root) for root in (a, b)}
    assert mcpp("build", cwd=c, env=SERVER_ON).code == 0  # a third server of this home
    assert _exits(pid[b]), "the least recently used server did not exit"
    assert alive(pid[a]) and alive(serving_pid(mcpp.home, c))
    assert sorted(s["workspace"] for s in _listed(mcpp, tmp_path)) == [str(a), str(c)]
    log = (mcpp.home / "server").glob("*.log")
    assert any("stop requested (least recently used of more than 2)" in p.read_text() for p in log)


@pytest.mark.parametrize("gone", ["workspace", "home"])
def test_a_server_exits_within_seconds_when_its_workspace_or_home_is_removed(tmp_path, mcpp, workspaces, gone):
    (a,) = workspaces("a")
    assert mcpp("build", cwd=a, env=SERVER_ON).code == 0
    pid = serving_pid(mcpp.home, a)
    removed = a if gone == "workspace" else mcpp.home
    aside = removed.with_name(removed.name + ".removed")
    removed.rename(aside)  # at once: the server may still be writing there
    shutil.rmtree(aside, ignore_errors=True)
    assert _exits(pid, 20), f"a server outlived its {gone}"


@pytest.mark.parametrize("where", ["env", "config"])
def test_an_idle_server_exits_after_its_idle_timeout(tmp_path, mcpp, workspaces, where):
    (a,) = workspaces("a")
    if where == "config":
        (mcpp.home / "config.toml").write_text("[server]\nidle-timeout = 2\n")
        res = _mcpp(mcpp, "build", cwd=a, env={"MCPP_NO_SERVER": "0"}, unset=("MCPP_SERVER_IDLE",))
    else:
        (mcpp.home / "config.toml").write_text("[server]\nidle-timeout = 3600\n")  # the variable wins
        res = _mcpp(mcpp, "build", cwd=a, env={"MCPP_NO_SERVER": "0", "MCPP_SERVER_IDLE": "2"})
    assert res.code == 0, res.err
    pid = serving_pid(mcpp.home, a)
    started = time.monotonic()
    assert _exits(pid, 30), "an idle server outlived its idle timeout"
    assert time.monotonic() - started < 25
    assert "idle: exiting" in next((mcpp.home / "server").glob("*.log")).read_text()


def test_the_default_idle_timeout_is_15_minutes_and_the_cap_4(tmp_path, mcpp, workspaces):
    (a,) = workspaces("a")
    assert _mcpp(mcpp, "build", cwd=a, env={"MCPP_NO_SERVER": "0"}, unset=("MCPP_SERVER_IDLE",)).code == 0
    status = dict(line.split(": ", 1) for line in mcpp("server", "status", cwd=a).out.splitlines())
    assert float(status["idle_exit_s"]) == 15 * 60 and status["max_servers"] == "4"


@pytest.mark.parametrize("text, message", [
    ('idle-timeout = "soon"', "`server.idle-timeout` must be a positive number of seconds, not 'soon'"),
    ("idle-timeout = 0", "`server.idle-timeout` must be a positive number of seconds, not 0"),
    ("max-servers = 0", "`server.max-servers` must be a positive whole number, not 0"),
    ("max-server = 3", "unknown key `server.max-server`; accepted: idle-timeout, max-servers"),
])
def test_a_server_setting_that_cannot_be_used_is_said_and_the_build_runs_in_process(tmp_path, mcpp, workspaces,
                                                                                     text, message):
    (a,) = workspaces("a")
    config = mcpp.home / "config.toml"
    config.write_text(f"[server]\n{text}\n")
    res = _mcpp(mcpp, "build", cwd=a, env={"MCPP_NO_SERVER": "0"}, unset=("MCPP_SERVER_IDLE",))
    assert res.code == 0 and "Finished" in res.err
    assert res.diagnostics == f"warning: {config}: {message}; building in process\n"
    config.write_text("[server]\nidle-timeout = 60\n")  # fixed: the next server builds
    res = _mcpp(mcpp, "build", cwd=a, env={"MCPP_NO_SERVER": "0", "MCPP_NO_FAST_PATH": "1"},
                unset=("MCPP_SERVER_IDLE",))
    assert res.code == 0 and res.diagnostics == "", res.err


def test_a_bad_MCPP_SERVER_IDLE_is_said(tmp_path, mcpp, workspaces):
    (a,) = workspaces("a")
    res = _mcpp(mcpp, "build", cwd=a, env={"MCPP_NO_SERVER": "0", "MCPP_SERVER_IDLE": "15 minutes"})
    assert res.code == 0 and "Finished" in res.err
    assert res.diagnostics == ("warning: MCPP_SERVER_IDLE must be a positive number of seconds, not '15 minutes'; "
                       "building in process\n")
    res = _mcpp(mcpp, "build", cwd=a, env={"MCPP_NO_SERVER": "0", "MCPP_SERVER_IDLE": "60", "MCPP_NO_FAST_PATH": "1"})
    assert res.code == 0 and res.diagnostics == "", res.err  # a server of the build's own environment
