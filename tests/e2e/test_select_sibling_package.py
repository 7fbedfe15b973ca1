"""`-p NAME` names any package of the workspace, from its root or from inside a member; without
`-p`, a command run inside a member builds that member alone (as Cargo does)."""
from __future__ import annotations

import json

WORKSPACE = {
    "mcpp.toml": '[workspace]\nmembers = ["apps/a", "apps/b"]\n',
    "apps/a/mcpp.toml": '[package]\nname = "a"\nversion = "0.1.0"\n',
    "apps/a/src/main.cpp": '#include <cstdio>\nint main() { std::puts("I am a"); }\n',
    "apps/b/mcpp.toml": '[package]\nname = "b"\nversion = "0.1.0"\n',
    "apps/b/src/main.cpp": '#include <cstdio>\nint main() { std::puts("I am b"); }\n',
    "apps/b/tests/check.cpp": "int main() { return 0; }\n",
}


def test_p_selects_a_sibling_from_inside_a_member(project, mcpp):
    root = project(WORKSPACE)
    inside_a = root / "apps" / "a"
    res = mcpp("run", "-p", "b", cwd=inside_a)
    assert res.code == 0, res.err
    assert res.out == "I am b\n"
    assert "Compiling b v0.1.0" in res.err and "Compiling a" not in res.err
    assert (root / "target" / "dev" / "b").is_file()  # the workspace's target/, as from its root
    assert mcpp("-q", "run", cwd=inside_a).out == "I am a\n"  # without -p: the member it is run in
    test = mcpp("test", "-p", "b", cwd=inside_a)
    assert test.code == 0 and "check ... ok" in test.out, test.out + test.err
    meta = json.loads(mcpp("metadata", "--format", "json", "-p", "b", cwd=inside_a, check=True).out)
    assert meta["members"] == ["b"]
    (root / "target" / "dev" / "a").unlink()
    both = mcpp("build", "-p", "a", "-p", "b", cwd=root / "apps" / "b")
    assert both.code == 0 and (root / "target" / "dev" / "a").is_file(), both.err


def test_an_unknown_package_names_the_workspaces_packages(project, mcpp):
    root = project(WORKSPACE)
    res = mcpp("build", "-p", "c", cwd=root / "apps" / "a")
    assert res.code == 2
    assert "error: package `c` is not part of this build; packages: a, b" in res.err
