"""toolchain(), cxx_flags(), bin(), rule_dir(), package(), rule_package(), object(), write()
(engine/program/api_context.py): what they answer, and their errors at the calling line."""
from __future__ import annotations

from pathlib import Path

import pytest

from mcpp.engine.core.errors import McppError
from mcpp.engine.program.api import McppApi
from mcpp.engine.program.context import BinRef, CompileContext, RulePackageRef, ToolchainInfo
from tests.unit.program.test_evaluation import run

CONTEXT = dict(
    toolchain=ToolchainInfo("/usr/bin/gcc", "/usr/bin/g++", "/usr/bin/ar", "gcc", "13.2.0", "x86_64-linux-gnu"),
    compile_flags=CompileContext(("-std=c++20", "-O0"), ("FEATURE_F1",), ("/pkg/include",), ("/dep/include",)),
    bins=(BinRef("p", "app", "/b/app"), BinRef("dep", "tool", "/b/tool")),
)


def test_context_functions_answer_from_the_context(tmp_path):
    api = run(tmp_path, """
tc = mcpp.toolchain()
mcpp.warning(" ".join([tc.cc, tc.cxx, tc.ar, tc.kind, tc.version, tc.target]))
p = mcpp.package()
mcpp.warning("%s %s %s" % (p.name, p.version, p.features))
mcpp.define("X=1")
mcpp.include_dir("gen")
mcpp.cxxflag("-Wall")
mcpp.warning(" ".join(mcpp.cxx_flags()))
mcpp.warning(mcpp.bin("app") + " " + mcpp.bin("tool"))
""", **CONTEXT)
    assert api.result.warnings == [
        "/usr/bin/gcc /usr/bin/g++ /usr/bin/ar gcc 13.2.0 x86_64-linux-gnu",
        'p 0.1.0 ["f1"]',
        f"-std=c++20 -O0 -Wall -DFEATURE_F1 -DX=1 -I/pkg/include -I{tmp_path}/gen -I/dep/include",
        "/b/app /b/tool"]


def test_rule_dir_and_rule_package_answer_for_the_file_that_calls_them(tmp_path):
    rules = tmp_path / "rules"
    (rules / "src").mkdir(parents=True)
    (rules / "src/r.star").write_text(
        "def f():\n    r = mcpp.rule_package()\n    mcpp.warning(mcpp.rule_dir() + ' ' + r.name + ' ' + r.version)\n")
    (tmp_path / "build.star").write_text('load("my.r", "f")\nf()\n')
    from mcpp.engine.program.context import ProgramContext
    from mcpp.engine.program.evaluate import Evaluation
    from mcpp.engine.program.modules import RuleModule
    from tests.unit.program.test_evaluation import context
    ctx = context(tmp_path, rule_packages=(RulePackageRef(str(rules), "rules", "0.3.0", ("r",)),))
    assert isinstance(ctx, ProgramContext)
    api = McppApi(ctx, {})
    Evaluation(api, {"my.r": RuleModule("my.r", str(rules / "src/r.star"), None, "r")}).run(str(tmp_path / "build.star"))
    assert api.result.warnings == [f"{rules} rules 0.3.0"]


def test_write_declares_an_action_and_object_records_the_output(tmp_path):
    api = run(tmp_path, """
out = mcpp.out_dir()
mcpp.write(out + "/v.h", "#define V 1\\n")
mcpp.write(out + "/run.sh", "#!/bin/sh\\n", executable = True)
mcpp.object(out + "/x.o")
""")
    a, b = api.result.actions
    assert a.outputs == (str(tmp_path / "target/dev/.mcpp/gen/p/v.h"),) and a.argv[-2] == "#define V 1\n"
    assert "chmod 755" in b.argv[2] and "chmod" not in a.argv[2]
    assert api.result.objects == [str(tmp_path / "target/dev/.mcpp/gen/p/x.o")]


@pytest.mark.parametrize("call, message", [
    ('mcpp.bin(3)', "bin(): `name` must be a string, got int"),
    ('mcpp.bin("nope")', "bin(`nope`): no bin target of package `p` or of its dependencies has that name "
                         "(bin targets: `app` (p), `tool` (dep))"),
    ('mcpp.rule_dir()', "rule_dir() is called from a file that is not part of a rule package"),
    ('mcpp.rule_package()', "rule_package() is called from a file that is not part of a rule package"),
    ('mcpp.object(["a"])', "object(): `path` must be a string, got list"),
    ('mcpp.object("src/x.o")', "object `src/x.o` is outside out_dir()"),
    ('mcpp.write("/tmp/x", "")', "write(): `/tmp/x` is outside out_dir()"),
    ('mcpp.write(mcpp.out_dir(), "")', "is outside out_dir()"),
    ('mcpp.write(mcpp.out_dir() + "/x", 3)', "write(): `content` must be a string, got int"),
    ('mcpp.write(mcpp.out_dir() + "/x", "", executable = "yes")', "write(): `executable` must be a bool, got str"),
    ('mcpp.write(mcpp.out_dir() + "/x", "a" * 200000)', "content is 200000 bytes; at most"),
    ('mcpp.toolchain(1)', "extra positional argument(s) for call to mcpp.toolchain"),
    ('mcpp.package(1)', "extra positional argument(s) for call to mcpp.package"),
    ('mcpp.cxx_flags(1)', "TypeError: mcpp.cxx_flags() takes"),
    ('mcpp.rule_dir(1)', "TypeError: mcpp.rule_dir() takes 0 positional arguments"),
    ('mcpp.bin("a\\0b")', "bin(): `name` contains a NUL byte"),
])
def test_errors_are_at_the_calling_line(tmp_path, call, message):
    with pytest.raises(McppError) as e:
        run(tmp_path, f"x = 1\n\ndef f():\n    {call}\n\nf()\n", **CONTEXT)
    assert (e.value.pos.line, e.value.pos.col) == (4, 5), e.value
    assert message in e.value.message


def test_a_written_output_is_declared_once(tmp_path: Path):
    with pytest.raises(McppError) as e:
        run(tmp_path, 'mcpp.write(mcpp.out_dir() + "/x", "")\nmcpp.write(mcpp.out_dir() + "/x", "")\n')
    assert e.value.pos.line == 2 and "the id is declared twice" in e.value.message
