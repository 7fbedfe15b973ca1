"""Index packages and the remote cache: their sources are read from `target/registry/` of the
workspace, never from `$MCPP_HOME`, so another machine (another home, another checkout path)
computes the same action keys and every result of the first machine is a hit."""
from __future__ import annotations

import shutil

import pytest

from e2e_support import Mcpp
from library_index_support import IndexServer, LibraryIndex, consumer, index_env
from tests.unit.remote.buildgrid_server import BuildGridServer, bgd_executable

pytestmark = pytest.mark.skipif(bgd_executable() is None, reason="BuildGrid is not installed (pip install -e '.[test]')")


def test_an_index_package_s_results_are_remote_hits_from_a_second_home(tmp_path):
    index = LibraryIndex.standard(tmp_path / "index")
    with IndexServer(index.root) as server, BuildGridServer() as grid:
        env = index_env(server.url)
        a = consumer(tmp_path / "a" / "app", 'greet = "1"\nextra.calc = "1"\n')
        ci = Mcpp(tmp_path / "ci-home")
        first = ci("build", "--remote", grid.url, "--remote-upload", "--message-format", "json", cwd=a, env=env,
                   check=True)
        ran = first.executed()
        assert any("greet" in i for i in ran) and any("shout" in i for i in ran)
        # A second machine: the project at another path and depth, an empty home of another name.
        b = shutil.copytree(a, tmp_path / "laptop" / "work" / "b" / "app",
                            ignore=shutil.ignore_patterns("target"))
        laptop = Mcpp(tmp_path / "laptop" / "h2")
        second = laptop("build", "--remote", grid.url, "--message-format", "json", cwd=b, env=env, check=True)
        assert second.executed() == []
        hits = [e["id"] for e in second.events if e.get("reason") == "action-finished" and e["status"] == "remote"]
        assert sorted(hits) == sorted(ran)
        assert (laptop.home / "registry" / "mcpplibs" / "greet" / "1.1.0").is_dir()  # fetched, verified, not rebuilt
