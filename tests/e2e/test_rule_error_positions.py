"""Errors found once a build program has run name the line that declared the action
(docs/rules.md, "Errors found after evaluation"): a cycle, an output two actions write, an input
no action makes, an output never produced; a `load()` cycle is one positioned error; a file an
action writes without declaring it is reported."""
from __future__ import annotations

import shutil

import pytest

from tests.e2e.e2e_support import Mcpp, write_tree

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

APP = {
    "app/mcpp.toml": """
        [package]
        name = "app"
        version = "0.1.0"
        [dependencies]
        rules = { path = "../rules", features = ["gen"] }
    """,
    "app/src/main.cpp": "int main() { return 0; }\n",
    "rules/mcpp.toml": """
        [package]
        name = "rules"
        version = "0.1.0"
        [features.gen]
        sources = ["src/gen.star", "src/helper.star"]
        rule_module = "example.rules.gen"
        rule_module_entry = "src/gen.star"
    """,
    "rules/src/gen.star": """
        def copy(name, src):
            out = mcpp.out_dir()
            mcpp.action(id = name, argv = ["/bin/cp", src, out + "/" + name], inputs = [src],
                        outputs = [out + "/" + name], tools = ["/bin/cp"], role = "check")
    """,
    "rules/src/helper.star": "X = 1\n",
}


def build(mcpp: Mcpp, tmp_path, program: str, **files: str):
    root = write_tree(tmp_path / "ws", {**APP, "app/build.star": program,
                                        **{k.replace("__", "/").replace("_star", ".star"): v for k, v in files.items()}})
    res = mcpp("build", "--sandbox", "dir", cwd=root / "app")
    assert "Traceback" not in res.err
    return res


def test_an_action_cycle_names_the_rule_line_and_the_calls(mcpp: Mcpp, tmp_path):
    res = build(mcpp, tmp_path, """
        load("example.rules.gen", "copy")
        out = mcpp.out_dir()
        copy("a", out + "/b")
        copy("b", out + "/a")
    """)
    assert res.code == 2
    lines = res.diagnostics.splitlines()
    assert lines[0].endswith("rules/src/gen.star:3:5: error: actions depend on each other in a cycle: action `a` "
                             "of package `app` -> action `b` of package `app` -> action `a` of package `app`")
    assert "note: called from build.star:3" in lines
    assert any(line.startswith("note: action `b` of package `app` is declared at ")
               and line.endswith("rules/src/gen.star:3:5 (called from build.star:4)") for line in lines)


def test_two_actions_writing_one_output_are_named_at_their_lines(mcpp: Mcpp, tmp_path):
    res = build(mcpp, tmp_path, """
        out = mcpp.out_dir()
        mcpp.action(id = "one", argv = ["/bin/cp", "src/main.cpp", out + "/x"], inputs = ["src/main.cpp"],
                    outputs = [out + "/x"], role = "check")
        mcpp.write(out + "/x", "two")
    """)
    assert res.code == 2
    assert res.diagnostics.splitlines()[:2] == [
        "build.star:4:1: error: action `one` of package `app` and action `write x` of package `app` both declare "
        "the output `app/target/dev/.mcpp/gen/app/x`; each file of the build is written by one action",
        "note: action `one` of package `app` is declared at build.star:2:1"]


def test_an_input_no_action_makes_is_named_at_its_action(mcpp: Mcpp, tmp_path):
    res = build(mcpp, tmp_path, """
        out = mcpp.out_dir()

        mcpp.action(id = "reader", argv = ["/bin/cp", out + "/never", out + "/y"],
                    inputs = [out + "/never"], outputs = [out + "/y"], role = "check")
    """)
    assert res.code == 2
    assert res.diagnostics.splitlines()[0] == (
        "build.star:3:1: error: package `app`, action `reader`: input `app/target/dev/.mcpp/gen/app/never` does not "
        "exist and no action of this build makes it")


def test_an_output_never_produced_is_named_at_its_action(mcpp: Mcpp, tmp_path):
    res = build(mcpp, tmp_path, """
        out = mcpp.out_dir()
        mcpp.action(id = "lazy", argv = ["/bin/true"], inputs = [], outputs = [out + "/z"], role = "check")
    """)
    assert res.code == 1
    assert ("build.star:2:1: error: action `rule app:lazy` did not produce app/target/dev/.mcpp/gen/app/z (as a file)"
            in res.diagnostics.splitlines())


def test_a_load_cycle_is_one_positioned_error(mcpp: Mcpp, tmp_path):
    res = build(mcpp, tmp_path, """
        load("example.rules.gen", "copy")
        copy("a", "src/main.cpp")
    """, rules__src__gen_star='load("//src/helper.star", "X")\n',
         rules__src__helper_star='load("//src/gen.star", "copy")\nX = 1\n')
    assert res.code == 2
    lines = res.diagnostics.splitlines()
    assert lines[0].endswith("rules/src/helper.star:1:1: error: load cycle: " + " -> ".join(
        str(tmp_path / "ws/rules/src" / f) for f in ("gen.star", "helper.star", "gen.star"))
        + "; a file cannot load a file that (directly or not) loads it"), lines[0]
    assert len(lines) < 8, lines
    assert "RecursionError" not in res.err


def test_a_file_an_action_writes_without_declaring_it_is_reported(mcpp: Mcpp, tmp_path):
    res = build(mcpp, tmp_path, """
        out = mcpp.out_dir()
        mcpp.action(id = "extra", argv = ["/bin/sh", "-c", "echo a > $0/kept && echo b > $0/stray", out],
                    inputs = [], outputs = [out + "/kept"], tools = ["/bin/sh"], role = "check")
    """)
    assert res.code == 0, res.err
    assert ("warning: action `rule app:extra` wrote app/target/dev/.mcpp/gen/app/stray, which it does not declare "
            "(it is not kept; list it in `outputs`)") in res.diagnostics.splitlines()
