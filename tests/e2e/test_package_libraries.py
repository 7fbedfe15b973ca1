"""Several libraries in one package, as googletest's `gtest` and `gtest_main`: each `lib` target
with `sources` is a static library of its own, `deps` links one to another inside the package,
and a dependent chooses which of them it links with `libs` (by default the library named after
the package). `gtest_main.cc` is compiled once, into `gtest_main` only."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("ar") is None,
                                reason="needs g++ and binutils")

GTL = {
    "gtl/mcpp.toml": """
        [package]
        name = "gtl"
        version = "1.0.0"

        [build]
        include_dirs = ["include"]

        [targets.gtest]
        kind = "lib"
        sources = ["src/gtest-all.cc"]

        [targets.gtest_main]
        kind = "lib"
        sources = ["src/gtest_main.cc"]
        deps = ["gtest"]

        [targets.sample]
        main = "samples/sample.cc"
        deps = ["gtest_main"]
    """,
    "gtl/include/gtl/gtl.h": """
        #pragma once
        namespace gtl {
        using Fn = bool (*)();
        int add_test(const char* name, Fn fn);
        int run_all();
        }
        #define GTL_TEST(name) static bool name(); static int name##_reg = gtl::add_test(#name, name); \\
            static bool name()
    """,
    "gtl/src/gtest-all.cc": """
        #include <cstdio>
        #include "gtl/gtl.h"
        namespace gtl {
        static struct { const char* name; Fn fn; } tests[64];
        static int count = 0;
        int add_test(const char* name, Fn fn) { tests[count].name = name; tests[count].fn = fn; return ++count; }
        int run_all() {
            int failed = 0;
            for (int i = 0; i < count; ++i) {
                bool ok = tests[i].fn();
                std::printf("[%s] %s\\n", ok ? "  OK  " : " FAIL ", tests[i].name);
                failed += !ok;
            }
            std::printf("%d tests, %d failed\\n", count, failed);
            return failed != 0 || count == 0;
        }
        }
    """,
    "gtl/src/gtest_main.cc": '#include "gtl/gtl.h"\nint main() { return gtl::run_all(); }\n',
    "gtl/samples/sample.cc": '#include "gtl/gtl.h"\nGTL_TEST(sample_passes) { return 1 + 1 == 2; }\n',
}

APP = {
    "mcpp.toml": """
        [package]
        name = "app"
        version = "0.1.0"

        [dev-dependencies]
        gtl = { path = "gtl", libs = ["gtest_main"] }
    """,
    "src/twice.cc": "int twice(int x) { return 2 * x; }\n",
    "test/twice_test.cc": '#include "gtl/gtl.h"\nint twice(int);\nGTL_TEST(twice_of_two) { return twice(2) == 4; }\n'
                          'GTL_TEST(twice_of_zero) { return twice(0) == 0; }\n',
    "test/other_test.cc": '#include "gtl/gtl.h"\nint twice(int);\nGTL_TEST(twice_negative) { return twice(-1) == -2; }\n',
}


def members(archive) -> list[str]:
    return subprocess.run(["ar", "t", str(archive)], capture_output=True, text=True, check=True).stdout.split()


def test_a_test_links_gtest_main_only_and_gtest_main_is_compiled_once(project, mcpp):
    root = project({**GTL, **APP})
    res = mcpp("test", "--message-format", "json", cwd=root)
    assert res.code == 0, res.out + res.err
    tests = {e["name"]: e for e in res.events if e["reason"] == "test"}
    assert sorted(tests) == ["other_test", "twice_test"] and all(t["ok"] for t in tests.values())
    compiles = [e["id"] for e in res.events if e.get("reason") == "action-finished" and e.get("kind") == "compile"]
    assert [c for c in compiles if "gtest_main.cc" in c] == ["compile gtl:src/gtest_main.cc"]
    out = root / "target" / "dev"
    assert members(out / "libgtest_main.a") == ["gtest_main.cc.o"]
    assert members(out / "libgtest.a") == ["gtest-all.cc.o"]
    # the test's main is gtest_main's, which ran both registered tests
    run = subprocess.run([str(out / ".mcpp" / "tests" / "app" / "twice_test")], capture_output=True, text=True)
    assert run.returncode == 0 and "2 tests, 0 failed" in run.stdout, run.stdout


def test_a_target_links_a_library_of_its_own_package(project, mcpp):
    root = project(GTL)
    res = mcpp("build", cwd=root / "gtl")
    assert res.code == 0, res.err
    out = root / "gtl" / "target" / "dev"
    run = subprocess.run([str(out / "sample")], capture_output=True, text=True)
    assert run.returncode == 0 and "[  OK  ] sample_passes" in run.stdout, run.stdout
    assert members(out / "libgtest_main.a") == ["gtest_main.cc.o"]


NAMED = {
    # the library named after the package is its [build] sources (gtest-all.cc); gtest_main is
    # a library of its own that names it in `deps`
    "gtest/mcpp.toml": """
        [package]
        name = "gtest"
        version = "1.0.0"

        [build]
        include_dirs = ["include"]

        [targets.gtest_main]
        kind = "lib"
        sources = ["src/gtest_main.cc"]
        deps = ["gtest"]
    """,
    **{k.replace("gtl/", "gtest/", 1): v for k, v in GTL.items() if k.startswith("gtl/") and "mcpp.toml" not in k},
}


@pytest.mark.parametrize("libs", [None, '["gtest_main"]'])
def test_without_libs_a_dependent_links_the_library_named_after_the_package(project, mcpp, libs):
    entry = 'gtest = { path = "gtest" }' if libs is None else f'gtest = {{ path = "gtest", libs = {libs} }}'
    manifest = APP["mcpp.toml"].replace('gtl = { path = "gtl", libs = ["gtest_main"] }', entry)
    root = project({**NAMED, **APP, "mcpp.toml": manifest})
    res = mcpp("test", cwd=root)
    if libs is None:  # `gtest` alone has no `main`: the tests do not link
        assert res.code != 0 and "undefined reference to `main'" in res.err, res.err
    else:
        assert res.code == 0 and "2 passed" in res.out, res.out + res.err


def test_without_a_library_named_after_it_every_library_is_linked(project, mcpp):
    root = project({**GTL, **APP, "mcpp.toml": APP["mcpp.toml"].replace(', libs = ["gtest_main"]', "")})
    res = mcpp("test", cwd=root)
    assert res.code == 0 and "2 passed" in res.out, res.out + res.err


def test_an_unknown_library_in_libs_is_an_error_at_the_key(project, mcpp):
    root = project({**GTL, **APP, "mcpp.toml": APP["mcpp.toml"].replace('"gtest_main"', '"gmock"')})
    res = mcpp("test", cwd=root)
    assert res.code == 2, res.err
    assert re.search(r"mcpp\.toml:6:\d+: error: dependency `gtl` has no library `gmock` \(its libraries: "
                     r"gtest, gtest_main\)", res.err), res.err
    assert "Traceback" not in res.err
