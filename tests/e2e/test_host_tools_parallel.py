"""The host tools a build is missing are built at the same time, not one after another.

Each tool's package has a check action that announces itself in a shared directory and then
waits for the other tool's announcement: built one after the other, the first build waits in vain
and fails; built at the same time, both meet and the app builds. (`--sandbox off`, so that the
two actions can see one directory outside their packages.)"""
from __future__ import annotations

import shutil

import pytest

from tests.e2e.e2e_support import Mcpp

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


def _tool(name: str, other: str) -> dict:
    return {
        f"{name}/mcpp.toml": f"""
            [package]
            name = "{name}"
            version = "0.1.0"
            [targets.{name}]
            kind = "bin"
            main = "src/main.cpp"
        """,
        f"{name}/src/main.cpp": "int main() { return 0; }\n",
        f"{name}/build.star": f"""
            meet = mcpp.rerun_if_env_changed("MEET_DIR")
            stamp = mcpp.out_dir() + "/met"
            script = "touch $1/{name}; i=0; while [ ! -e $1/{other} ]; do i=$((i+1)); [ $i -gt 150 ] && exit 1; sleep 0.1; done; touch $2"
            mcpp.action(id = "meet", argv = ["/bin/sh", "-c", script, "sh", meet, stamp], inputs = [],
                        outputs = [stamp], tools = ["/bin/sh", "/usr/bin/touch", "/bin/sleep"], role = "check")
        """,
    }


def test_two_missing_host_tools_are_built_at_the_same_time(project, mcpp: Mcpp, tmp_path):
    meet = tmp_path / "meet"
    meet.mkdir()
    root = project({
        **_tool("gen-a", "gen-b"),
        **_tool("gen-b", "gen-a"),
        "app/mcpp.toml": """
            [package]
            name = "app"
            version = "0.1.0"
            [dependencies]
            gen-a = { path = "../gen-a", tools = ["gen-a"] }
            gen-b = { path = "../gen-b", tools = ["gen-b"] }
        """,
        "app/src/main.cpp": "int main() { return 0; }\n",
    })
    res = mcpp("build", "--sandbox", "off", cwd=root / "app", env={"MEET_DIR": str(meet)})
    assert res.code == 0, res.err
    assert "Building host tool gen-a:gen-a" in res.err and "Building host tool gen-b:gen-b" in res.err
    assert sorted(p.name for p in meet.iterdir()) == ["gen-a", "gen-b"]
