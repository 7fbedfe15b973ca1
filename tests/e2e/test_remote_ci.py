"""The remote cache at CI scale, end to end: the real `mcpp` CLI, a real BuildGrid 0.4.4 started
from the configuration docs/remote.md documents, and a fault-injecting gRPC proxy in between
(tests/e2e/remote_proxy.py) that refuses a fraction of calls and counts what it forwards.

One BuildGrid serves the whole module (each test uses its own project, so its own keys).
"""
from __future__ import annotations

import collections
import re
import shutil
from pathlib import Path

import grpc
import pytest

from e2e_support import Mcpp
from remote_proxy import FaultProxy
from tests.unit.remote.buildgrid_server import BuildGridServer, bgd_executable

pytestmark = pytest.mark.skipif(bgd_executable() is None, reason="BuildGrid is not installed (pip install -e '.[test]')")

DOCS = Path(__file__).resolve().parents[2] / "docs" / "remote.md"


def documented_config() -> str:
    """The buildgrid.yml of docs/remote.md's quick start, its address left to the test."""
    text = DOCS.read_text()
    block = re.search(r"```yaml\n# buildgrid.yml\n(.*?)```", text, re.S).group(1)
    return re.sub(r'address: "[^"]*".*', 'address: "{address}"', block, count=1)


@pytest.fixture(scope="module")
def buildgrid():
    with BuildGridServer(config=documented_config()) as server:
        yield server


def unit_project(root: Path, n: int, name: str) -> Path:
    """`n` sources that include a project header, and a binary that calls them all."""
    files = {"mcpp.toml": f'[package]\nname = "{name}"\nversion = "0.1.0"\n[build]\ninclude_dirs = ["include"]\n',
             "include/u.hpp": "#pragma once\ninline int twice(int x) { return 2 * x; }\n",
             "src/main.cpp": "#include <cstdio>\n" + "".join(f"int f{i}();\n" for i in range(n))
             + "int main() { int s = 0;\n" + "".join(f"s += f{i}();\n" for i in range(n))
             + 'std::printf("%d\\n", s); }\n'}
    for i in range(n):
        files[f"src/f{i}.cpp"] = f'#include "u.hpp"\nint f{i}() {{ return twice({i}); }}\n'
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def statuses(res) -> collections.Counter:
    return collections.Counter(e["status"] for e in res.events if e.get("reason") == "action-finished")


def summary(res) -> dict:
    return [e for e in res.events if e.get("reason") == "build-finished"][0]["remote_cache"]


def test_a_server_refusing_30_percent_of_calls_is_retried_through(tmp_path, buildgrid):
    """UNAVAILABLE on 3 calls in 10, both ways: the writer uploads everything, the reader (fresh
    home, -j8, the documented server config) gets every action from the remote, and the only
    trace of the faults is the retry count; the counts match what the proxy forwarded."""
    a = unit_project(tmp_path / "a", 24, "flaky")
    # Each request refused at most twice: with calls interleaved at random (-j8, a loaded machine),
    # one call met a refusal six times running now and then, which is the per-call limit (5
    # retries) doing its job (the next test), not a server that fails a third of its calls.
    with FaultProxy(buildgrid.target, fail=0.3, refusals_per_request=2) as proxy:
        ci = Mcpp(tmp_path / "ci").build_json("build", "-j", "8", "--remote", proxy.url, "--remote-upload", cwd=a)
        assert statuses(ci) == {"executed": 26}
        up = summary(ci)
        # said whole when it fails: once (a loaded machine, server mode) 25 uploads of 26 were counted
        assert up["uploads"] == 26 == proxy.ac_updates, (up, proxy.ac_updates, dict(proxy.failed), ci.err)
        assert up["bytes_up"] == proxy.bytes_up > 0
        assert up["retries"] == sum(proxy.failed.values()) > 0
        assert up["retried_codes"] == {"UNAVAILABLE": up["retries"]}  # only the proxy's refusals
        assert up["disabled"] is None
        assert "warning" not in ci.err, ci.err

        proxy.reset()
        b = tmp_path / "b"
        shutil.copytree(a, b, ignore=shutil.ignore_patterns("target"))
        res = Mcpp(tmp_path / "laptop")("build", "-j", "8", "--remote", proxy.url, "--message-format", "json",
                                        cwd=b, check=True)
        assert statuses(res) == {"remote": 26}
        got = summary(res)
        assert got["hits"] == 26 == proxy.ac_hits and got["uploads"] == 0
        assert got["bytes_down"] == proxy.bytes_down > 0
        assert got["retries"] == sum(proxy.failed.values()) > 0 and got["disabled"] is None
        # no warning: one note (results unverified: no trusted keys), and the counts on the Remote line
        assert "warning" not in res.err, res.err
        assert re.search(rf"Remote {re.escape(proxy.url)}: 26 hits, 0 misses, 0 uploads, [0-9.]+ KiB down, "
                         rf"0 B up, {got['retries']} retries, {got['kept_remote']} outputs left remote\n", res.err), res.err


def test_a_server_that_keeps_refusing_is_given_up_once_with_the_count(tmp_path, buildgrid):
    a = unit_project(tmp_path / "a", 3, "down")
    with FaultProxy(buildgrid.target, fail=1.0, code=grpc.StatusCode.RESOURCE_EXHAUSTED) as proxy:
        res = Mcpp(tmp_path / "h")("build", "--remote", proxy.url, "--remote-retries", "2",
                                   "--message-format", "json", cwd=a, check=True)
    assert statuses(res) == {"executed": 5}
    warnings = [line for line in res.err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, res.err
    assert "unavailable (RESOURCE_EXHAUSTED: injected by the test proxy; a call failed 3 times; 2 retries this " \
           "build)" in warnings[0] and warnings[0].endswith("building locally")
    got = summary(res)
    assert got["retries"] == 2 and got["disabled"].startswith("RESOURCE_EXHAUSTED")
    assert sum(proxy.failed.values()) == 3  # one call, tried three times; nothing after


def test_refused_results_are_counted_with_the_key_names_they_claimed(tmp_path, buildgrid):
    keys = tmp_path / "keys"
    keys.mkdir()
    tool = Mcpp(tmp_path / "keyhome")
    public = {name: tool("cache", "keygen", name, cwd=keys, check=True).out.strip() for name in ("ci", "mallory")}
    a = unit_project(tmp_path / "a", 3, "refused")
    with FaultProxy(buildgrid.target) as proxy:
        Mcpp(tmp_path / "w")("build", "--remote", proxy.url, "--remote-upload", cwd=a, check=True,
                             env={"MCPP_REMOTE_SIGN_KEY": str(keys / "mallory.secret")})
        b = tmp_path / "b"
        shutil.copytree(a, b, ignore=shutil.ignore_patterns("target"))
        res = Mcpp(tmp_path / "r")("build", "--remote", proxy.url, "--message-format", "json", cwd=b, check=True,
                                   env={"MCPP_REMOTE_TRUSTED_KEYS": public["ci"]})
    got = summary(res)
    # four compiles (their header manifests) and the link, each signed by mallory: all refused
    assert statuses(res) == {"executed": 5}
    assert got["hits"] == 0 and got["refused"] == {"count": 5, "reasons": {"signed by an untrusted key": 5},
                                                   "keys": ["mallory"]}
    assert "5 refused: 5 signed by an untrusted key (claimed keys: mallory)" in res.err, res.err


def test_an_uploading_build_republishes_local_hits_to_a_server_that_lost_them(tmp_path, buildgrid):
    a = unit_project(tmp_path / "a", 3, "republish")
    writer = Mcpp(tmp_path / "ci")
    first = writer.build_json("build", "--remote", buildgrid.url, "--remote-upload", cwd=a)
    assert summary(first)["uploads"] == 5
    buildgrid.stop()  # BuildGrid keeps its action cache in memory: restarted, it is empty
    buildgrid.start()
    shutil.rmtree(a / "target")
    again = writer.build_json("build", "--remote", buildgrid.url, "--remote-upload", cwd=a)
    assert statuses(again) == {"cached": 5}
    assert summary(again)["uploads"] == summary(again)["republished"] == 5
    shutil.rmtree(a / "target")
    third = writer.build_json("build", "--remote", buildgrid.url, "--remote-upload", cwd=a)
    assert statuses(third) == {"cached": 5} and summary(third)["uploads"] == 0  # the server has them all
    b = tmp_path / "b"
    shutil.copytree(a, b, ignore=shutil.ignore_patterns("target"))
    assert statuses(Mcpp(tmp_path / "reader").build_json("build", "--remote", buildgrid.url, cwd=b)) == {"remote": 5}


def test_headers_the_credential_helper_and_the_instance_name_reach_the_server(tmp_path, buildgrid):
    import sys

    helper = tmp_path / "helper"
    helper.write_text(f"#!{sys.executable}\nimport json, sys\nassert sys.argv[1:] == ['--scope', 'cache', 'get']\n"
                      f"asked = json.load(sys.stdin)\nopen({str(tmp_path / 'asked')!r}, 'w').write(asked['uri'])\n"
                      'print(json.dumps({"headers": {"x-cred": ["s3cret-token"]}, "expires": "2099-01-01T00:00:00Z"}))\n')
    helper.chmod(0o755)
    a = unit_project(tmp_path / "a", 2, "knobs")
    with FaultProxy(buildgrid.target) as proxy:
        m = Mcpp(tmp_path / "h")
        m.home.mkdir()
        (m.home / "config.toml").write_text(f'[remote]\nurl = "{proxy.url}"\ncredential-helper = "{helper} --scope cache"\n'
                                            'headers = { x-team = "core", x-ci-run = "config" }\n')
        res = m("build", "-v", "--remote-upload", "--remote-header", "x-ci-run=42", "--remote-header", "X-Extra=a=b",
                cwd=a, check=True)
        assert (tmp_path / "asked").read_text() == proxy.url
        sent = dict(proxy.metadata)
        assert (sent["x-cred"], sent["x-team"], sent["x-ci-run"], sent["x-extra"]) == ("s3cret-token", "core", "42", "a=b")
        assert "s3cret" not in res.out + res.err and "x-cred" not in res.out + res.err
        assert "4 uploads" in res.err and "warning" not in res.err, res.err
        proxy.reset()
        shutil.rmtree(a / "target")  # local hits, offered for republishing: the remote is asked
        named = m("build", "--remote-upload", "--remote-instance-name", "ci-instance", cwd=a, check=True)
        assert proxy.instances == {"ci-instance"}, named.err
    # a helper that fails: one warning naming it and how, never its output; the build goes on
    helper.write_text(f"#!{sys.executable}\nimport sys\nprint('s3cret-token')\nsys.exit(3)\n")
    shutil.rmtree(a / "target")
    res = m("build", "--remote-upload", cwd=a, check=True)
    assert f"credential helper `{helper}` exited with 3" in res.err and "s3cret" not in res.err, res.err
    bad = m("build", "--remote-header", "grpc-timeout=1", cwd=a)
    assert bad.code == 2 and "not a header name" in bad.err and "Traceback" not in bad.err
    assert "grpcs://HOST:PORT" in m("build", "--help", cwd=a).out


def test_lookups_overlap_beyond_j_over_a_slow_link(tmp_path, buildgrid):
    """200 ms added to every call: with -j1 the lookups still run `--remote-jobs` (32) at a time,
    so a fully cached build costs a few round trips, not three per action."""
    import time

    a = unit_project(tmp_path / "a", 30, "slowlink")
    Mcpp(tmp_path / "ci")("build", "--remote", buildgrid.url, "--remote-upload", cwd=a, check=True)
    b = tmp_path / "b"
    shutil.copytree(a, b, ignore=shutil.ignore_patterns("target"))
    with FaultProxy(buildgrid.target, delay=0.2) as proxy:
        t0 = time.monotonic()
        res = Mcpp(tmp_path / "laptop")("build", "-j", "1", "--remote", proxy.url, "--message-format", "json",
                                        cwd=b, check=True)
        took = time.monotonic() - t0
    assert statuses(res) == {"remote": 32}
    assert proxy.most_in_flight["/build.bazel.remote.execution.v2.ActionCache/GetActionResult"] >= 16
    assert took < 32 * 0.2, took  # one call per action, one after another, would take longer


def test_blobs_travel_zstd_compressed_where_the_server_offers_it(tmp_path, buildgrid):
    """BuildGrid 0.4.4 offers no compression (every other test here: plain, no error); the proxy
    offers zstd in Capabilities and translates, so the client's compressed path runs for real."""
    from mcpp.cas.remote.client import RemoteClient
    from mcpp.cas.remote.digests import SHA256

    a = unit_project(tmp_path / "a", 6, "packed")
    b = tmp_path / "b"
    shutil.copytree(a, b, ignore=shutil.ignore_patterns("target"))
    c = tmp_path / "c"
    shutil.copytree(a, c, ignore=shutil.ignore_patterns("target"))
    with FaultProxy(buildgrid.target, zstd=True) as packed:
        up = summary(Mcpp(tmp_path / "ci").build_json("build", "--remote", packed.url, "--remote-upload", cwd=a))
        assert up["uploads"] == 8 and up["bytes_up"] == packed.bytes_up > 0
        packed.reset()
        got = Mcpp(tmp_path / "r1").build_json("build", "--remote", packed.url, cwd=b)
        assert statuses(got) == {"remote": 8} and summary(got)["bytes_down"] == packed.bytes_down
        # a blob past the batch limit goes through ByteStream, compressed both ways
        client = RemoteClient(f"127.0.0.1:{packed.port}", timeout=30)
        client.connect()
        data = b"compressible " * (400 << 10)
        d = SHA256.of_bytes(data)
        client.upload({d: data})
        assert client.download([d])[d] == data
        assert client.zstd and client.wire.bytes_up < len(data) // 20 and client.wire.bytes_down < len(data) // 20
        client.close()
    with FaultProxy(buildgrid.target) as plain:
        unpacked = summary(Mcpp(tmp_path / "r2").build_json("build", "--remote", plain.url, cwd=c))
    assert summary(got)["bytes_down"] * 2 < unpacked["bytes_down"]
    assert (b / "target/dev/packed").read_bytes() == (c / "target/dev/packed").read_bytes()
