"""A remote cache you can trust: signed results, refused forgeries, visible origins.

The real `mcpp` CLI against a real BuildGrid server (see tests/e2e/test_remote.py). The attacker
here is anyone who can write to the server: the tests forge results with plain REAPI calls
(`UpdateActionResult` plus a blob upload), exactly what a shared or compromised server allows.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from e2e_support import Mcpp
from tests.unit.remote.buildgrid_server import BuildGridServer, bgd_executable

pytestmark = pytest.mark.skipif(bgd_executable() is None, reason="BuildGrid is not installed (pip install -e '.[test]')")

FORGED_PROGRAM = b"#!/bin/sh\necho forged\n"
LINK = "link trusty:trusty"


@pytest.fixture
def buildgrid():
    with BuildGridServer() as server:
        yield server


@pytest.fixture
def keys(tmp_path, mcpp):
    """`mcpp cache keygen` for the CI key and for a key nobody trusts."""
    d = tmp_path / "keys"
    d.mkdir()
    out = {}
    for name in ("ci", "mallory"):
        res = mcpp("cache", "keygen", name, cwd=d, check=True)
        out[name] = (d / f"{name}.secret", res.out.strip())
    return out


def trusty_project(project) -> Path:
    """A header (so compiles use the two-level lookup, whose manifests are signed too) and a link."""
    return project({
        "mcpp.toml": '[package]\nname = "trusty"\nversion = "0.1.0"\n[build]\ninclude_dirs = ["include"]\n',
        "include/trusty/msg.hpp": "#pragma once\nconst char *message();\n",
        "src/msg.cpp": '#include "trusty/msg.hpp"\nconst char *message() { return "honest"; }\n',
        "src/main.cpp": '#include <cstdio>\n#include "trusty/msg.hpp"\nint main() { std::puts(message()); }\n',
    }, name="trusty")


def clone(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("target", "compile_commands.json"))
    return dest


def build(m: Mcpp, cwd: Path, *args: str, env: dict | None = None):
    res = m("build", *args, "--message-format", "json", cwd=cwd, env=env)
    assert res.code == 0, f"{res.out}\n{res.err}"
    finished = {e["id"]: e for e in res.events if e.get("reason") == "action-finished"}
    return res, finished


def run(binary: Path) -> str:
    return subprocess.run([binary], capture_output=True, text=True, check=True).stdout


def warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith(("warning:", "note:"))]


def ci_upload(tmp_path, project, buildgrid, keys) -> Path:
    """The CI machine: builds, signs with the CI key, uploads."""
    a = trusty_project(project)
    ci = Mcpp(tmp_path / "ci-home")
    res, finished = build(ci, a, "--remote", buildgrid.url, "--remote-upload",
                          env={"MCPP_REMOTE_SIGN_KEY": str(keys["ci"][0])})
    assert {e["status"] for e in finished.values()} == {"executed"} and len(finished) == 3
    assert all(e["origin"] == {"kind": "executed"} for e in finished.values())
    assert warnings(res.err) == []
    return a


def test_keygen_writes_a_private_secret_and_prints_the_public_key(tmp_path, keys, mcpp):
    secret, public = keys["ci"]
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert public.startswith("ci:") and len(public) == len("ci:") + 44
    assert (secret.parent / "ci.public").read_text().strip() == public
    assert secret.read_text().startswith("ci:") and public not in secret.read_text()
    again = mcpp("cache", "keygen", "ci", cwd=secret.parent)
    assert again.code == 2 and "already exists" in again.err and "Traceback" not in again.err


def test_a_trusting_fresh_checkout_builds_from_signed_results_only(tmp_path, project, buildgrid, keys):
    a = ci_upload(tmp_path, project, buildgrid, keys)
    ci_public = keys["ci"][1]
    b = clone(a, tmp_path / "laptop" / "src" / "b")
    laptop = Mcpp(tmp_path / "laptop-home")
    laptop.home.mkdir()
    (laptop.home / "config.toml").write_text(f'[remote]\nurl = "{buildgrid.url}"\ntrusted-keys = ["{ci_public}"]\n')
    res, finished = build(laptop, b)
    assert {e["status"] for e in finished.values()} == {"remote"}, res.out  # no compile, no link ran
    assert warnings(res.err) == []
    for e in finished.values():
        assert e["origin"]["kind"] == "remote-cache" and e["origin"]["server"] == buildgrid.url
        assert e["origin"]["signed-by"] == ci_public
    assert (b / "target/dev/trusty").read_bytes() == (a / "target/dev/trusty").read_bytes()
    assert run(b / "target/dev/trusty") == "honest\n"
    # `explain` names the origin (server and key) and every output's digest.
    out = laptop("explain", LINK, cwd=b, check=True).out
    assert f"origin: remote cache {buildgrid.url} (action " in out and f"signed by {ci_public}" in out
    path, digest = out.split("outputs:\n", 1)[1].splitlines()[0].split()
    assert path.endswith("trusty") and len(digest.split("/")[0]) == 64, out
    # Without trusted keys the same results are used, with one note that nothing was verified.
    c = clone(a, tmp_path / "other" / "c")
    res, finished = build(Mcpp(tmp_path / "other-home"), c, "--remote", buildgrid.url)
    assert {e["status"] for e in finished.values()} == {"remote"}
    assert [e["origin"]["signed-by"] for e in finished.values()] == [None, None, None]
    assert len(warnings(res.err)) == 1 and warnings(res.err)[0].startswith(
        f"note: results from remote cache at {buildgrid.url} are not verified"), res.err


@pytest.mark.parametrize("forgery,reason", [
    ("unsigned", "unsigned"),
    ("other-key", "signed by an untrusted key"),
    ("altered-digest", "signature does not match"),
])
def test_a_forged_result_is_refused_and_the_action_runs_locally(forgery, reason, tmp_path, project, buildgrid, keys):
    from mcpp.cas.remote import protocol as pb
    from mcpp.cas.remote import signing
    from mcpp.cas.remote.client import RemoteClient
    from mcpp.cas.remote.digests import RemoteDigest

    a = ci_upload(tmp_path, project, buildgrid, keys)
    ci_public = keys["ci"][1]
    trusting = {"MCPP_REMOTE_TRUSTED_KEYS": ci_public}
    # The attacker learns the link action's key as any client does (here: from an honest fetch).
    scout_dir = clone(a, tmp_path / "scout")
    _, finished = build(Mcpp(tmp_path / "scout-home"), scout_dir, "--remote", buildgrid.url, env=trusting)
    h, size = finished[LINK]["origin"]["action"].split("/")
    link_key = RemoteDigest(h, int(size))

    client = RemoteClient(buildgrid.url, timeout=10)
    client.connect()
    try:
        honest = client.get_action_result(link_key)
        assert honest is not None and len(honest.output_files) == 1
        forged_blob = client.digest_function.of_bytes(FORGED_PROGRAM)
        client.upload({forged_blob: FORGED_PROGRAM})
        if forgery == "altered-digest":
            forged = pb.ActionResult.FromString(honest.SerializeToString())  # keeps the CI signature
            forged.output_files[0].digest.CopyFrom(forged_blob.to_proto())
        else:
            forged = pb.ActionResult(exit_code=0)
            forged.output_files.add(path=honest.output_files[0].path, digest=forged_blob.to_proto(), is_executable=True)
            if forgery == "other-key":
                signing.sign(forged, link_key, signing.load_secret_key(keys["mallory"][0]))
        client.update_action_result(link_key, forged)
    finally:
        client.close()

    # The attack is real: a client that trusts no key runs the forged program.
    gullible_home = tmp_path / "gullible-home"
    gullible = Mcpp(gullible_home)
    g = clone(a, tmp_path / "gullible")
    res, finished = build(gullible, g, "--remote", buildgrid.url)
    assert finished[LINK]["status"] == "remote" and run(g / "target/dev/trusty") == "forged\n"

    # A client that trusts the CI key refuses it, says why once, and links locally.
    victim = Mcpp(tmp_path / "victim-home")
    v = clone(a, tmp_path / "victim")
    res, finished = build(victim, v, "--remote", buildgrid.url, env=trusting)
    assert warnings(res.err) == [f"warning: refused the result of `{LINK}` from remote cache at {buildgrid.url} "
                                 f"({reason}); the action runs locally"], res.err
    assert finished[LINK]["status"] == "executed" and finished[LINK]["origin"] == {"kind": "executed"}
    assert {e["status"] for i, e in finished.items() if i != LINK} == {"remote"}
    assert run(v / "target/dev/trusty") == "honest\n"
    # The local action cache holds the honest result: a local-only build restores it.
    shutil.rmtree(v / "target")
    res, finished = build(victim, v)
    assert finished[LINK]["status"] == "cached" and finished[LINK]["origin"] == {"kind": "local-cache"}
    assert run(v / "target/dev/trusty") == "honest\n"
    assert "origin: local cache (built on this machine)" in victim("explain", LINK, cwd=v, check=True).out

    # The gullible machine's local cache holds the forged result, labelled as unverified; once it
    # trusts the CI key, that entry no longer counts (the local cache does not launder it).
    out = gullible("explain", LINK, cwd=g, check=True).out
    assert "unverified (no signature checked)" in out
    shutil.rmtree(g / "target")
    res, finished = build(gullible, g, "--remote", buildgrid.url, env=trusting)
    assert finished[LINK]["status"] == "executed", res.out
    assert run(g / "target/dev/trusty") == "honest\n"


def test_bad_key_settings_are_usage_errors(tmp_path, project, buildgrid, mcpp):
    a = trusty_project(project)
    bad = mcpp("build", "--remote", buildgrid.url, cwd=a, env={"MCPP_REMOTE_TRUSTED_KEYS": "ci:not-base64"})
    assert bad.code == 2 and "MCPP_REMOTE_TRUSTED_KEYS: invalid public key" in bad.err and "Traceback" not in bad.err
    missing = mcpp("build", "--remote", buildgrid.url, "--remote-upload", cwd=a,
                   env={"MCPP_REMOTE_SIGN_KEY": str(tmp_path / "nope.secret")})
    assert missing.code == 2 and "cannot read signing key" in missing.err and "Traceback" not in missing.err
    public = tmp_path / "k.public"
    public.write_text(json.dumps("x"))
    wrong = mcpp("build", "--remote", buildgrid.url, cwd=a, env={"MCPP_REMOTE_SIGN_KEY": str(public)})
    assert wrong.code == 2 and "is not a secret key" in wrong.err
    assert os.path.exists(a)  # nothing was built
