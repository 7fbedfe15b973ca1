"""A tree output through the remote cache: uploaded as an REAPI `OutputDirectory` whose Tree
names the server's digests, and restored whole on another machine (another path, another
$MCPP_HOME), where the action that reads it is a remote hit too."""
from __future__ import annotations

import collections
import shutil

import pytest

from tests.e2e.e2e_support import Mcpp
from tests.e2e.test_tree_outputs import EXPECTED, MANIFEST, PROGRAM, tree_of
from tests.unit.remote.buildgrid_server import BuildGridServer, bgd_executable

pytestmark = pytest.mark.skipif(bgd_executable() is None, reason="BuildGrid is not installed (pip install -e '.[test]')")


@pytest.mark.parametrize("kind", ["memory", "disk"])
def test_a_tree_output_travels_through_the_remote_cache(tmp_path, project, kind):
    a = project({"mcpp.toml": MANIFEST, "src/main.cpp": "int main() { return 0; }\n",
                 "pages.txt": "one\n", "build.star": PROGRAM.format(extra="")})
    with BuildGridServer(*(() if kind == "memory" else ("disk",))) as server:
        first = Mcpp(tmp_path / "ci-home").build_json("build", "--remote", server.url, "--remote-upload", cwd=a)
        assert first.code == 0, first.err
        b = tmp_path / "laptop" / "b"
        shutil.copytree(a, b, ignore=shutil.ignore_patterns("target", "compile_commands.json"))
        # every output comes down: the test reads the tree (an intermediate output)
        second = Mcpp(tmp_path / "laptop-home").build_json("build", "--remote", server.url, "--remote-download", "all",
                                                           cwd=b)
    assert second.code == 0, second.err
    status = {e["id"]: e["status"] for e in second.events if e.get("reason") == "action-finished"}
    assert status["rule p:docs"] == "remote" and status["rule p:count"] == "remote", status
    assert "warning" not in second.err, second.err
    gen = b / "target" / "dev" / ".mcpp" / "gen" / "p"
    assert tree_of(gen / "docs") == EXPECTED
    assert (gen / "count.txt").read_text() == "one\ntwo\n"
    assert collections.Counter(status.values())["executed"] == 0


@pytest.mark.heavy
def test_a_signed_tree_output_whose_tree_digest_was_altered_is_refused(tmp_path, project, mcpp):
    """The signature covers each output directory's Tree digest: whoever can write to the server
    swaps the signed result's Tree for one naming other bytes, keeping the CI signature; a client
    that trusts the CI key refuses it and builds the tree itself (docs/remote.md)."""
    from mcpp.cas.remote import protocol as pb
    from mcpp.cas.remote import tree_codec
    from mcpp.cas.remote.client import RemoteClient
    from mcpp.cas.remote.digests import RemoteDigest

    (tmp_path / "keys").mkdir()
    ci_public = mcpp("cache", "keygen", "ci", cwd=tmp_path / "keys", check=True).out.strip()
    signed = {"MCPP_REMOTE_SIGN_KEY": str(tmp_path / "keys" / "ci.secret")}
    trusting = {"MCPP_REMOTE_TRUSTED_KEYS": ci_public}
    a = project({"mcpp.toml": MANIFEST, "src/main.cpp": "int main() { return 0; }\n",
                 "pages.txt": "one\n", "build.star": PROGRAM.format(extra="")})

    def build(home: str, src, *args: str, env: dict):
        res = Mcpp(tmp_path / home)("build", "--remote", server.url, "--remote-download", "all", *args,
                                    "--message-format", "json",
                                    cwd=src, env=env)
        assert res.code == 0, f"{res.out}\n{res.err}"
        return res, {e["id"]: e for e in res.events if e.get("reason") == "action-finished"}

    def checkout(name: str):
        dest = tmp_path / name / "src"
        shutil.copytree(a, dest, ignore=shutil.ignore_patterns("target", "compile_commands.json"))
        return dest

    with BuildGridServer() as server:
        build("ci-home", a, "--remote-upload", env=signed)
        # The attacker learns the action key as any client does (here: from an honest, trusting fetch).
        _, finished = build("scout-home", checkout("scout"), env=trusting)
        assert finished["rule p:docs"]["origin"]["signed-by"] == ci_public
        h, size = finished["rule p:docs"]["origin"]["action"].split("/")
        key = RemoteDigest(h, int(size))

        client = RemoteClient(server.url, timeout=10)
        client.connect()
        try:
            honest = client.get_action_result(key)
            assert len(honest.output_directories) == 1
            tree_digest = RemoteDigest.from_wire(honest.output_directories[0].tree_digest, client.digest_function)
            tree = pb.Tree.FromString(client.download([tree_digest])[tree_digest])
            forged_blob = client.digest_function.of_bytes(b"forged\n")
            a_txt = next(f for f in tree.root.files if f.name == "a.txt")
            a_txt.digest.CopyFrom(forged_blob.to_proto())
            forged_tree = tree_codec.encode(tree)
            forged_digest = client.digest_function.of_bytes(forged_tree)
            client.upload({forged_blob: b"forged\n", forged_digest: forged_tree})
            forged = pb.ActionResult.FromString(honest.SerializeToString())  # keeps the CI signature
            forged.output_directories[0].tree_digest.CopyFrom(forged_digest.to_proto())
            client.update_action_result(key, forged)
        finally:
            client.close()

        # The attack is real: a client that trusts no key restores the forged tree.
        g = checkout("gullible")
        _, finished = build("gullible-home", g, env={})
        assert finished["rule p:docs"]["status"] == "remote"
        assert (g / "target/dev/.mcpp/gen/p/docs/a.txt").read_text() == "forged\n"
        # A client that trusts the CI key refuses it, says why once, and builds the tree here.
        v = checkout("victim")
        res, finished = build("victim-home", v, env=trusting)
    assert [line for line in res.err.splitlines() if line.startswith("warning:")] == [
        f"warning: refused the result of `rule p:docs` from remote cache at {server.url} "
        "(signature does not match); the action runs locally"], res.err
    assert finished["rule p:docs"]["status"] == "executed"
    assert tree_of(v / "target/dev/.mcpp/gen/p/docs") == EXPECTED
    assert (v / "target/dev/.mcpp/gen/p/count.txt").read_text() == "one\ntwo\n"
