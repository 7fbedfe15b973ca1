"""A rule module made of several files: `rule_module_entry`, `load("//src/common.star", ...)` of its
own package, rule modules of its own host-module dependencies, `print(...)`, and errors at the
rule file's own line with the load chain as notes (docs/rules.md, "Rule modules of several files")."""
from __future__ import annotations

import shutil

import pytest

from tests.e2e.e2e_support import Mcpp

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

MAIN = """
    #include <cstdio>
    extern "C" int value();
    int main() { std::printf("value=%d\\n", value()); }
"""

# `base.rules` writes value.cpp with `cp`-free Starlark: mcpp.write is not ours, so a shell action.
BASE = {
    "base/mcpp.toml": """
        [package]
        name = "base"
        version = "0.1.0"
        [features.base]
        sources = ["src/base.star"]
        rule_module = "base.rules"
    """,
    "base/src/base.star": """
        def value_source(n):
            out = mcpp.out_dir() + "/value.cpp"
            mcpp.action(id = "value", argv = ["/bin/sh", "-c", "echo 'extern \\"C\\" int value() { return %d; }' > %s" % (n, out)],
                        inputs = [], outputs = [out], tools = ["/bin/sh"], role = "source")
    """,
}


def _projects(project, extra=None, app_program='load("app.rules", "build_value")\nbuild_value(6)\n'):
    files = {
        **BASE,
        "rules/mcpp.toml": """
            [package]
            name = "rules"
            version = "0.1.0"
            [features.app]
            sources = ["src/entry.star", "src/common.star"]
            rule_module = "app.rules"
            rule_module_entry = "src/entry.star"
            [feature-deps.app]
            base = { path = "../base", host-module = true }
        """,
        "rules/src/common.star": "def doubled(n):\n    return 2 * n\n",
        "rules/src/entry.star": """
            load("//src/common.star", "doubled")
            load("base.rules", "value_source")
            def build_value(n):
                print("value is", doubled(n))
                value_source(doubled(n))
        """,
        "app/mcpp.toml": """
            [package]
            name = "app"
            version = "0.1.0"
            [dependencies]
            rules = { path = "../rules", features = ["app"] }
        """,
        "app/src/main.cpp": MAIN,
        "app/build.star": app_program,
    }
    files.update(extra or {})
    return project(files)


def test_a_rule_module_of_several_files_loads_its_helper_and_a_host_module_dependency(project, mcpp: Mcpp):
    root = _projects(project)
    res = mcpp("run", cwd=root / "app")
    assert res.code == 0, res.err
    assert res.out.strip().splitlines()[-1] == "value=12"
    assert "/rules/src/entry.star:4: value is 12" in res.err and res.diagnostics.startswith("note: "), res.err


def test_print_notes_the_calling_line_of_the_build_program(project, mcpp: Mcpp):
    root = _projects(project, app_program='load("app.rules", "build_value")\n\nprint("hello", 1, sep = "-")\nbuild_value(1)\n')
    res = mcpp("build", cwd=root / "app")
    assert res.code == 0, res.err
    assert "note: build.star:3: hello-1" in res.err, res.err


def test_several_star_files_need_an_entry(project, mcpp: Mcpp):
    root = _projects(project)
    toml = root / "rules/mcpp.toml"
    toml.write_text(toml.read_text().replace('rule_module_entry = "src/entry.star"', ""))
    res = mcpp("build", cwd=root / "app")
    assert res.code == 2
    assert "rules/mcpp.toml:" in res.diagnostics.splitlines()[0], res.err
    assert "needs one `.star` file in its `sources` or a `rule_module_entry`" in res.err
    assert 'name the entry with `rule_module_entry = "src/<file>.star"`' in res.err

    toml.write_text(toml.read_text().replace('rule_module = "app.rules"',
                                             'rule_module = "app.rules"\nrule_module_entry = "src/nope.star"'))
    res = mcpp("build", cwd=root / "app")
    assert res.code == 2
    assert 'rule_module_entry = "src/nope.star", which is not a `.star` file of its `sources`' in res.err


def test_an_error_in_a_helper_is_at_its_own_line_with_the_load_chain(project, mcpp: Mcpp):
    root = _projects(project, {"rules/src/common.star": "def doubled(n):\n    return 2 * n\nx = undefined_name\n"})
    res = mcpp("build", cwd=root / "app")
    assert res.code == 2, res.err
    lines = res.diagnostics.splitlines()
    assert "/rules/src/common.star:3:5: error: Variable `undefined_name` not found" in lines[0], res.err
    assert "/rules/src/entry.star:1:1" in res.err
    assert "note: loaded from build.star:1:1" in res.err
    assert res.err.index("entry.star:1:1") < res.err.index("build.star:1:1")
    assert "Traceback" not in res.err


def test_a_syntax_error_in_the_rule_module_is_at_its_own_line(project, mcpp: Mcpp):
    root = _projects(project, {"rules/src/entry.star": "def build_value(n)\n    pass\n"})
    res = mcpp("build", cwd=root / "app")
    assert res.code == 2, res.err
    assert "/rules/src/entry.star:1:" in res.diagnostics.splitlines()[0], res.err
    assert "note: loaded from build.star:1:1" in res.err


def test_a_rule_file_may_not_load_a_file_outside_its_sources(project, mcpp: Mcpp):
    root = _projects(project, {
        "rules/src/entry.star": 'load("//src/secret.star", "x")\ndef build_value(n):\n    pass\n',
        "rules/src/secret.star": "x = 1\n",
    })
    res = mcpp("build", cwd=root / "app")
    assert res.code == 2, res.err
    assert ("/rules/src/entry.star:1:1: error: rule module 'app.rules' loads '//src/secret.star', which is not a "
            "`.star` file of feature `app`") in res.diagnostics.splitlines()[0], res.err


@pytest.mark.parametrize("order", ["base first", "rules first"])
def test_permission_does_not_depend_on_load_order(project, mcpp: Mcpp, order):
    """`other.rules` loads `base.rules` without having it as a host module: refused whether or not
    the program loaded `base.rules` (and so had it evaluated) before."""
    loads = ['load("base.rules", "value_source")', 'load("other.rules", "f")']
    if order == "rules first":
        loads.reverse()
    root = _projects(project, {
        "other/mcpp.toml": """
            [package]
            name = "other"
            version = "0.1.0"
            [features.other]
            sources = ["src/other.star"]
            rule_module = "other.rules"
        """,
        "other/src/other.star": 'load("base.rules", "value_source")\ndef f():\n    pass\n',
        "app/mcpp.toml": """
            [package]
            name = "app"
            version = "0.1.0"
            [dependencies]
            base = { path = "../base", host-module = true }
            other = { path = "../other", host-module = true }
        """,
    }, app_program="\n".join(loads) + "\n")
    res = mcpp("build", cwd=root / "app")
    assert res.code == 2, res.err
    assert "rule module 'other.rules' loads 'base.rules'" in res.diagnostics.splitlines()[0], res.err
    assert "/other/src/other.star:1:1: error:" in res.diagnostics.splitlines()[0], res.err


def test_a_refused_load_in_a_rule_file_stops_the_build_before_any_host_tool_is_built(project, mcpp: Mcpp):
    root = _projects(project, {
        "gen/mcpp.toml": '[package]\nname = "gen"\nversion = "0.1.0"\n[targets.gen]\nkind = "bin"\nmain = "src/main.cpp"\n',
        "gen/src/main.cpp": "int main() { return 0; }\n",
        "rules/src/common.star": 'load("other.rules", "x")\ndef doubled(n):\n    return 2 * n\n',
    })
    toml = root / "rules/mcpp.toml"
    toml.write_text(toml.read_text() + 'gen = { path = "../gen", tools = ["gen"] }\n')
    res = mcpp("build", cwd=root / "app")
    assert res.code == 2, res.err
    lines = res.diagnostics.splitlines()
    assert "/rules/src/common.star:1:1: error: //src/common.star loads 'other.rules'" in lines[0], res.err
    assert "/rules/src/entry.star:1:1" in res.err and "note: loaded from build.star:1:1" in res.err
    assert "Building host tool" not in res.err
    assert not list((mcpp.home / "tool").glob("*/gen@*"))


def test_what_a_program_printed_is_shown_before_its_error(project, mcpp: Mcpp):
    root = _projects(project, app_program='print("about to fail")\nmcpp.dep_bin("nope", "x")\n')
    res = mcpp("build", cwd=root / "app")
    assert res.code == 2, res.err
    lines = res.diagnostics.splitlines()
    assert lines[0] == "note: build.star:1: about to fail", res.err
    assert lines[1].startswith("build.star:2:1: error: no host tool `nope:x`"), res.err
