"""The remote cache end to end: the real `mcpp` CLI against a real BuildGrid server (REAPI v2).

Each test starts its own server (`bgd server start`, ~2 s) on a unix socket under a temporary
directory and stops it by pid; see tests/unit/remote/buildgrid_server.py.
"""
from __future__ import annotations

import collections
import hashlib
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from e2e_support import Mcpp, copy_example, mcpp_executable
from tests.unit.remote.buildgrid_server import BuildGridServer, bgd_executable

pytestmark = pytest.mark.skipif(bgd_executable() is None, reason="BuildGrid is not installed (pip install -e '.[test]')")


@pytest.fixture
def buildgrid():
    with BuildGridServer() as server:
        yield server


@pytest.fixture
def disk_buildgrid():
    with BuildGridServer("disk") as server:
        yield server


def header_project(project, n: int = 8, name: str = "hdr") -> Path:
    """Sources that include project headers: compile keys need the two-level (manifest) lookup."""
    files = {"mcpp.toml": f'[package]\nname = "{name}"\nversion = "0.1.0"\n[build]\ninclude_dirs = ["include"]\n',
             "include/hdr/core.hpp": "#pragma once\nnamespace hdr { inline int core(int x) { return x * 3; } }\n",
             "include/hdr/more.hpp": '#pragma once\n#include "hdr/core.hpp"\n'
                                     "namespace hdr { inline int more(int x) { return core(x) + 1; } }\n",
             "src/main.cpp": "#include <cstdio>\n" + "".join(f"int f{i}();\n" for i in range(n))
             + "int main() { int s = 0;\n" + "".join(f"s += f{i}();\n" for i in range(n))
             + 'std::printf("sum=%d\\n", s); }\n'}
    for i in range(n):
        header = "more" if i % 2 else "core"
        files[f"src/f{i}.cpp"] = f'#include "hdr/{header}.hpp"\nint f{i}() {{ return hdr::{header}({i}); }}\n'
    return project(files, name=name)


def clone(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("target", "compile_commands.json"))
    return dest


def statuses(res) -> collections.Counter:
    return collections.Counter(e["status"] for e in res.events if e.get("reason") == "action-finished")


def remote_warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("warning: remote cache at")]


def run(binary: Path) -> str:
    return subprocess.run([binary], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("kind", ["headers", "modules-and-path-deps"])
def test_a_fresh_checkout_elsewhere_is_built_entirely_from_the_remote_cache(kind, tmp_path, project, buildgrid):
    if kind == "headers":
        a, sub, binary, expected = header_project(project), ".", "target/dev/hdr", "sum=88\n"
    else:
        a, sub, binary, expected = copy_example("02-with-deps", tmp_path / "a"), "app", "app/target/dev/app", None
    ci = Mcpp(tmp_path / "ci-home")
    first = ci.build_json("build", "--remote", buildgrid.url, "--remote-upload", cwd=a / sub)
    assert statuses(first) == {"executed": len(first.executed())}
    # Another machine: another path (another depth), an empty $MCPP_HOME.
    b = clone(a, tmp_path / "laptop" / "work" / "b")
    laptop = Mcpp(tmp_path / "laptop-home")
    second = laptop.build_json("build", "--remote", buildgrid.url, cwd=b / sub)
    assert second.executed() == []  # no compiler, archiver or linker ran
    assert statuses(second) == {"remote": len(first.executed())}
    finished = [e for e in second.events if e["reason"] == "build-finished"][0]
    assert finished["remote"] == len(first.executed()) and finished["executed"] == 0
    assert f"({len(first.executed())} remote hits)" in second.err  # the Finished line (stderr in json mode)
    assert (b / binary).read_bytes() == (a / binary).read_bytes()
    assert run(b / binary) == run(a / binary)
    if expected:
        assert run(b / binary) == expected
    # The hits were recorded locally: the next build after rm -rf target is a local hit.
    shutil.rmtree(b / sub / "target")
    third = laptop.build_json("build", "--remote", buildgrid.url, cwd=b / sub)
    assert statuses(third) == {"cached": len(first.executed())}


def test_the_finished_line_counts_remote_hits_and_a_repeat_is_a_no_op(tmp_path, project, buildgrid):
    a = header_project(project, n=3)
    Mcpp(tmp_path / "ci")("build", "--remote-upload", cwd=a, env={"MCPP_REMOTE": buildgrid.url}, check=True)
    b = clone(a, tmp_path / "b")
    laptop = Mcpp(tmp_path / "laptop")
    res = laptop("build", cwd=b, env={"MCPP_REMOTE": buildgrid.url}, check=True)
    assert "Finished dev [unoptimized + debuginfo] in" in res.err and res.err.rstrip().endswith("(5 remote hits)")
    # The only remark: nothing was verified (no trusted keys; tests/e2e/test_remote_trust.py).
    assert res.diagnostics.startswith("note: results from remote cache at") and res.diagnostics.count("\n") == 1, res.err
    again = laptop("build", cwd=b, env={"MCPP_REMOTE": buildgrid.url}, check=True)
    assert "Finished dev" in again.err and "remote" not in again.err, again.err


def test_remote_settings_come_from_config_toml(tmp_path, project, buildgrid):
    a = header_project(project, n=2)
    ci = Mcpp(tmp_path / "ci")
    ci.home.mkdir(parents=True)
    (ci.home / "config.toml").write_text(f'[remote]\nurl = "{buildgrid.url}"\nupload = true\n')
    assert len(ci.build_json(cwd=a).executed()) == 4
    laptop = Mcpp(tmp_path / "laptop")
    laptop.home.mkdir(parents=True)
    (laptop.home / "config.toml").write_text(f'[remote]\nurl = "{buildgrid.url}"\n')
    b = clone(a, tmp_path / "b")
    assert statuses(laptop.build_json(cwd=b)) == {"remote": 4}
    # A bad URL is a usage error that names the way out.
    bad = ci("build", "--remote", "http://cache:80", cwd=a)
    assert bad.code == 2 and "expected grpc://HOST:PORT" in bad.err and "Traceback" not in bad.err


def test_an_unreachable_server_costs_one_warning_and_the_build_goes_on(tmp_path, project, mcpp):
    root = header_project(project, n=6)
    url = f"unix:{tmp_path}/no-server.sock"
    res = mcpp("build", "--remote", url, "--remote-upload", cwd=root)
    assert res.code == 0, res.err
    warnings = remote_warnings(res.err)
    assert len(warnings) == 1 and res.err.count("warning:") == 1, res.err
    assert warnings[0].startswith(f"warning: remote cache at {url} unavailable (UNAVAILABLE")
    assert warnings[0].endswith("; building locally")
    assert run(root / "target" / "dev" / "hdr") == "sum=48\n"


@pytest.mark.parametrize("how", ["killed", "hung"])
def test_a_server_that_stops_mid_build_costs_one_warning_and_the_build_completes_locally(how, tmp_path, project, buildgrid):
    a = header_project(project, n=40)
    Mcpp(tmp_path / "ci").build_json("build", "--remote", buildgrid.url, "--remote-upload", cwd=a)
    b = clone(a, tmp_path / "b")
    home = tmp_path / "laptop"
    home.mkdir()
    (home / "config.toml").write_text("[remote]\ntimeout = 2\n")  # a hung server counts as down after 2 s
    env = {**os.environ, "MCPP_HOME": str(home)}
    env.pop("TERM", None)
    proc = subprocess.Popen([mcpp_executable(), "build", "-j", "1", "--remote", buildgrid.url, "--message-format",
                             "json"], cwd=b, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    events, stopped = [], False
    try:
        for line in proc.stdout:
            events.append(json.loads(line))
            if events[-1].get("status") == "remote" and not stopped:
                # Freeze the build while the server goes away, so that "mid-build" does not
                # depend on how fast this test reads the build's output.
                stopped = True
                os.kill(proc.pid, signal.SIGSTOP)
                if how == "killed":
                    buildgrid.kill()
                else:
                    os.kill(buildgrid.proc.pid, signal.SIGSTOP)
                os.kill(proc.pid, signal.SIGCONT)
        err = proc.stderr.read()
        assert proc.wait(timeout=300) == 0, err
    finally:
        if how == "hung" and buildgrid.proc is not None:
            os.kill(buildgrid.proc.pid, signal.SIGCONT)
    counts = collections.Counter(e["status"] for e in events if e.get("reason") == "action-finished")
    assert counts["remote"] >= 1 and counts["executed"] >= 1
    assert counts["remote"] + counts["executed"] == 42
    warnings = remote_warnings(err)
    assert len(warnings) == 1, err
    assert ("DEADLINE_EXCEEDED" if how == "hung" else "unavailable (") in warnings[0]
    assert warnings[0].endswith("; building locally")
    assert (b / "target/dev/hdr").read_bytes() == (a / "target/dev/hdr").read_bytes()


def test_a_corrupted_blob_on_the_server_is_detected_and_the_action_runs_locally(tmp_path, project, disk_buildgrid):
    a = header_project(project, n=4)
    Mcpp(tmp_path / "ci").build_json("build", "--remote", disk_buildgrid.url, "--remote-upload", cwd=a)
    obj = next((a / "target").rglob("f1.cpp.o"))
    data = obj.read_bytes()
    # BuildGrid checks digests on upload, so the corruption happens where it does in life: in the
    # server's storage. Same size, other bytes.
    blob = disk_buildgrid.blob_path(hashlib.sha256(data).hexdigest())
    assert blob.exists()
    os.chmod(blob, 0o644)
    blob.write_bytes(bytes(b ^ 0xFF for b in data))

    b = clone(a, tmp_path / "b")
    # every output comes down (the default leaves objects on the server: test_remote_download.py)
    res = Mcpp(tmp_path / "laptop").build_json("build", "--remote", disk_buildgrid.url, "--remote-download", "all",
                                               cwd=b)
    assert res.executed() == ["compile hdr:src/f1.cpp"]
    assert statuses(res) == {"remote": 5, "executed": 1}  # the link still hits: same object bytes
    warnings = remote_warnings(res.err)
    assert len(warnings) == 1 and "corrupt blob for `compile hdr:src/f1.cpp`" in warnings[0]
    assert next((b / "target").rglob("f1.cpp.o")).read_bytes() == data
    assert run(b / "target/dev/hdr") == run(a / "target/dev/hdr")


def test_a_corrupted_blob_left_on_the_server_is_refused_when_fetched_and_remade(tmp_path, project, disk_buildgrid):
    """`--remote-download minimal` leaves f1's object on the server; when an edit of f2 relinks,
    its fetched bytes fail their digest check: one warning, f1 compiled here, the link right."""
    a = header_project(project, n=4)
    Mcpp(tmp_path / "ci").build_json("build", "--remote", disk_buildgrid.url, "--remote-upload", cwd=a)
    data = next((a / "target").rglob("f1.cpp.o")).read_bytes()
    b = clone(a, tmp_path / "b")
    laptop = Mcpp(tmp_path / "laptop")
    res = laptop.build_json("build", "--remote", disk_buildgrid.url, "--remote-download", "minimal", cwd=b)
    assert statuses(res) == {"remote": 6} and not list((b / "target").rglob("*.o"))
    blob = disk_buildgrid.blob_path(hashlib.sha256(data).hexdigest())
    os.chmod(blob, 0o644)
    blob.write_bytes(bytes(x ^ 0xFF for x in data))
    (b / "src/f2.cpp").write_text((b / "src/f2.cpp").read_text().replace("(2)", "(20)"))
    res = laptop.build_json("build", "--remote", disk_buildgrid.url, "--remote-download", "minimal", cwd=b)
    assert sorted(res.executed()) == ["compile hdr:src/f2.cpp", "link hdr:hdr"], res.executed()
    warnings = remote_warnings(res.err)
    assert len(warnings) == 1 and "sent a corrupt blob" in warnings[0] and "runs locally" in warnings[0]
    assert next((b / "target").rglob("f1.cpp.o")).read_bytes() == data  # made here, the honest bytes
    (a / "src/f2.cpp").write_text((b / "src/f2.cpp").read_text())
    Mcpp(tmp_path / "ci").build_json("build", cwd=a)
    assert run(b / "target/dev/hdr") == run(a / "target/dev/hdr")


def test_a_changed_header_is_a_remote_miss_not_a_wrong_hit(tmp_path, project, buildgrid):
    a = header_project(project, n=4)
    Mcpp(tmp_path / "ci").build_json("build", "--remote", buildgrid.url, "--remote-upload", cwd=a)
    b = clone(a, tmp_path / "b")
    (b / "include/hdr/core.hpp").write_text("#pragma once\nnamespace hdr { inline int core(int x) { return x * 5; } }\n")
    res = Mcpp(tmp_path / "laptop").build_json("build", "--remote", buildgrid.url, cwd=b)
    # Every source includes core.hpp (directly or through more.hpp): all compiles and the link run.
    assert sorted(res.executed()) == sorted([f"compile hdr:src/f{i}.cpp" for i in range(4)] + ["link hdr:hdr"])
    assert statuses(res)["remote"] == 1  # main.cpp includes no project header
    assert run(b / "target/dev/hdr") == "sum=32\n"
