"""Hermetic actions through the real CLI: undeclared inputs fail, outputs do not depend on the
checkout's path, `--sandbox off` still works and says it is not hermetic."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from conftest import Mcpp, copy_example


def undeclared_header_project(project, tmp_path):
    outside = tmp_path / "outside-include"
    outside.mkdir()
    (outside / "secret.hpp").write_text("#pragma once\ninline int secret() { return 7; }\n")
    return project({
        "mcpp.toml": f'[package]\nname = "leaky"\nversion = "0.1.0"\n[build]\ncxxflags = ["-I{outside}"]\n',
        "src/main.cpp": '#include "secret.hpp"\nint main() { return secret() == 7 ? 0 : 1; }\n',
    }), outside / "secret.hpp"


@pytest.mark.parametrize("mode", ["bwrap", "dir"])
def test_an_undeclared_header_through_an_absolute_include_path_fails(project, tmp_path, mcpp, mode):
    root, header = undeclared_header_project(project, tmp_path)
    res = mcpp("build", "--sandbox", mode, cwd=root)
    assert res.code == 1, res.out + res.err
    assert "secret.hpp" in res.err
    if mode == "dir":
        assert f"error: action compile leaky:src/main.cpp read undeclared input {header}" in res.err
    else:
        assert "secret.hpp: No such file or directory" in res.err


def test_sandbox_off_builds_it_and_says_it_is_not_hermetic(project, tmp_path, mcpp):
    root, _ = undeclared_header_project(project, tmp_path)
    res = mcpp("build", "--sandbox", "off", cwd=root)
    assert res.code == 0, res.err
    assert "warning: --sandbox off: actions run directly in the project directory" in res.err
    assert "not hermetic" in res.err


@pytest.mark.parametrize("mode", ["bwrap", "dir", "off"])
def test_two_checkouts_give_byte_identical_objects_and_binaries(tmp_path, tmp_path_factory, mode):
    trees = []
    for where in ("first/checkout", "second/much/deeper/checkout"):
        root = copy_example("02-with-deps", tmp_path / where)
        # A separate store for each, so nothing is shared through the cache.
        Mcpp(tmp_path_factory.mktemp("home"))("build", "--sandbox", mode, cwd=root / "app", check=True)
        trees.append(root / "app" / "target" / "dev")
    # gcc 12 writes its working directory into module CMIs: only under bwrap (always /execroot)
    # are the CMIs themselves identical too.
    suffixes = (".o", ".a", "") + ((".gcm",) if mode == "bwrap" else ())
    files = sorted(p.relative_to(trees[0]) for p in trees[0].rglob("*")
                   if p.is_file() and p.suffix in suffixes and ".mcpp" not in p.parts)
    assert any(p.suffix == ".o" for p in files) and (trees[0] / "app").is_file()
    for rel in files:
        assert (trees[0] / rel).read_bytes() == (trees[1] / rel).read_bytes(), f"{rel} differs"


def test_actions_see_only_their_declared_environment(project, mcpp):
    root = project({"mcpp.toml": '[package]\nname = "envy"\nversion = "0.1.0"\n',
                    "src/main.cpp": "#ifdef LEAK\n#error leaked\n#endif\nint main() {}\n"})
    # CPATH would add an include path and CXXFLAGS-like variables must not reach the compiler.
    res = mcpp("build", cwd=root, env={"CPATH": "/nonexistent", "GCC_EXEC_PREFIX": "/nonexistent/"})
    assert res.code == 0, res.err
