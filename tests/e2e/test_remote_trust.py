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
    outputs = dict(line.split() for line in out.split("outputs:\n", 1)[1].splitlines() if line.startswith("  "))
    assert len(outputs["target/dev/trusty"].split("/")[0]) == 64, out  # the binary (and the link's depfile)
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
        assert honest is not None  # the binary and the link's depfile
        binary = [f.path for f in honest.output_files].index("target/dev/trusty")
        forged_blob = client.digest_function.of_bytes(FORGED_PROGRAM)
        client.upload({forged_blob: FORGED_PROGRAM})
        if forgery == "altered-digest":
            forged = pb.ActionResult.FromString(honest.SerializeToString())  # keeps the CI signature
            forged.output_files[binary].digest.CopyFrom(forged_blob.to_proto())
        else:
            forged = pb.ActionResult(exit_code=0)
            for i, f in enumerate(honest.output_files):
                forged.output_files.add(path=f.path, digest=forged_blob.to_proto() if i == binary else f.digest,
                                        is_executable=f.is_executable)
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


# --- the channel: TLS, mutual TLS, bearer tokens ---------------------------------------------------

def _certificates(d: Path) -> dict[str, Path]:
    """A test CA, a server certificate for localhost/127.0.0.1 and a client certificate, as PEM files."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    d.mkdir()

    def issue(subject: str, key, issuer=None, issuer_key=None, ca=False, san=None):
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
        b = (x509.CertificateBuilder().subject_name(name)
             .issuer_name(issuer.subject if issuer else name).public_key(key.public_key())
             .serial_number(x509.random_serial_number())
             .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
             .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if san:
            b = b.add_extension(x509.SubjectAlternativeName(san), critical=False)
        return b.sign(issuer_key or key, hashes.SHA256())

    def write(name: str, cert, key) -> None:
        (d / f"{name}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        (d / f"{name}.key").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                          serialization.NoEncryption()))

    for prefix in ("", "other-"):
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca = issue(f"{prefix}test CA", ca_key, ca=True)
        write(f"{prefix}ca", ca, ca_key)
        if prefix:
            continue
        server_key = ec.generate_private_key(ec.SECP256R1())
        write("server", issue("localhost", server_key, ca, ca_key, san=[
            x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), server_key)
        client_key = ec.generate_private_key(ec.SECP256R1())
        write("client", issue("ci-runner", client_key, ca, ca_key), client_key)
    return {p.stem.replace(".", "-") + p.suffix: p for p in d.iterdir()}


def _home(tmp_path: Path, name: str, remote: str) -> Mcpp:
    m = Mcpp(tmp_path / name)
    m.home.mkdir()
    (m.home / "config.toml").write_text("[remote]\ntimeout = 10\n" + remote)
    return m


def test_tls_with_a_test_ca_and_mutual_tls(tmp_path, project):
    from mcpp.cas.remote.config import ChannelSecurity

    certs = _certificates(tmp_path / "pki")
    ca, cert, key = certs["ca.pem"], certs["client.pem"], certs["client.key"]
    probe = ChannelSecurity(tls=True, ca=ca.read_bytes(), cert=cert.read_bytes(), key=key.read_bytes())
    with BuildGridServer(tls={"key": certs["server.key"], "cert": certs["server.pem"], "client-ca": ca},
                         ready_security=probe) as server:
        mtls = f'url = "{server.url}"\ntls-ca = "{ca}"\ntls-cert = "{cert}"\ntls-key = "{key}"\n'
        a = trusty_project(project)
        res, finished = build(_home(tmp_path, "ci", mtls + "upload = true\n"), a)
        assert {e["status"] for e in finished.values()} == {"executed"} and warnings(res.err) == []
        b = clone(a, tmp_path / "b")
        res, finished = build(_home(tmp_path, "laptop", mtls), b)
        assert {e["status"] for e in finished.values()} == {"remote"} and len(finished) == 3
        assert (b / "target/dev/trusty").read_bytes() == (a / "target/dev/trusty").read_bytes()
        # The wrong CA, or no client certificate where the server demands one: one warning each,
        # and the build goes on locally.
        for name, remote, says in [
            ("wrong-ca", f'url = "{server.url}"\ntls-ca = "{certs["other-ca.pem"]}"\ntls-cert = "{cert}"\n'
                         f'tls-key = "{key}"\n', "not signed by a trusted CA"),
            ("no-client-cert", f'url = "{server.url}"\ntls-ca = "{ca}"\n', "unavailable"),
        ]:
            c = clone(a, tmp_path / name)
            res, finished = build(_home(tmp_path, f"{name}-home", remote), c)
            assert {e["status"] for e in finished.values()} == {"executed"}, res.err
            assert len(warnings(res.err)) == 1 and says in res.err and "building locally" in res.err, res.err
            assert run(c / "target/dev/trusty") == "honest\n"


READ = ["GetCapabilities", "GetActionResult", "FindMissingBlobs", "BatchReadBlobs", "Read"]


def test_bearer_tokens_one_reads_one_also_writes(tmp_path, project):
    import time

    import jwt

    from mcpp.cas.remote.config import ChannelSecurity

    secret = "test-secret-of-at-least-32-bytes!!"
    (tmp_path / "jwt.secret").write_text(secret)
    (tmp_path / "acl.yml").write_text(
        "'':\n  allow:\n    - subject: '^ci$'\n    - subject: '^dev$'\n      requests: [" + ", ".join(READ) + "]\n")
    tokens = {}
    for who in ("ci", "dev"):
        tokens[who] = jwt.encode({"sub": who, "exp": int(time.time()) + 3600}, secret, algorithm="HS256")
        (tmp_path / f"{who}.token").write_text(tokens[who] + "\n")
    probe = ChannelSecurity(token=tokens["ci"])
    with BuildGridServer(jwt=(tmp_path / "jwt.secret", tmp_path / "acl.yml"), ready_security=probe) as server:
        a = trusty_project(project)
        ci = _home(tmp_path, "ci", f'url = "{server.url}"\nupload = true\ntoken-file = "{tmp_path / "ci.token"}"\n')
        res, finished = build(ci, a)
        assert {e["status"] for e in finished.values()} == {"executed"} and warnings(res.err) == []
        # The read-only token reads; its upload is refused by the server, said once, build green.
        dev = Mcpp(tmp_path / "dev-home")
        b = clone(a, tmp_path / "b")
        env = {"MCPP_REMOTE": server.url, "MCPP_REMOTE_TOKEN_FILE": str(tmp_path / "dev.token")}
        res, finished = build(dev, b, env=env)
        assert {e["status"] for e in finished.values()} == {"remote"}
        (b / "src" / "msg.cpp").write_text('#include "trusty/msg.hpp"\nconst char *message() { return "edited"; }\n')
        res, finished = build(dev, b, "--remote-upload", env=env)
        refused = [w for w in warnings(res.err) if "refused an upload" in w]
        assert len(refused) == 1 and "UNAUTHENTICATED" in refused[0], res.err
        assert run(b / "target/dev/trusty") == "edited\n"
        # No token at all: one clear warning, a local build.
        c = clone(a, tmp_path / "c")
        res, finished = build(Mcpp(tmp_path / "anon-home"), c, env={"MCPP_REMOTE": server.url})
        assert {e["status"] for e in finished.values()} == {"executed"}
        assert warnings(res.err) == [w for w in warnings(res.err) if "token-file" in w] and len(warnings(res.err)) == 1
        for out in (res.out, res.err, ci("explain", LINK, cwd=a).out):
            assert tokens["ci"] not in out and tokens["dev"] not in out
        # A token is never sent in plain text over the network.
        bad = dev("build", cwd=c, env={"MCPP_REMOTE": "grpc://cache.example.com:50051",
                                        "MCPP_REMOTE_TOKEN_FILE": str(tmp_path / "dev.token")})
        assert bad.code == 2 and "a token is sent only over TLS" in bad.err and tokens["dev"] not in bad.err
