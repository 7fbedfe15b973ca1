"""`mcpp.provide` / `mcpp.dep_info` (docs/rules.md, "Providers and probes"): what a dependency's
program states reaches its dependents' programs, and a change to it re-evaluates them."""
from __future__ import annotations

import shutil

import pytest

from tests.e2e.e2e_support import Mcpp

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

LIB_STAR = """
base = mcpp.dep_info("base")
mcpp.provide(greeting = "{greeting}", schema_dirs = [mcpp.manifest_dir() + "/schemas"] + base.schema_dirs,
             options = {{"level": 3, "strict": True}})
"""


def workspace(project, greeting="hello"):
    return project({
        "base/mcpp.toml": '[package]\nname = "base"\nversion = "0.1.0"\n[targets.base]\nkind = "lib"\n',
        "base/src/base.cpp": "int base_value() { return 1; }\n",
        "base/build.star": 'mcpp.provide(schema_dirs = [mcpp.manifest_dir() + "/proto"])\n',
        "lib/mcpp.toml": '[package]\nname = "lib"\nversion = "0.1.0"\n[targets.lib]\nkind = "lib"\n'
                         '[dependencies]\nbase = { path = "../base" }\n',
        "lib/src/lib.cpp": "int lib_value() { return 2; }\n",
        "lib/build.star": LIB_STAR.format(greeting=greeting),
        "app/mcpp.toml": '[package]\nname = "app"\nversion = "0.1.0"\n[dependencies]\nlib = { path = "../lib" }\n',
        "app/src/main.cpp": '#include <cstdio>\nint main() { std::printf("%s %s %d\\n", GREETING, DIRS, LEVEL); }\n',
        "app/build.star": """
info = mcpp.dep_info("lib")
mcpp.define('GREETING="%s"' % info.greeting)
mcpp.define('DIRS="%s"' % ",".join([d.split("/")[-1] for d in info.schema_dirs]))
mcpp.define("LEVEL=%d" % info.options["level"])
""",
    })


def test_a_dependent_reads_what_its_dependency_provided_and_what_it_forwarded(project, mcpp: Mcpp):
    root = workspace(project)
    res = mcpp("run", cwd=root / "app")
    assert res.code == 0, res.err
    assert res.out.strip().splitlines()[-1] == "hello schemas,proto 3"


def test_a_change_to_what_a_dependency_provides_re_evaluates_the_dependent(project, mcpp: Mcpp):
    root = workspace(project)
    assert mcpp("run", cwd=root / "app").code == 0
    (root / "lib" / "build.star").write_text(LIB_STAR.format(greeting="bonjour"))
    res = mcpp("run", cwd=root / "app")
    assert res.code == 0, res.err
    assert res.out.strip().splitlines()[-1] == "bonjour schemas,proto 3"


def test_dep_info_of_a_package_that_is_not_a_dependency_is_an_error_at_the_call(project, mcpp: Mcpp):
    root = project({
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
        "src/main.cpp": "int main() { return 0; }\n",
        "build.star": 'x = 1\ninfo =  mcpp.dep_info("nope")\n',
    })
    res = mcpp("build", cwd=root)
    assert res.code == 2
    first = res.err.splitlines()[0]
    assert first == "build.star:2:1: error: dep_info(`nope`): `nope` is not a dependency of package `p` " \
                    "(its dependencies: none)", res.err
    assert "Traceback" not in res.err.replace("call stack", "")
    assert "<mcpp prelude>" not in res.err


@pytest.mark.parametrize("call,message", [
    ("mcpp.provide(f = lambda: 1)", "StarlarkError: Operation `serde::serialize` not supported on type `function`"),
    ("mcpp.provide(a = 1)\nmcpp.provide(a = 2)", "provide(): field `a` is provided twice by package `p`"),
    ("mcpp.provide(d = {1: 2})", "provide(): field `d`: dict keys must be strings, got int"),
    ("mcpp.dep_info(3)", "dep_info(): `name` must be a string, got int"),
])
def test_provider_errors_are_positioned(project, mcpp: Mcpp, call, message):
    root = project({
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
        "src/main.cpp": "int main() { return 0; }\n",
        "build.star": "x = 1\n" + call + "\n",
    })
    res = mcpp("build", cwd=root)
    assert res.code == 2, res.err
    first = res.err.splitlines()[0]
    assert first.startswith(f"build.star:{1 + call.count(chr(10)) + 1}:1: error: {message}"), res.err
