"""Targets a rule declares (docs/rules.md, "Targets"): `mcpp.compile`, `mcpp.link`,
`mcpp.binary`, `mcpp.library`, `mcpp.test` and `mcpp.c_flags`, acted on by `mcpp run`, `mcpp
test`, `mcpp install` and `mcpp metadata`; a tree output compiled once its generator ran; and
the errors of each call, at the line that made it."""
from __future__ import annotations

import json
import shutil

import pytest

from tests.e2e.e2e_support import Mcpp

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

MANIFEST = '[package]\nname = "p"\nversion = "0.1.0"\n[build]\nsources = []\n'

FILES = {
    "mcpp.toml": MANIFEST,
    # one define, two values: each language gets its own flags
    "src/lang.c": "int c_which(void) { return WHICH; }\n",
    "src/lang.cpp": '#include "val.h"\nint cxx_which() { return WHICH * 10 + VAL; }\n',
    "src/main.cpp": '#include <cstdio>\nextern "C" int c_which(void);\nint cxx_which();\n'
                    'int main(int argc, char** argv) { std::printf("%d %d %d\\n", c_which(), cxx_which(), argc); }\n',
    "src/check.cpp": '#include <cstdio>\nint cxx_which();\n'
                     'int main(int argc, char** argv) { int v = 0; std::FILE* f = std::fopen(argv[1], "r");\n'
                     '  std::fscanf(f, "%d", &v); std::printf("%s: %d\\n", argv[1], v); return v == cxx_which() ? 0 : 1; }\n',
    "data/good.txt": "23\n",
    "data/wrong.txt": "7\n",
    "build.star": """
out = mcpp.out_dir()
mcpp.write(out + "/inc/val.h", "#define VAL 3\\n")
objs = mcpp.compile(["src/lang.c", "src/lang.cpp"], cflags = ["-DWHICH=1"], cxxflags = ["-DWHICH=2"],
                    includes = [out + "/inc"])
lib = mcpp.link("lang", objs, kind = "static")
tool = mcpp.binary("tool", ["src/main.cpp"], deps = ["lang"])
for d in mcpp.glob("data/*.txt"):
    mcpp.test("check-" + d.split("/")[-1][:-4], srcs = ["src/check.cpp"], data = [d], deps = ["lang"])
mcpp.test("tool-runs", binary = tool, data = ["data/good.txt"])
mcpp.warning("lib=" + lib.split("/")[-1] + " c_flags=" + ",".join([f for f in mcpp.c_flags() if f.startswith("-D")]))
""",
}


def test_declared_targets_are_what_run_test_install_and_metadata_act_on(project, mcpp: Mcpp, tmp_path):
    root = project({**FILES, "mcpp.toml": MANIFEST + "[build]\n".join([""]) + 'defines = ["PKG=1"]\n'})
    run = mcpp("run", "tool", "--", "x", cwd=root)
    assert run.code == 0, run.err
    assert run.out.splitlines()[-1] == "1 23 2"  # C got WHICH=1, C++ WHICH=2 and the generated header
    assert "warning: p: lib=liblang.a c_flags=-DPKG=1" in run.err
    test = mcpp("test", cwd=root)
    assert test.code == 1
    assert "check-good ... ok" in test.out and "tool-runs ... ok" in test.out
    assert "check-wrong ... FAIL" in test.out and "wrong.txt: 7" in test.out  # its data file is its argument
    assert "2 passed; 1 failed" in test.out
    meta = json.loads(mcpp("metadata", "--format", "json", cwd=root, check=True).out)
    rule = {(t["kind"], t["name"]) for t in meta["packages"][0]["targets"] if t.get("rule")}
    assert rule == {("lib", "lang"), ("bin", "tool"), ("test", "check-good"), ("test", "check-wrong"),
                    ("test", "tool-runs")}
    prefix = tmp_path / "prefix"
    assert mcpp("install", "--profile", "dev", "--prefix", str(prefix), cwd=root).code == 0
    assert sorted(str(p.relative_to(prefix)) for p in prefix.rglob("*") if p.is_file()) == \
        ["bin/tool", "lib/cmake/p/p-config-version.cmake", "lib/cmake/p/p-config.cmake", "lib/liblang.a",
         "lib/pkgconfig/lang.pc"]  # the .pc is named after the library it links (`-llang`)


def test_rule_compiles_are_keyed_like_the_manifests(project, mcpp: Mcpp):
    root = project(FILES)
    assert mcpp.build_json("build", cwd=root).executed("compile")
    assert mcpp.build_json("build", cwd=root).executed() == []  # nothing changed: nothing runs
    (root / "src/lang.c").write_text("int c_which(void) { return WHICH + 4; }\n")
    assert mcpp.build_json("build", cwd=root).executed("compile") == ["compile p@compile-1:src/lang.c"]
    res = mcpp("run", "tool", cwd=root)
    assert res.out.splitlines()[-1] == "5 23 1"


GEN = """#!/bin/sh
# gen.sh NAMES DIR: one source per name (names the list decides), a header declaring them all
set -e
mkdir -p "$2/impl"
printf '#pragma once\\nint total();\\n' > "$2/all.h"
sum=""
while read n; do
  printf 'int %s() { return %d; }\\n' "$n" "${#n}" > "$2/impl/$n.cpp"
  printf 'int %s();\\n' "$n" >> "$2/all.h"
  sum="$sum + $n()"
done < "$1"
printf '#include "all.h"\\nint total() { return 0%s; }\\n' "$sum" > "$2/total.cpp"
"""


def test_a_tree_output_of_unknown_names_is_compiled_and_relisted_when_it_changes(project, mcpp: Mcpp):
    root = project({
        "mcpp.toml": MANIFEST, "gen.sh": GEN, "names.txt": "alpha\nbeta\n",
        "src/main.cpp": '#include <cstdio>\n#include "all.h"\nint main() { std::printf("%d\\n", total()); }\n',
        "build.star": """
out = mcpp.out_dir()
mcpp.action(id = "gen", argv = ["/bin/sh", "gen.sh", "names.txt", out + "/api"], inputs = ["gen.sh", "names.txt"],
            outputs = [out + "/api/"], tools = ["/bin/sh"], role = "check")
mcpp.library("api", [out + "/api/"])
mcpp.binary("app", ["src/main.cpp"], deps = ["api"], includes = [out + "/api"])
""",
    })
    first = mcpp("run", cwd=root)
    assert first.code == 0, first.err
    assert first.out.splitlines()[-1] == "9"  # alpha + beta
    assert mcpp.build_json("build", cwd=root).executed() == []
    (root / "names.txt").write_text("alpha\ngamma\ndelta\n")
    rebuilt = mcpp.build_json("build", cwd=root)
    finished = next(e for e in rebuilt.events if e.get("reason") == "build-finished")
    assert "rule p:gen" in rebuilt.executed()
    assert finished["executed"] == len(rebuilt.executed())  # the generator's run is counted, once
    changed = rebuilt.executed("compile")
    assert "compile p@lib-api:gen/api/impl/gamma.cpp" in changed and "compile p@lib-api:gen/api/impl/delta.cpp" in changed
    assert "compile p@bin-app:src/main.cpp" in changed  # it includes the tree's header, whose content changed
    res = mcpp("run", cwd=root)
    assert res.out.splitlines()[-1] == "15"  # beta is gone from the link, gamma and delta joined it


@pytest.mark.parametrize("call,message", [
    ('mcpp.compile(["mcpp.toml"])', "compile(): `mcpp.toml` is not a C or C++ source (.c, .cpp, .cc, .cxx)"),
    ('mcpp.compile(["src/none.cpp"])', "compile(): source `src/none.cpp` does not exist"),
    ('mcpp.compile("src/a.cpp")', "compile(): `srcs` must be a list of strings, got string"),
    ('mcpp.compile(["/etc/hosts.c"])', "compile(): `/etc/hosts.c` is neither a file of package `p` nor under out_dir()"),
    ('mcpp.compile(["src/"])', "compile(): `src/` ends in `/`, so it is a tree output of an action"),
    ('mcpp.link("x", ["a.o"])', "link(`x`): object `a.o` is neither from compile() nor under out_dir()"),
    ('mcpp.link("x", [], kind = "dll")', "link(`x`): unknown kind `dll` (expected bin, static or shared)"),
    ('mcpp.library("x", ["src/a.cpp"], kind = "bin")', "library(`x`): unknown kind `bin` (expected static or shared)"),
    ('mcpp.binary("x", ["src/a.cpp"], deps = ["nope"])', "binary(): dep `nope` is not a library this package's rules"),
    ('mcpp.binary("a b", ["src/a.cpp"])', "binary(): name `a b` is not a target name"),
    ('mcpp.binary("x")', "binary(`x`): give `srcs` to compile or `objects` to link"),
    ('mcpp.test("t", srcs = ["src/a.cpp"], binary = "x")', "test(`t`): give exactly one of `srcs` and `binary`"),
    ('mcpp.test("t", binary = "nope")', "test(`t`): `nope` is not a binary this package's rules declared"),
    ('mcpp.test("t", srcs = ["src/a.cpp"], data = ["none.txt"])', "test(`t`): data `none.txt` is neither a file"),
    ('mcpp.binary("x", ["src/a.cpp"])\nmcpp.binary("x", ["src/a.cpp"])',
     "bin `x`: package `p` already declares a bin target with that name"),
])
def test_errors_are_at_the_calling_line(project, mcpp: Mcpp, call, message):
    root = project({"mcpp.toml": MANIFEST, "src/a.cpp": "int a() { return 1; }\n", "build.star": "x = 1\n" + call + "\n"})
    res = mcpp("build", cwd=root)
    assert res.code == 2, res.err
    first = res.err.splitlines()[0]
    assert first.startswith(f"build.star:{1 + call.count(chr(10)) + 1}:1: error: {message}"), res.err
    assert "Traceback" not in res.err.replace("call stack", "")
