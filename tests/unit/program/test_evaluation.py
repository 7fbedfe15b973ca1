"""Evaluating Starlark with the `mcpp` struct: what a program may call, load and read, and how
its errors come back (engine/program/)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcpp.engine.core.errors import McppError
from mcpp.engine.program.api import McppApi, ProgramApiError
from mcpp.engine.program.cache import ProgramCache
from mcpp.engine.program.context import AccelEntry, ProgramContext, ToolRef
from mcpp.engine.program.evaluate import Evaluation, program_error


def context(root: Path, **over) -> ProgramContext:
    base = dict(package="p", version="0.1.0", namespace="", manifest_dir=str(root),
                out_dir=str(root / "target/dev/.mcpp/gen/p"), profile="dev", target="x86_64-linux-gnu",
                host="x86_64-linux-gnu", features=("f1",), accel=(AccelEntry("cuda", "12.9", ("sm_89",), ""),),
                device_sources=("src/a.toy", "src/b.cu"), tools=(ToolRef("example.toyc", "toyc", "/t/bin/toyc"),),
                payloads=(), rule_modules=())
    base.update(over)
    return ProgramContext(**base)


def run(root: Path, text: str, env=None, **over) -> McppApi:
    (root / "build.star").write_text(text)
    api = McppApi(context(root, **over), env or {})
    cwd = os.getcwd()
    os.chdir(root)
    try:
        Evaluation(api, {}).run(str(root / "build.star"))
    finally:
        os.chdir(cwd)
    return api


def test_the_context_functions_answer_from_the_context(tmp_path):
    api = run(tmp_path, """
mcpp.warning(" ".join([mcpp.package_name(), mcpp.profile(), mcpp.target(), mcpp.host()]))
mcpp.warning(str([mcpp.has_feature("f1"), mcpp.has_feature("f2")]))
mcpp.warning(str(mcpp.device_sources(".toy")) + str(mcpp.device_sources("cu")) + str(len(mcpp.device_sources())))
mcpp.warning(mcpp.dep_bin("toyc", "toyc") + " " + mcpp.dep_bin("example.toyc", "toyc"))
mcpp.warning(mcpp.accel()[0]["name"] + mcpp.accel()[0]["archs"][0])
mcpp.warning(repr(mcpp.xpkg_dir("nothing")))
""")
    assert api.result.warnings == [
        "p dev x86_64-linux-gnu x86_64-linux-gnu", "[True, False]",
        '["src/a.toy"]["src/b.cu"]2', "/t/bin/toyc /t/bin/toyc", "cudasm_89", '""']


def test_relative_paths_resolve_against_the_package_root(tmp_path):
    api = run(tmp_path, """
mcpp.action(id = "a", argv = ["tool"], inputs = ["src/x.in"], outputs = [mcpp.out_dir() + "/x"],
            tools = ["bin/tool"], role = "source")
mcpp.include_dir("include")
""")
    [a] = api.result.actions
    assert a.inputs == (str(tmp_path / "src/x.in"),)
    assert a.tools == (str(tmp_path / "bin/tool"),)
    assert api.result.include_dirs == [str(tmp_path / "include")]


def test_an_api_error_is_positioned_with_the_stack(tmp_path):
    with pytest.raises(McppError) as e:
        run(tmp_path, 'def f():\n    mcpp.dep_bin("nope", "x")\n\nf()\n')
    err = e.value
    assert (err.pos.line, err.pos.col) == (2, 5)
    assert err.message.startswith("no host tool `nope:x` reaches package `p`")
    assert err.notes[0] == "note: Starlark call stack (most recent call last):"
    assert any("in f" in n for n in err.notes)


def test_wrong_arguments_name_the_mcpp_function(tmp_path):
    with pytest.raises(McppError) as e:
        run(tmp_path, 'mcpp.action("only-an-id")\n')
    assert "mcpp.action()" in e.value.message
    assert "McppApi" not in e.value.message


def test_loads_other_than_the_library_are_refused(tmp_path):
    with pytest.raises(McppError) as e:
        run(tmp_path, 'load("some.module", "x")\n')
    assert "build.star loads 'some.module'" in e.value.message


def test_the_library_paths_helpers(tmp_path):
    api = run(tmp_path, """
load("@mcpp//paths.star", "paths")
mcpp.warning(paths.join("/a", "b/c.toy"))
mcpp.warning(paths.join("/a", "/abs"))
mcpp.warning(paths.stem("src/k/x.toy") + " " + paths.extension("x.tar.gz") + " " + paths.basename("a/b"))
mcpp.warning(paths.replace_extension("src/x.toy", ".cpp") + " " + paths.dirname("a/b/c") + " " + paths.stem(".hidden"))
""")
    assert api.result.warnings == ["/a/b/c.toy", "/abs", "x .gz b", "src/x.cpp a/b .hidden"]


def test_program_error_text_without_a_stack():
    err = program_error("error: Variable `x` not found\n --> build.star:3:7\n  |\n")
    assert (str(err.pos), err.message, err.notes) == ("build.star:3:7", "Variable `x` not found", [])


def test_the_cache_is_invalidated_by_each_kind_of_read(tmp_path):
    (tmp_path / "data.txt").write_text("one")
    (tmp_path / "src").mkdir()
    text = ('mcpp.warning(mcpp.read_file("data.txt"))\n'
            'mcpp.warning(str(mcpp.glob("src/*.c")))\n'
            'mcpp.warning(str(mcpp.rerun_if_env_changed("KNOB")))\n')
    env = {"KNOB": "1"}
    api = run(tmp_path, text, env)
    assert api.result.warnings == ["one", "[]", "1"]
    cache = ProgramCache(str(tmp_path / "state"))
    ctx = context(tmp_path)
    files = {str(tmp_path / "build.star"): None}
    from mcpp.engine.program.api import file_digest
    files = {p: file_digest(p) for p in files}
    cache.store("p", ctx.fingerprint(), files, api.reads, api.result)

    def hit(environ=env, fingerprint=ctx.fingerprint()):
        return cache.lookup("p", fingerprint, str(tmp_path), environ) is not None

    assert hit()
    assert not hit(fingerprint=context(tmp_path, features=()).fingerprint())
    assert not hit(environ={"KNOB": "2"})
    (tmp_path / "src/new.c").write_text("")
    assert not hit()
    (tmp_path / "src/new.c").unlink()
    assert hit()
    (tmp_path / "data.txt").write_text("two")
    assert not hit()
    (tmp_path / "data.txt").write_text("one")
    (tmp_path / "build.star").write_text(text + "\n")
    assert not hit()


def test_api_errors_are_program_api_errors(tmp_path):
    api = McppApi(context(tmp_path), {})
    with pytest.raises(ProgramApiError, match="malformed floor"):
        api.floor("abi three")
    with pytest.raises(ProgramApiError, match="is outside out_dir"):
        api.generated("src/x.cpp")
