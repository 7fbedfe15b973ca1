"""build.star programs and rule packages (DESIGN §6): the `mcpp` API, the evaluation cache,
errors at file:line:col, action roles, device sources and host-tool visibility."""
from __future__ import annotations

import shutil

import pytest

from tests.e2e.e2e_support import Mcpp

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

MAIN_PRINTS_VALUE = """
    #include <cstdio>
    extern "C" int value();
    int main() { std::printf("value=%d\\n", value()); }
"""

# A package with a generator tool: `gen OUT N` writes a C++ file defining value() = N.
GEN_TOOL = {
    "gen/mcpp.toml": """
        [package]
        name = "gen"
        version = "1.0.0"
        [targets.gen]
        kind = "bin"
        main = "src/main.cpp"
    """,
    "gen/src/main.cpp": """
        #include <cstdio>
        #include <cstdlib>
        int main(int argc, char** argv) {
            if (argc != 3) return 2;
            FILE* f = std::fopen(argv[1], "w");
            if (!f) return 3;
            std::fprintf(f, "extern \\"C\\" int value() { return %d; }\\n", std::atoi(argv[2]));
            return std::fclose(f) == 0 ? 0 : 4;
        }
    """,
}


def events(res, reason):
    return [e for e in res.events if e.get("reason") == reason]


def test_a_starlark_error_names_file_line_col_and_the_call_stack(project, mcpp: Mcpp):
    root = project({
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
        "src/main.cpp": "int main() { return 0; }\n",
        "build.star": "def helper(x):\n    return x + 1\n\ndef outer():\n    return helper('a')\n\nouter()\n",
    })
    res = mcpp("build", cwd=root)
    assert res.code == 2
    first = res.diagnostics.splitlines()[0]
    assert first.startswith("build.star:2:12: error: ") and "`+` not supported" in first, res.err
    assert "note: Starlark call stack (most recent call last):" in res.err
    assert "build.star:7, in <module>" in res.err and "build.star:5, in outer" in res.err
    assert "Traceback" not in res.err.replace("call stack", "")
    assert not (root / "target" / "dev" / "p").exists()


def test_a_parse_error_is_positioned(project, mcpp: Mcpp):
    root = project({
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
        "src/main.cpp": "int main() { return 0; }\n",
        "build.star": "x = [1,\n  2\ny = 3\n",
    })
    res = mcpp("build", cwd=root)
    assert res.code == 2
    assert res.diagnostics.startswith("build.star:"), res.err
    assert "error: Parse error" in res.err


@pytest.mark.parametrize("call,message", [
    ('mcpp.action(id = "a", argv = ["/bin/true"], inputs = [], outputs = [])',
     "package `p`, action `a`: declares no outputs"),
    ('mcpp.action(id = "b", argv = ["/bin/true"], inputs = [], outputs = ["src/x.o"])',
     "package `p`, action `b`: output `src/x.o` is outside out_dir()"),
    ('mcpp.action(id = "c", argv = ["/bin/true"], inputs = [], outputs = [mcpp.out_dir() + "/c"], role = "weird")',
     "package `p`, action `c`: unknown role `weird` (expected one of: source, object, check, artifact)"),
], ids=["no-outputs", "outside-out-dir", "unknown-role"])
def test_a_malformed_action_names_the_package_and_the_action(project, mcpp: Mcpp, call, message):
    root = project({
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
        "src/main.cpp": "int main() { return 0; }\n",
        "build.star": f"x = 1\n{call}\n",
    })
    res = mcpp("build", cwd=root)
    assert res.code == 2
    assert res.diagnostics.startswith("build.star:2:1: error: " + message), res.err


def test_roles_flags_and_the_evaluation_cache(project, mcpp: Mcpp):
    """`object` joins the link, `artifact` runs after it; flags reach the compile;
    a second build reuses the evaluation and replays its warning; a read file re-evaluates."""
    root = project({
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
        "src/main.cpp": """
            #include <cstdio>
            extern "C" int value();
            int main() { std::printf("value=%d flag=%d\\n", value(), FROM_PROGRAM); }
        """,
        "extra/value.c.in": "int value(void) { return 5; }\n",
        "config.txt": "FROM_PROGRAM=3\n",
        "build.star": """
            out = mcpp.out_dir()
            mcpp.define(mcpp.read_file("config.txt").strip())
            mcpp.warning("configured " + mcpp.package_name() + " for " + mcpp.profile())
            mcpp.action(id = "value", argv = ["/usr/bin/gcc", "-x", "c", "-c", "extra/value.c.in", "-o", out + "/value.o"],
                        inputs = ["extra/value.c.in"], outputs = [out + "/value.o"], tools = ["/usr/bin/gcc"],
                        role = "object")
            binary = mcpp.manifest_dir() + "/target/" + mcpp.profile() + "/p"
            mcpp.action(id = "copy", argv = ["/bin/cp", binary, out + "/p.copy"], inputs = [binary],
                        outputs = [out + "/p.copy"], tools = ["/bin/cp"], role = "artifact")
        """,
    })
    res = mcpp("run", cwd=root)
    assert res.code == 0, res.err
    assert res.out.strip().splitlines()[-1] == "value=5 flag=3"
    assert "warning: p: configured p for dev" in res.err
    assert (root / "target/dev/.mcpp/gen/p/p.copy").read_bytes() == (root / "target/dev/p").read_bytes()

    again = mcpp.build_json("build", cwd=root)
    assert [e["cached"] for e in events(again, "build-program")] == [True]
    assert "warning: p: configured p for dev" in again.err  # replayed from the cache
    assert again.executed() == []

    (root / "config.txt").write_text("FROM_PROGRAM=4\n")
    third = mcpp.build_json("run", cwd=root)
    assert [e["cached"] for e in events(third, "build-program")] == [False]
    assert third.out.strip().splitlines()[-1] == "value=5 flag=4"


def test_a_check_action_runs_and_its_failure_fails_the_build(project, mcpp: Mcpp):
    root = project({
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
        "src/main.cpp": "int main() { return 0; }\n",
        "data.txt": "ok\n",
        "build.star": """
            stamp = mcpp.out_dir() + "/checked"
            mcpp.action(id = "has-ok", argv = ["/bin/cp", "data.txt", stamp], inputs = ["data.txt"],
                        outputs = [stamp], tools = ["/bin/cp"], role = "check")
            mcpp.action(id = "fails", argv = ["/bin/false"], inputs = [], outputs = [stamp + "2"],
                        tools = ["/bin/false"], role = "check") if mcpp.rerun_if_env_changed("FAIL_CHECK") else None
        """,
    })
    res = mcpp("build", cwd=root)
    assert res.code == 0, res.err
    assert (root / "target/dev/.mcpp/gen/p/checked").read_text() == "ok\n"
    res = mcpp("build", cwd=root, env={"FAIL_CHECK": "1"})
    assert res.code == 1
    assert "rule p:fails" in res.err


def test_an_unclaimed_device_source_is_refused_by_name(project, mcpp: Mcpp):
    root = project({
        "rules/mcpp.toml": """
            [package]
            name = "rules"
            version = "0.1.0"
            [features.dev]
            sources = ["src/rules.star"]
            rule_module = "my.rules"
            device_extensions = [".dev"]
        """,
        "rules/src/rules.star": "def nothing():\n    pass\n",
        "app/mcpp.toml": """
            [package]
            name = "app"
            version = "0.1.0"
            [dependencies]
            rules = { path = "../rules", features = ["dev"] }
            [build]
            sources = ["src/*.cpp", "src/*.dev"]
        """,
        "app/src/main.cpp": "int main() { return 0; }\n",
        "app/src/k.dev": "anything\n",
        "app/build.star": 'load("my.rules", "nothing")\nnothing()\n',
    })
    res = mcpp("build", cwd=root / "app")
    assert res.code == 2
    assert "device source `src/k.dev` is not claimed by any action" in res.err
    assert "`.dev` is a device extension of `my.rules`" in res.err


def test_a_rule_module_may_load_only_the_engine_library(project, mcpp: Mcpp):
    root = project({
        "rules/mcpp.toml": """
            [package]
            name = "rules"
            version = "0.1.0"
            [features.r]
            sources = ["src/r.star"]
            rule_module = "my.r"
        """,
        "rules/src/r.star": 'load("@mcpp//paths.star", "paths")\nload("other.module", "x")\ndef f():\n    pass\n',
        "app/mcpp.toml": """
            [package]
            name = "app"
            version = "0.1.0"
            [dependencies]
            rules = { path = "../rules", features = ["r"] }
        """,
        "app/src/main.cpp": "int main() { return 0; }\n",
        "app/build.star": 'load("my.r", "f")\nf()\n',
    })
    res = mcpp("build", cwd=root / "app")
    assert res.code == 2
    assert "rule module 'my.r' loads 'other.module'; a rule file may load `//<path>.star` files" in res.err
    assert "rules/src/r.star:2:1: error:" in res.diagnostics.splitlines()[0], res.err
    assert "Rules my.r (rules)" in res.err


def _tool_projects(project, reexport: bool, activate: bool, app_program: bool = True):
    files = {
        **GEN_TOOL,
        "rules/mcpp.toml": f"""
            [package]
            name = "rules"
            version = "0.1.0"
            [features.gen]
            sources = ["src/gen.star"]
            rule_module = "gen.rules"
            [feature-deps.gen]
            gen = {{ path = "../gen", tools = ["gen"], reexport = {str(reexport).lower()} }}
        """,
        "rules/src/gen.star": """
            def generate(n):
                gen = mcpp.dep_bin("gen", "gen")
                out = mcpp.out_dir() + "/value.cpp"
                mcpp.action(id = "gen", argv = [gen, out, str(n)], inputs = [], outputs = [out], tools = [gen],
                            role = "source")
        """,
        "app/mcpp.toml": f"""
            [package]
            name = "app"
            version = "0.1.0"
            [dependencies]
            rules = {{ path = "../rules"{', features = ["gen"]' if activate else ''} }}
        """,
        "app/src/main.cpp": MAIN_PRINTS_VALUE if app_program else "int main() { return 0; }\n",
    }
    if app_program:
        files["app/build.star"] = 'load("gen.rules", "generate")\ngenerate(7)\n'
    return project(files)


def test_a_reexported_tool_reaches_the_consumer(project, mcpp: Mcpp):
    root = _tool_projects(project, reexport=True, activate=True)
    res = mcpp("run", cwd=root / "app")
    assert res.code == 0, res.err
    assert "Building host tool gen:gen from gen v1.0.0" in res.err
    assert res.out.strip().splitlines()[-1] == "value=7"


def test_without_reexport_the_tool_stays_with_the_declaring_package(project, mcpp: Mcpp):
    root = _tool_projects(project, reexport=False, activate=True)
    res = mcpp("build", cwd=root / "app")
    assert res.code == 2
    assert "no host tool `gen:gen` reaches package `app`" in res.err
    assert "rules/src/gen.star:2:11: error: no host tool" in res.diagnostics.splitlines()[0], res.err


def test_a_consumer_that_does_not_activate_the_feature_builds_no_tool(project, mcpp: Mcpp):
    root = _tool_projects(project, reexport=True, activate=False, app_program=False)
    res = mcpp("build", cwd=root / "app")
    assert res.code == 0, res.err
    assert "Building host tool" not in res.err
    assert not list((mcpp.home / "tool").glob("*/gen@*"))


def test_floors_are_compared_with_facts_before_compiling(project, mcpp: Mcpp):
    root = project({
        "lib/mcpp.toml": '[package]\nname = "lib"\nversion = "0.1.0"\n',
        "lib/src/lib.cpp": "int f() { return 1; }\n",
        "lib/build.star": 'mcpp.fact("lib-abi", "2.1")\n',
        "app/mcpp.toml": '[package]\nname = "app"\nversion = "0.1.0"\n[dependencies]\nlib = { path = "../lib" }\n',
        "app/src/main.cpp": "int main() { return 0; }\n",
        "app/build.star": 'mcpp.floor("lib-abi >= 3.0")\n',
    })
    res = mcpp("build", cwd=root / "app")
    assert res.code == 2
    assert "package `app` requires `lib-abi >= 3.0`, but `lib` states lib-abi 2.1" in res.err
    assert "Compiling" not in res.err
    (root / "app/build.star").write_text('mcpp.floor("lib-abi >= 2.0")\n')
    assert mcpp("build", cwd=root / "app").code == 0


def test_a_floor_no_program_states_a_fact_for_is_reported_not_enforced(project, mcpp: Mcpp):
    """A probe that cannot answer (no driver on this machine) states no fact: the build goes on."""
    root = project({
        "mcpp.toml": '[package]\nname = "app"\nversion = "0.1.0"\n',
        "src/main.cpp": "int main() { return 0; }\n",
        "build.star": 'mcpp.floor("gpu.driver >= 13.0")\n',
    })
    res = mcpp("build", cwd=root)
    assert res.code == 0, res.err
    assert "warning: app: requires `gpu.driver >= 13.0`, and no build program states a fact `gpu.driver`: " \
           "not enforced" in res.err


def test_reads_stay_inside_the_package(project, mcpp: Mcpp):
    root = project({
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
        "src/main.cpp": "int main() { return 0; }\n",
        "build.star": 'mcpp.read_file("/etc/passwd")\n',
    })
    res = mcpp("build", cwd=root)
    assert res.code == 2
    assert "a build program reads only files of its own package" in res.err


def test_generated_source_include_dir_flags_and_link_libraries(project, mcpp: Mcpp, tmp_path):
    """`generated()`, `source()`, `include_dir()`, `cflag()`/`cxxflag()`, `link_search()` and
    `link_lib()` each reach the compile or the link (under the default sandbox)."""
    root = project({
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
        "src/main.cpp": """
            #include <cstdio>
            #include "val.h"
            extern "C" int from_gen();
            extern "C" int from_extra();
            extern "C" int from_c();
            extern "C" int from_vendor();
            int main() { std::printf("%d %d %d %d %d %d\\n", from_gen(), from_extra(), from_c(), VAL, CXX_ONLY,
                                     from_vendor()); }
        """,
        "src/part.c": "int from_c(void) { return C_ONLY; }\n",
        "tmpl/gen.cpp.in": 'extern "C" int from_gen() { return 1; }\n',
        "extra/extra.cpp": 'extern "C" int from_extra() { return 2; }\n',
        "inc/val.h": "#define VAL 4\n",
        "build.star": """
            gen = mcpp.out_dir() + "/gen.cpp"
            mcpp.action(id = "gen", argv = ["/bin/cp", "tmpl/gen.cpp.in", gen], inputs = ["tmpl/gen.cpp.in"],
                        outputs = [gen], tools = ["/bin/cp"], role = "check")
            mcpp.generated(gen)
            mcpp.source("extra/extra.cpp")
            mcpp.include_dir("inc")
            mcpp.cflag("-DC_ONLY=3")
            mcpp.cxxflag("-DCXX_ONLY=5")
            mcpp.link_search("vendor")
            mcpp.link_lib("vendor")
        """,
    })
    (root / "vendor").mkdir()
    (tmp_path / "v.c").write_text("int from_vendor(void) { return 6; }\n")
    import subprocess
    subprocess.run(["gcc", "-c", str(tmp_path / "v.c"), "-o", str(tmp_path / "v.o")], check=True)
    subprocess.run(["ar", "rcs", str(root / "vendor/libvendor.a"), str(tmp_path / "v.o")], check=True)
    res = mcpp("run", cwd=root)
    assert res.code == 0, res.err
    assert res.out.strip().splitlines()[-1] == "1 2 3 4 5 6"


def test_a_generated_header_in_an_include_dir_reaches_the_compile(project, mcpp: Mcpp):
    root = project({
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
        "src/main.cpp": '#include <cstdio>\n#include "version.h"\nint main() { std::printf("%s\\n", VERSION); }\n',
        "version.txt": '#define VERSION "1.2.3"\n',
        "build.star": """
            inc = mcpp.out_dir() + "/include"
            mcpp.action(id = "version.h", argv = ["/bin/cp", "version.txt", inc + "/version.h"],
                        inputs = ["version.txt"], outputs = [inc + "/version.h"], tools = ["/bin/cp"], role = "check")
            mcpp.include_dir(inc)
        """,
    })
    res = mcpp("run", cwd=root)
    assert res.code == 0, res.err
    assert res.out.strip().splitlines()[-1] == "1.2.3"
    (root / "version.txt").write_text('#define VERSION "1.2.4"\n')
    res = mcpp("run", cwd=root)
    assert res.out.strip().splitlines()[-1] == "1.2.4"


def test_manifest_errors_of_rule_packages_and_tool_entries_are_positioned(project, mcpp: Mcpp):
    root = _tool_projects(project, reexport=True, activate=True)
    rules = root / "rules/mcpp.toml"
    rules.write_text(rules.read_text().replace('tools = ["gen"]', 'tools = ["nope"]'))
    res = mcpp("build", cwd=root / "app")
    assert res.code == 2
    assert "error: `gen` has no `kind = \"bin\"` target named `nope` (its bin targets: gen)" in res.err
    assert "mcpp.toml:" in res.diagnostics.splitlines()[0]

    rules.write_text(rules.read_text().replace('tools = ["nope"]', 'tools = ["gen"]')
                     .replace('sources = ["src/gen.star"]', 'sources = []'))
    res = mcpp("build", cwd=root / "app")
    assert res.code == 2
    assert "feature `gen` declares rule_module = \"gen.rules\", which needs one `.star` file" in res.err
    assert "Building host tool" not in res.err


def test_a_missing_input_or_tool_is_an_error_not_a_traceback(project, mcpp: Mcpp):
    root = project({
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
        "src/main.cpp": "int main() { return 0; }\n",
        "build.star": """
            o = mcpp.out_dir() + "/x"
            mcpp.action(id = "x", argv = ["/bin/cp", "missing.txt", o], inputs = ["missing.txt"], outputs = [o],
                        tools = ["/bin/cp"], role = "check")
        """,
    })
    res = mcpp("build", cwd=root)
    assert res.code == 2
    assert res.diagnostics.startswith("build.star:2:1: error: package `p`, action `x`: input `missing.txt` does not "
                                      "exist"), res.err
    (root / "build.star").write_text(
        'o = mcpp.out_dir() + "/x"\n'
        'mcpp.action(id = "x", argv = ["/no/such/tool", o], inputs = [], outputs = [o], role = "check")\n')
    res = mcpp("build", cwd=root)
    assert res.code == 1
    assert "error: action rule p:x could not start '/no/such/tool': No such file or directory" in res.err
    assert "Traceback" not in res.err
