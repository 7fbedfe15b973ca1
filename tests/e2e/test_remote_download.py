"""Build without the bytes (`--remote-download all|toplevel|minimal`), end to end: the real
`mcpp` CLI, a real BuildGrid 0.4.4 (SHA-256 only, so dependents are keyed on the blake3
digests the signed results carry) and the counting proxy of tests/e2e/remote_proxy.py, which
also plays a server that evicted a blob.

CI builds once with `--remote-upload` and a signing key; each test reads from a fresh home
that trusts only that key.
"""
from __future__ import annotations

import collections
import hashlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from e2e_support import Mcpp
from remote_proxy import FaultProxy
from tests.unit.remote.buildgrid_server import BuildGridServer, bgd_executable

pytestmark = pytest.mark.skipif(bgd_executable() is None, reason="BuildGrid is not installed (pip install -e '.[test]')")

DOCS = Path(__file__).resolve().parents[2] / "docs" / "remote.md"
UNITS = 8


def documented_config() -> str:
    text = DOCS.read_text()
    block = re.search(r"```yaml\n# buildgrid.yml\n(.*?)```", text, re.S).group(1)
    return re.sub(r'address: "[^"]*".*', 'address: "{address}"', block, count=1)


def project(root: Path) -> Path:
    """Units that each instantiate the same standard containers: fat objects, as in life, whose
    duplicated code the linker folds into one binary."""
    files = {"mcpp.toml": '[package]\nname = "app"\nversion = "0.1.0"\n',
             "src/main.cpp": "#include <cstdio>\n" + "".join(f"int f{i}();\n" for i in range(UNITS))
             + "int main() { int s = 0;\n" + "".join(f"s += f{i}();\n" for i in range(UNITS))
             + 'std::printf("%d\\n", s); }\n'}
    for i in range(UNITS):
        files[f"src/f{i}.cpp"] = ("#include <map>\n#include <string>\n#include <vector>\n"
                                  f"int f{i}() {{ std::map<std::string, std::vector<int>> m; m[\"k\"].push_back({i});"
                                  " return int(m.size() + m[\"k\"].back()); }\n")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


EXPECTED = str(UNITS + sum(range(UNITS))) + "\n"


def statuses(res) -> collections.Counter:
    return collections.Counter(e["status"] for e in res.events if e.get("reason") == "action-finished")


def summary(res) -> dict:
    return [e for e in res.events if e.get("reason") == "build-finished"][0]["remote_cache"]


@pytest.fixture(scope="module")
def cached(tmp_path_factory):
    """BuildGrid, a proxy in front of it, CI's key and a project CI built and uploaded, signed."""
    tmp = tmp_path_factory.mktemp("download")
    with BuildGridServer(config=documented_config()) as server, FaultProxy(server.target) as proxy:
        keys = tmp / "keys"
        keys.mkdir()
        public = Mcpp(tmp / "keyhome")("cache", "keygen", "ci", cwd=keys, check=True).out.strip()
        ci_dir = project(tmp / "ci")
        ci = Mcpp(tmp / "cihome")("build", "--remote", proxy.url, "--remote-upload", "--message-format", "json",
                                   cwd=ci_dir, check=True, env={"MCPP_REMOTE_SIGN_KEY": str(keys / "ci.secret")})
        assert statuses(ci) == {"executed": UNITS + 2}
        binary = ci_dir / "target" / "dev" / "app"
        objects = {p.name: p for p in (ci_dir / "target" / "dev" / ".mcpp").rglob("*.o")}
        assert len(objects) == UNITS + 1
        yield {"tmp": tmp, "proxy": proxy, "public": public, "ci": ci_dir, "binary": binary, "objects": objects}


def reader(cached, name: str) -> tuple[Mcpp, Path, dict]:
    """A fresh checkout and an empty home that trusts only CI's key."""
    tmp = cached["tmp"]
    checkout = tmp / name
    shutil.copytree(cached["ci"], checkout, ignore=shutil.ignore_patterns("target"))
    return Mcpp(tmp / f"{name}-home"), checkout, {"MCPP_REMOTE_TRUSTED_KEYS": cached["public"]}


def build(m: Mcpp, checkout: Path, env: dict, proxy: FaultProxy, *args: str, command: str = "build"):
    proxy.reset()
    return m(command, "--remote", proxy.url, "--message-format", "json", *args, cwd=checkout, check=True, env=env)


def test_toplevel_downloads_the_binary_and_no_intermediate_object(cached):
    proxy = cached["proxy"]
    m, checkout, env = reader(cached, "toplevel")
    res = build(m, checkout, env, proxy)  # toplevel is the default
    assert statuses(res) == {"remote": UNITS + 2}
    app = checkout / "target" / "dev" / "app"
    assert app.read_bytes() == cached["binary"].read_bytes()
    assert subprocess.run([str(app)], capture_output=True, text=True).stdout == EXPECTED
    assert not list((checkout / "target").rglob("*.o"))
    size = cached["binary"].stat().st_size
    got = summary(res)
    assert got["kept_remote"] > UNITS and got["download"] == "toplevel"  # objects, depfiles
    assert got["bytes_down"] == proxy.bytes_down and size <= proxy.bytes_down < size * 11 // 10  # and the header manifests
    assert "warning" not in res.err, res.err


def test_minimal_receives_bytes_within_twice_the_binary_and_run_fetches_it(cached):
    proxy = cached["proxy"]
    size = cached["binary"].stat().st_size
    # what `all` costs: every object and the binary
    m, checkout, env = reader(cached, "all")
    assert statuses(build(m, checkout, env, proxy, "--remote-download", "all")) == {"remote": UNITS + 2}
    everything = proxy.bytes_down
    assert len(list((checkout / "target").rglob("*.o"))) == UNITS + 1
    assert everything > 2 * size

    m, checkout, env = reader(cached, "minimal")
    res = build(m, checkout, env, proxy, "--remote-download", "minimal")
    assert statuses(res) == {"remote": UNITS + 2}
    assert proxy.bytes_down <= 2 * size, (proxy.bytes_down, size)
    assert summary(res)["kept_remote"] > UNITS + 1
    assert not (checkout / "target" / "dev" / "app").exists()
    assert not list((checkout / "target").rglob("*.o"))

    # a no-op build stays minimal; `mcpp run` fetches what it runs (and only that)
    again = build(m, checkout, env, proxy, "--remote-download", "minimal")
    assert proxy.bytes_down == 0 and set(statuses(again)) <= {"fresh", "cached"}
    proxy.reset()
    ran = m("run", "--remote", proxy.url, "--remote-download", "minimal", cwd=checkout, check=True, env=env)
    assert ran.out == EXPECTED
    assert size <= proxy.bytes_down < size * 11 // 10  # and the header manifests
    assert not list((checkout / "target").rglob("*.o"))


def test_an_edit_in_a_minimal_build_rebuilds_its_unit_and_relinks_from_fetched_objects(cached):
    proxy = cached["proxy"]
    m, checkout, env = reader(cached, "edit")
    build(m, checkout, env, proxy, "--remote-download", "minimal")
    src = checkout / "src" / "f3.cpp"
    src.write_text(src.read_text().replace("push_back(3)", "push_back(103)"))
    res = build(m, checkout, env, proxy, "--remote-download", "minimal")
    executed = sorted(e["id"] for e in res.events if e.get("status") == "executed")
    assert len(executed) == 2 and executed[0].startswith("compile") and "f3.cpp" in executed[0] \
        and executed[1].startswith("link"), executed
    got = summary(res)
    assert got["fetched_later"] == UNITS  # the other objects the link reads, main.o among them
    objects = cached["objects"]
    want = sum(p.stat().st_size for n, p in objects.items() if "f3" not in n)
    assert want <= proxy.bytes_down < want * 11 // 10
    app = checkout / "target" / "dev" / "app"
    assert subprocess.run([str(app)], capture_output=True, text=True).stdout == str(int(EXPECTED) + 100) + "\n"


def test_an_evicted_object_is_rebuilt_and_an_evicted_binary_relinked(cached):
    """The server lost one object (the proxy answers NOT_FOUND for it) after a minimal build
    took its result: the link that needs it compiles it here again, and the build succeeds.
    A reader whose remote binary is gone links it here from fetched objects."""
    proxy = cached["proxy"]
    objects = cached["objects"]
    f2 = next(p for n, p in objects.items() if "f2" in n)
    m, checkout, env = reader(cached, "evicted")
    build(m, checkout, env, proxy, "--remote-download", "minimal")
    src = checkout / "src" / "f5.cpp"
    src.write_text(src.read_text().replace("push_back(5)", "push_back(105)"))
    proxy.evicted = {hashlib.sha256(f2.read_bytes()).hexdigest()}
    try:
        res = build(m, checkout, env, proxy, "--remote-download", "minimal")
        assert "warning" not in res.err, res.err
        app = checkout / "target" / "dev" / "app"
        assert subprocess.run([str(app)], capture_output=True, text=True).stdout == str(int(EXPECTED) + 100) + "\n"
        assert summary(res)["fetched_later"] == UNITS - 1  # every object but f2's (rebuilt) and f5's (edited)

        proxy.evicted = {hashlib.sha256(cached["binary"].read_bytes()).hexdigest()}
        m2, fresh, env2 = reader(cached, "evicted-binary")
        res = build(m2, fresh, env2, proxy)
        assert statuses(res) == {"remote": UNITS + 1, "executed": 1}
        assert (fresh / "target" / "dev" / "app").read_bytes() == cached["binary"].read_bytes()
    finally:
        proxy.evicted = set()


def test_mcpp_test_under_minimal_fetches_the_test_binaries_it_runs_and_no_object(cached):
    proxy = cached["proxy"]
    tmp = cached["tmp"]
    src = tmp / "tested"
    files = {"mcpp.toml": '[package]\nname = "tested"\nversion = "0.1.0"\n',
             "src/lib.cpp": "int answer() { return 42; }\n",
             "tests/answer.cpp": "int answer();\nint main() { return answer() == 42 ? 0 : 1; }\n"}
    for rel, text in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    Mcpp(tmp / "tested-ci")("test", "--remote", proxy.url, "--remote-upload", cwd=src, check=True)
    fresh = tmp / "tested-laptop"
    shutil.copytree(src, fresh, ignore=shutil.ignore_patterns("target"))
    proxy.reset()
    res = Mcpp(tmp / "tested-laptop-home")("test", "--remote", proxy.url, "--remote-download", "minimal",
                                           "--message-format", "json", cwd=fresh, check=True)
    assert set(statuses(res)) == {"remote"}, statuses(res)
    summary_ = [e for e in res.events if e.get("reason") == "test-summary"]
    assert summary_ and summary_[0]["passed"] == 1 and summary_[0]["failed"] == 0, res.out
    assert not list((fresh / "target").rglob("*.o"))
    assert list((fresh / "target").rglob("answer")), "the test binary it ran is in target/"
