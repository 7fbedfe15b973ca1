"""Every example builds and runs and prints what it should (from a copy, so the tree stays clean)."""
from __future__ import annotations

from e2e_support import copy_example


def test_01_hello_runs_and_forwards_args(mcpp, tmp_path):
    root = copy_example("01-hello", tmp_path)
    res = mcpp("run", cwd=root)
    assert res.code == 0, res.err
    assert "Hello, world!" in res.out
    assert "   Compiling hello v0.1.0 (.)" in res.err
    assert "    Finished dev [unoptimized + debuginfo] in " in res.err
    res = mcpp("run", "--", "mcpp", cwd=root)
    assert "Hello, mcpp!" in res.out


def test_02_with_deps_imports_a_named_module_from_a_path_dependency(mcpp, tmp_path):
    root = copy_example("02-with-deps", tmp_path) / "app"
    res = mcpp("run", cwd=root)
    assert res.code == 0, res.err
    assert "Hello from the greet module!\nanswer = 42" in res.out
    assert "Compiling greet v0.2.0" in res.err and "Compiling app v0.1.0 (.)" in res.err
    assert (root / "target" / "dev" / "app").is_file()
    assert (root / "target" / "compile_commands.json").is_file()


def test_04_workspace_builds_all_members_from_the_root_and_one_from_a_member(mcpp, tmp_path):
    root = copy_example("04-workspace", tmp_path)
    res = mcpp("run", cwd=root)
    assert res.code == 0, res.err
    assert "area = 9.0\nperimeter = 12.0 m" in res.out
    for name in ("units v0.1.0", "shapes v0.3.0", "geometry v1.0.0"):
        assert f"Compiling {name}" in res.err
    # From inside a member the workspace's target/ is used, so nothing is rebuilt.
    res = mcpp("build", "--message-format", "json", cwd=root / "libs" / "shapes")
    assert res.code == 0, res.err
    assert res.executed() == []
    assert not (root / "libs" / "shapes" / "target").exists()
