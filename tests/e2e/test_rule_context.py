"""The toolchain and compile context a build program sees, and per-output consumption
(docs/rules.md, "Toolchain, context and outputs"): toolchain(), cxx_flags(), bin(), rule_dir(),
package(), rule_package(), object(), generated(), write()."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.e2e.e2e_support import Mcpp

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

# The rule compiles a template of its own package with the app's compiler and flags (the
# define of the app's manifest and the app's include/ directory must reach it), writes a
# header describing what it saw, and links the object it made by name.
RULES = {
    "rules/mcpp.toml": """
        [package]
        name = "rules"
        version = "0.3.0"
        [features.ctx]
        sources = ["src/ctx.star"]
        rule_module = "ctx.rules"
    """,
    "rules/tpl/value.cpp": """
        #include "cfg.h"
        extern "C" int value() { return CFG * 10 + FROM_MANIFEST; }
    """,
    "rules/src/ctx.star": """
        def describe():
            tc = mcpp.toolchain()
            out = mcpp.out_dir()
            tpl = mcpp.rule_dir() + "/tpl/value.cpp"
            mcpp.action(id = "value", argv = [tc.cxx] + mcpp.cxx_flags() + ["-c", tpl, "-o", out + "/value.o"],
                        inputs = [tpl, mcpp.manifest_dir() + "/include/cfg.h"], outputs = [out + "/value.o"],
                        tools = [tc.cxx], role = "check")
            mcpp.object(out + "/value.o")
            r = mcpp.rule_package()
            p = mcpp.package()
            mcpp.write(out + "/info/info.h", "#define INFO \\"%s %s|%s %s %s|%s\\"\\n" % (
                p.name, p.version, r.name, r.version, ",".join(r.features), tc.kind))
            mcpp.include_dir(out + "/info")
    """,
    "app/mcpp.toml": """
        [package]
        name = "app"
        version = "1.2.3"
        [build]
        defines = ["FROM_MANIFEST=2"]
        [dependencies]
        rules = { path = "../rules", features = ["ctx"] }
    """,
    "app/include/cfg.h": "#define CFG 4\n",
    "app/src/main.cpp": """
        #include <cstdio>
        #include "info.h"
        extern "C" int value();
        int main() { std::printf("value=%d info=%s\\n", value(), INFO); }
    """,
    "app/build.star": 'load("ctx.rules", "describe")\ndescribe()\n',
}


def test_a_rule_compiles_with_the_packages_toolchain_and_flags(project, mcpp: Mcpp):
    root = project(RULES)
    res = mcpp("run", cwd=root / "app")
    assert res.code == 0, res.err
    kind = "clang" if "clang" in subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout else "gcc"
    assert res.out.strip().splitlines()[-1] == f"value=42 info=app 1.2.3|rules 0.3.0 ctx|{kind}"


def test_rule_dir_and_rule_package_are_refused_in_a_packages_own_program(project, mcpp: Mcpp):
    root = project({
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
        "src/main.cpp": "int main() { return 0; }\n",
        "build.star": 'x = 1\nd = mcpp.rule_dir()\n',
    })
    res = mcpp("build", cwd=root)
    assert res.code == 2
    assert "build.star:2:5: error: rule_dir() is called from a file that is not part of a rule package" in res.err


# One action makes a header and a source (role "source"), another an object and a header
# (role "object"): the headers are included, never compiled or linked.
PER_OUTPUT = {
    "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
    "src/main.cpp": """
        #include <cstdio>
        #include "gen.h"
        #include "obj.h"
        int both();
        int main() { std::printf("gen=%d obj=%d both=%d\\n", gen(), obj(), both()); }
    """,
    "build.star": """
        out = mcpp.out_dir()
        mcpp.action(id = "gen", argv = ["/bin/sh", "-c",
                    'printf "int gen();\\\\n" > $1/gen.h && printf "#include \\\\"gen.h\\\\"\\\\nint gen() { return 3; }\\\\n" > $1/gen.cpp',
                    "sh", out], inputs = [], outputs = [out + "/gen.h", out + "/gen.cpp"], role = "source")
        mcpp.write(out + "/obj.c", "int obj(void) { return 9; }\\n")
        mcpp.action(id = "obj", argv = ["/bin/sh", "-c", 'printf "extern \\\\"C\\\\" int obj();\\\\n" > $1/obj.h && gcc -c $1/obj.c -o $1/obj.o',
                    "sh", out], inputs = [out + "/obj.c"], outputs = [out + "/obj.h", out + "/obj.o"], role = "object")
        mcpp.action(id = "both", argv = ["/bin/sh", "-c", 'printf "int both() { return 5; }\\n" > $1/both.cpp && gcc -c -x c /dev/null -o $1/empty.o',
                    "sh", out], inputs = [], outputs = [out + "/both.cpp", out + "/empty.o"], role = "object")
        mcpp.generated(out + "/both.cpp")
        mcpp.include_dir(out)
    """,
}


def test_headers_among_outputs_are_neither_compiled_nor_linked(project, mcpp: Mcpp):
    root = project(PER_OUTPUT)
    res = mcpp("run", cwd=root)
    assert res.code == 0, res.err
    assert res.out.strip().splitlines()[-1] == "gen=3 obj=9 both=5"


def test_an_executable_write_runs_in_a_later_action(project, mcpp: Mcpp):
    root = project({
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
        "src/main.cpp": '#include <cstdio>\n#include "v.h"\nint main() { std::printf("%d\\n", V); }\n',
        "build.star": """
            out = mcpp.out_dir()
            mcpp.write(out + "/mk.sh", "#!/bin/sh\\necho '#define V 17' > $1\\n", executable = True)
            mcpp.action(id = "run", argv = [out + "/mk.sh", out + "/inc/v.h"], inputs = [out + "/mk.sh"],
                        outputs = [out + "/inc/v.h"], role = "check")
            mcpp.include_dir(out + "/inc")
        """,
    })
    res = mcpp("run", cwd=root)
    assert res.code == 0, res.err
    assert res.out.strip().splitlines()[-1] == "17"


def test_a_packed_binary_keeps_its_executable_bit_in_every_sandbox(project, mcpp: Mcpp):
    """A tar of the package's binary (`bin()`, read by an `artifact` action) keeps the
    executable bit in every sandbox and is byte-identical under bwrap, dir and off: staging and
    the store keep the bit, and under off the action reads the linker's file in `target/`, which
    the engine made read-only like every output (`-r-xr-xr-x` everywhere)."""
    root = project({
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
        "src/main.cpp": "int main() { return 0; }\n",
        "build.star": """
            load("@mcpp//paths.star", "paths")
            exe = mcpp.bin("p")
            tar = mcpp.out_dir() + "/p.tar"
            mcpp.action(id = "pack", argv = ["/bin/tar", "--sort=name", "--mtime=@0", "--owner=0", "--group=0",
                                             "--numeric-owner", "-cf", tar, "-C", paths.dirname(exe), "p"],
                        inputs = [exe], outputs = [tar], role = "artifact")
            mcpp.action(id = "list", argv = ["/bin/sh", "-c", 'tar -tvf "$1" > "$2"', "sh", tar, tar + ".list"],
                        inputs = [tar], outputs = [tar + ".list"], role = "artifact")
        """,
    })
    tars = {}
    for mode in ("bwrap", "dir", "off"):
        shutil.rmtree(root / "target", ignore_errors=True)
        res = mcpp("build", "--sandbox", mode, cwd=root)
        assert res.code == 0, res.err
        listing = (root / "target/dev/.mcpp/gen/p/p.tar.list").read_text()
        assert listing.startswith("-r-xr-xr-x"), (mode, listing)
        tars[mode] = (root / "target/dev/.mcpp/gen/p/p.tar").read_bytes()
    assert tars["bwrap"] == tars["dir"] == tars["off"]


def test_a_binary_of_a_dependency_runs_as_a_tool_of_a_later_action(project, mcpp: Mcpp):
    """`bin()` of a dependency in `tools`: the action runs after the link, with the binary staged."""
    from tests.e2e.test_build_programs import GEN_TOOL, MAIN_PRINTS_VALUE
    # (a bin named `gen` would be target/<profile>/.mcpp/gen, the generated files' directory)
    tool = {**GEN_TOOL, "gen/mcpp.toml": GEN_TOOL["gen/mcpp.toml"].replace("[targets.gen]", "[targets.mkvalue]")}
    root = project({
        **tool,
        "app/mcpp.toml": """
            [package]
            name = "app"
            version = "0.1.0"
            [dependencies]
            gen = { path = "../gen" }
        """,
        "app/src/main.cpp": MAIN_PRINTS_VALUE,
        "app/build.star": """
            gen = mcpp.bin("mkvalue")
            out = mcpp.out_dir() + "/value.cpp"
            mcpp.action(id = "gen", argv = [gen, out, "11"], inputs = [], outputs = [out], tools = [gen], role = "source")
        """,
    })
    res = mcpp("run", cwd=root / "app")
    assert res.code == 0, res.err
    assert res.out.strip().splitlines()[-1] == "value=11"


@pytest.mark.parametrize("program, message", [
    ('mcpp.object(mcpp.out_dir() + "/nobody.o")',
     "package `p`: object `target/dev/.mcpp/gen/p/nobody.o` is not an output of any action its build program declares"),
    ('mcpp.action(id = "a", argv = ["/bin/true"], inputs = [], outputs = [mcpp.out_dir() + "/a.cpp"])',
     "package `p`, action `a`: output `target/dev/.mcpp/gen/p/a.cpp` is a source, and `role = \"object\"` links its outputs"),
    ('mcpp.action(id = "a", argv = ["/bin/true"], inputs = [], outputs = [mcpp.out_dir() + "/a.h"], role = "check")\n'
     'mcpp.object(mcpp.out_dir() + "/a.h")',
     "package `p`: `object(\"target/dev/.mcpp/gen/p/a.h\")` names a source or header"),
])
def test_outputs_consumed_wrongly_are_refused_by_name(project, mcpp: Mcpp, program, message):
    root = project({
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
        "src/main.cpp": "int main() { return 0; }\n",
        "build.star": program + "\n",
    })
    res = mcpp("build", cwd=root)
    assert res.code == 2, res.err
    assert message in res.err
    assert "Traceback" not in res.err
