"""A file that exists on this machine but is not among an action's inputs: the sandbox hides it and
the tool says "No such file or directory". The failed build adds one `help:` line naming the file
and the key that would declare it; applying the hint makes the build pass."""
from __future__ import annotations

import shutil

import pytest

from tests.e2e.e2e_support import write_tree

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

MANIFEST = '[package]\nname = "app"\nversion = "0.1.0"\n'


def _main(include: str) -> str:
    return f'#include "{include}"\nint main() {{ return VALUE - 7; }}\n'


def help_lines(res) -> list[str]:
    return [line for line in res.err.splitlines() if line.startswith("help: ")]


def test_a_header_beside_the_sources_is_named_with_the_include_dirs_that_declare_it(project, mcpp):
    root = project({"mcpp.toml": MANIFEST, "config/app.h": "#define VALUE 7\n",
                    "src/main.cpp": _main("../config/app.h")})
    res = mcpp("build", "--sandbox", "bwrap", cwd=root)
    assert res.code == 1 and "No such file or directory" in res.err, res.err
    assert help_lines(res) == [
        "help: `../config/app.h` exists here as `config/app.h`, but it is not an input of "
        "`compile app:src/main.cpp`, and an action sees only its inputs: a compile sees its package's headers "
        "under `src/` and its include directories; add `include_dirs = [\"config\"]` under [build] of `app` "
        "(or of one target)"]
    # the hint is right: with the key it names, the same source builds
    (root / "mcpp.toml").write_text(MANIFEST + '[build]\ninclude_dirs = ["config"]\n')
    res = mcpp("build", "--sandbox", "bwrap", cwd=root)
    assert res.code == 0 and "help:" not in res.err, res.err


def test_clang_words_and_a_name_relative_to_the_package_root(project, mcpp):
    if shutil.which("clang++") is None and shutil.which("clang++-19") is None:
        pytest.skip("needs clang")
    root = project({"mcpp.toml": MANIFEST, "config/app.h": "#define VALUE 7\n",
                    "src/main.cpp": _main("config/app.h")})
    res = mcpp("build", "--toolchain", "clang", cwd=root)
    assert res.code == 1 and "'config/app.h' file not found" in res.err, res.err
    [line] = help_lines(res)
    assert line.startswith("help: `config/app.h` exists here, but it is not an input of `compile app:src/main.cpp`")
    assert line.endswith('add `include_dirs = ["."]` under [build] of `app` (or of one target)')
    (root / "mcpp.toml").write_text(MANIFEST + '[build]\ninclude_dirs = ["."]\n')
    assert mcpp("build", "--toolchain", "clang", cwd=root).code == 0


def test_a_header_of_a_package_outside_the_build_names_that_package(project, mcpp):
    root = project({"app/mcpp.toml": MANIFEST, "app/src/main.cpp": _main("../../util/src/value.h"),
                    "util/mcpp.toml": '[package]\nname = "util"\nversion = "0.1.0"\n',
                    "util/src/value.h": "#define VALUE 7\n", "util/src/value.cpp": "int value() { return 7; }\n"})
    res = mcpp("build", cwd=root / "app")
    assert res.code == 1, res.err
    [line] = help_lines(res)
    assert "it lies in the package at `" in line and "which is not among this build's packages" in line, line
    assert "`../../util/src/value.h` exists here as `" in line and "util/src/value.h`" in line


def test_an_absolute_file_outside_the_packages_points_at_payloads(project, mcpp, tmp_path):
    outside = write_tree(tmp_path / "elsewhere", {"value.h": "#define VALUE 7\n"}) / "value.h"
    root = project({"mcpp.toml": MANIFEST, "src/main.cpp": _main(str(outside))})
    res = mcpp("build", "--sandbox", "bwrap", cwd=root)
    assert res.code == 1, res.err
    assert help_lines(res) == [
        f"help: `{outside}` exists here, but it is not an input of `compile app:src/main.cpp`, and an action "
        f"sees only its inputs: a file outside the packages reaches a build as a payload (`[xlings]`, "
        f"docs/payloads.md)"]


def test_a_build_program_action_reading_an_undeclared_file_names_its_inputs(project, mcpp):
    root = project({
        "mcpp.toml": MANIFEST, "data.txt": "42\n", "src/main.cpp": "int main() { return 0; }\n",
        "build.star": ('mcpp.action(id = "copy", argv = ["/bin/cp", "data.txt", mcpp.out_dir() + "/data.txt"],\n'
                       '            inputs = [], outputs = [mcpp.out_dir() + "/data.txt"], role = "check")\n'),
    })
    res = mcpp("build", "--sandbox", "bwrap", cwd=root)
    assert res.code == 1 and "No such file or directory" in res.err, res.err
    [line] = help_lines(res)
    assert line.startswith("help: `data.txt` exists here, but it is not an input of `rule app:copy`"), line
    assert line.endswith("list it in `inputs` of the `mcpp.action(...)` that declares it (docs/rules.md)")
    (root / "build.star").write_text((root / "build.star").read_text().replace("inputs = []", 'inputs = ["data.txt"]'))
    assert mcpp("build", "--sandbox", "bwrap", cwd=root).code == 0


def test_a_file_that_exists_nowhere_gets_no_hint(project, mcpp):
    root = project({"mcpp.toml": MANIFEST, "src/main.cpp": _main("nowhere/app.h")})
    res = mcpp("build", cwd=root)
    assert res.code == 1 and "No such file or directory" in res.err, res.err
    assert help_lines(res) == []
