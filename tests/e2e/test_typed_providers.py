"""`provider(fields = [...])` and `depset(...)` (docs/rules.md, "Providers and depsets"):
typed records passed across packages through `mcpp.provide` / `mcpp.dep_info`, field checking
at the caller's line, and ordered, de-duplicated collections."""
from __future__ import annotations

import shutil

import pytest

from tests.e2e.e2e_support import Mcpp

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

RULES = """
LibInfo = provider(doc = "a library's include roots", fields = ["includes", "level"], name = "test.LibInfo")
"""


def workspace(project):
    """base <- lib <- app, each forwarding the include roots of what it depends on in a depset."""
    toml = '[package]\nname = "{n}"\nversion = "0.1.0"\n[targets.{n}]\nkind = "{k}"\n{deps}'
    return project({
        "base/mcpp.toml": toml.format(n="base", k="lib", deps=""),
        "base/src/base.cpp": "int base_value() { return 1; }\n",
        "base/build.star": RULES + 'mcpp.provide(info = LibInfo(includes = depset(["/b", "/shared"]), level = 1))\n',
        "lib/mcpp.toml": toml.format(n="lib", k="lib", deps='[dependencies]\nbase = { path = "../base" }\n'),
        "lib/src/lib.cpp": "int lib_value() { return 2; }\n",
        "lib/build.star": RULES + """
base = mcpp.dep_info("base", LibInfo)
mcpp.provide(info = LibInfo(includes = depset(["/l", "/shared"], transitive = [base.includes]), level = base.level + 1))
""",
        "app/mcpp.toml": '[package]\nname = "app"\nversion = "0.1.0"\n[dependencies]\nlib = { path = "../lib" }\n',
        "app/src/main.cpp": '#include <cstdio>\nint main() { std::printf("%s %d\\n", INCS, LEVEL); }\n',
        "app/build.star": RULES + """
lib = mcpp.dep_info("lib", LibInfo)
mine = depset(["/a"], transitive = [lib.includes], order = "preorder")
mcpp.define('INCS="%s"' % ",".join(mine.to_list()))
mcpp.define("LEVEL=%d" % lib.level)
""",
    })


def test_records_and_depsets_cross_packages_ordered_and_without_duplicates(project, mcpp: Mcpp):
    root = workspace(project)
    res = mcpp("run", cwd=root / "app")
    assert res.code == 0, res.err
    # preorder: the app's own first; lib's default order put base's (transitive) before its own
    assert res.out.splitlines()[-1] == "/a,/b,/shared,/l 2"


@pytest.mark.parametrize("code,message", [
    (RULES + "LibInfo(includes = [], colour = 1)",
     "fail: test.LibInfo has no field `colour` (fields: includes, level)"),
    (RULES + "LibInfo([])", "fail: test.LibInfo takes keyword arguments only (fields: includes, level)"),
    ('P = provider(fields = "a")', "fail: provider(): `fields` must be a list of strings"),
    ('P = provider(fields = ["a", "a"])', "fail: provider(): `fields` names a field twice"),
    ('P = provider(fields = ["a b"])', "fail: provider(): field `a b` is not an identifier"),
    ('d = depset("abc")', "fail: depset(): `direct` must be a list, got string"),
    ('d = depset([], transitive = [1])', "fail: depset(): every `transitive` entry must be a depset (or a list), got int"),
    ('d = depset([[1]])', "fail: depset(): items must be strings, numbers or bools, got list"),
    ('d = depset([], order = "random")', "fail: depset(): unknown order `random`"),
    (RULES + 'x = LibInfo(level = 1).colour', "Object of type `struct` has no attribute `colour`"),
])
def test_errors_are_at_the_line_that_made_the_call(project, mcpp: Mcpp, code, message):
    root = project({"mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
                    "src/main.cpp": "int main() { return 0; }\n", "build.star": code + "\n"})
    res = mcpp("build", cwd=root)
    assert res.code == 2, res.err
    line = code.lstrip("\n").count("\n") + 1  # write_tree drops the leading newline
    first = res.err.splitlines()[0]
    assert first.startswith(f"build.star:{line}:") and message in first, res.err
    assert "<mcpp prelude>" not in res.err


def test_dep_info_of_a_provider_the_dependency_did_not_provide_is_an_error(project, mcpp: Mcpp):
    root = workspace(project)
    (root / "app/build.star").write_text(RULES + 'Other = provider(fields = ["x"], name = "test.Other")\n'
                                         'o = mcpp.dep_info("lib", Other)\n')
    res = mcpp("build", cwd=root / "app")
    assert res.code == 2
    assert res.err.splitlines()[0].startswith(
        "build.star:4:1: error: fail: dep_info(`lib`): the dependency provided no record of test.Other"), res.err
