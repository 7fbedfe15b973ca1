"""Package and target names never collide with mcpp's own folders: `target/<profile>/` holds the
final artifacts at its top and every engine folder under `.mcpp/` (engine/package/layout.py)."""
from __future__ import annotations

import subprocess


# A package `gen` with a dependency `lib`, a binary `obj` and a test `bmi`: each the name of a
# folder the engine once kept beside the artifacts (`gen/`, `lib/`, `obj/`, `bmi/`, `tests/`).
GEN = {
    "mcpp.toml": """
        [package]
        name = "gen"
        version = "0.1.0"

        [dependencies]
        lib = { path = "lib" }

        [targets.obj]
        main = "src/main.cpp"

        [targets.tests]
        main = "src/tests.cpp"
    """,
    "src/main.cpp": """
        #include <cstdio>
        #include "gen.h"
        #include "lib.h"
        int main() { std::printf("obj %d %d\\n", lib_value(), GENERATED); }
    """,
    "src/tests.cpp": """
        #include <cstdio>
        int main() { std::puts("a binary named tests"); }
    """,
    "build.star": """
        out = mcpp.out_dir()
        mcpp.write(out + "/gen.h", "#define GENERATED 7\\n")
        mcpp.include_dir(out)
    """,
    "tests/bmi.cpp": """
        #include "lib.h"
        int main() { return lib_value() == 42 ? 0 : 1; }
    """,
    "lib/mcpp.toml": """
        [package]
        name = "lib"
        version = "0.1.0"
    """,
    "lib/include/lib.h": "int lib_value();\n",
    "lib/src/lib.cpp": "int lib_value() { return 42; }\n",
}


def test_a_package_named_gen_with_a_dependency_named_lib_builds_runs_and_tests(project, mcpp):
    root = project(GEN, name="gen")
    res = mcpp("run", "obj", cwd=root)
    assert res.code == 0, res.err
    assert res.out == "obj 42 7\n"
    assert mcpp("run", "tests", cwd=root, check=True).out == "a binary named tests\n"
    out = root / "target" / "dev"
    assert (out / "obj").is_file() and (out / "tests").is_file() and (out / "liblib.a").is_file()
    # The engine's folders are all under .mcpp/: the top holds what the user asked for.
    assert sorted(p.name for p in out.iterdir()) == [".mcpp", "liblib.a", "obj", "tests"]
    test = mcpp("test", cwd=root)
    assert test.code == 0, test.out + test.err
    assert "bmi ... ok" in test.out
    assert (out / ".mcpp" / "tests" / "gen" / "bmi").is_file()
    assert (out / ".mcpp" / "gen" / "gen" / "gen.h").is_file()  # the build program's out_dir()
    # A second build of the same tree finds every path where it left it.
    again = mcpp("build", "--message-format", "json", cwd=root, env={"MCPP_NO_FAST_PATH": "1"})
    assert again.code == 0 and again.executed() == [], again.err


def test_new_accepts_the_names_the_layout_allows(tmp_path, mcpp):
    for name in ("gen", "obj", "lib", "bmi", "tests", "scan"):
        res = mcpp("new", name, "--vcs", "none", cwd=tmp_path)
        assert res.code == 0, res.err
        run = mcpp("run", cwd=tmp_path / name)
        assert run.code == 0 and run.out == "Hello, world!\n", run.err


def test_a_target_name_starting_with_a_dot_is_refused_where_it_is_written(project, mcpp):
    root = project({
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n\n[targets.".mcpp"]\nmain = "src/main.cpp"\n',
        "src/main.cpp": "int main() {}\n",
    })
    res = mcpp("build", cwd=root)
    assert res.code == 2
    assert res.err.startswith("mcpp.toml:5:10: error: target name `.mcpp` cannot start with `.`"), res.err
    assert not (root / "target").exists() or not (root / "target" / "dev" / ".mcpp" / "obj").exists()


def test_a_dependency_from_outside_the_workspace_archives_under_mcpp(project, mcpp):
    root = project({
        "app/mcpp.toml": '[package]\nname = "app"\nversion = "0.1.0"\n[dependencies]\nlib = { path = "../lib" }\n',
        "app/src/main.cpp": '#include <cstdio>\n#include "lib.h"\nint main() { std::printf("%d\\n", lib_value()); }\n',
        **{k: v for k, v in GEN.items() if k.startswith("lib/")},
    })
    assert mcpp("-q", "run", cwd=root / "app", check=True).out == "42\n"
    out = root / "app" / "target" / "dev"
    assert (out / ".mcpp" / "deps" / "liblib.a").is_file()
    assert sorted(p.name for p in out.iterdir()) == [".mcpp", "app"]
    assert subprocess.run([out / "app"], capture_output=True, text=True).stdout == "42\n"
