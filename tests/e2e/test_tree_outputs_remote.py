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
        second = Mcpp(tmp_path / "laptop-home").build_json("build", "--remote", server.url, cwd=b)
    assert second.code == 0, second.err
    status = {e["id"]: e["status"] for e in second.events if e.get("reason") == "action-finished"}
    assert status["rule p:docs"] == "remote" and status["rule p:count"] == "remote", status
    assert "warning" not in second.err, second.err
    gen = b / "target" / "dev" / "gen" / "p"
    assert tree_of(gen / "docs") == EXPECTED
    assert (gen / "count.txt").read_text() == "one\ntwo\n"
    assert collections.Counter(status.values())["executed"] == 0
