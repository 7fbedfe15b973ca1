"""`mcpp test` as real suites need it: tests in subdirectories of `tests/`, C tests, each test run
in its package's root with `MCPP_MANIFEST_DIR` set (fixtures by relative path, as Cargo), a notice
for a test running long and a timeout that kills it, and a header-only library whose
doctest-style suite lives in nested directories."""
from __future__ import annotations

import re
import time

# A tiny doctest-like framework, as a suite vendors one under `tests/`: TEST_CASE registers a
# function by static initialisation, CHECK counts failures, and the header supplies `main`.
TINYTEST = r"""
    #pragma once
    #include <cstdio>
    #include <vector>
    namespace tinytest {
    struct Case { const char* name; void (*fn)(); };
    inline std::vector<Case>& cases() { static std::vector<Case> v; return v; }
    inline int& failures() { static int n = 0; return n; }
    struct Reg { Reg(const char* n, void (*f)()) { cases().push_back({n, f}); } };
    }
    #define TT_CAT2(a, b) a##b
    #define TT_CAT(a, b) TT_CAT2(a, b)
    #define TEST_CASE_IMPL(fn, name) static void fn(); \
        static tinytest::Reg TT_CAT(fn, _reg)(name, fn); static void fn()
    #define TEST_CASE(name) TEST_CASE_IMPL(TT_CAT(tt_case_, __LINE__), name)
    #define CHECK(...) do { if (!(__VA_ARGS__)) { ++tinytest::failures(); \
        std::printf("%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #__VA_ARGS__); } } while (0)
    int main() {
        for (auto& c : tinytest::cases()) c.fn();
        std::printf("[tinytest] %zu cases, %d failed\n", tinytest::cases().size(), tinytest::failures());
        return tinytest::failures() != 0;
    }
"""

HEADER_ONLY = {
    "mcpp.toml": '[package]\nname = "strx"\nversion = "0.1.0"\n\n[build]\nsources = []\n',
    "include/strx/strx.hpp": """
        #pragma once
        #include <string>
        namespace strx {
        inline std::string upper(std::string s) { for (auto& c : s) if (c >= 'a' && c <= 'z') c -= 32; return s; }
        template <class T> T sum(const T* p, int n) { T t{}; for (int i = 0; i < n; ++i) t += p[i]; return t; }
        }
    """,
    "tests/support/tinytest.h": TINYTEST,
    "tests/unit/test_upper.cpp": """
        #include <strx/strx.hpp>
        #include "../support/tinytest.h"
        TEST_CASE("upper") { CHECK(strx::upper("abc") == "ABC"); }
        TEST_CASE("upper keeps digits") { CHECK(strx::upper("a1") == "A1"); }
    """,
    "tests/unit/algo/test_sum.cpp": """
        #include <strx/strx.hpp>
        #include "../../support/tinytest.h"
        TEST_CASE("sum") { int v[] = {1, 2, 3}; CHECK(strx::sum(v, 3) == 6); }
    """,
}


def test_a_header_only_library_runs_its_nested_doctest_style_suite(project, mcpp):
    root = project(HEADER_ONLY)
    res = mcpp("test", cwd=root)
    assert res.code == 0, res.out + res.err
    assert re.search(r"^unit/test_upper \.\.\. ok \(", res.out, re.M), res.out
    assert re.search(r"^unit/algo/test_sum \.\.\. ok \(", res.out, re.M), res.out
    assert "2 passed; 0 failed" in res.out

    # A failing case deep in the tree fails the run and shows the framework's report.
    (root / "tests/unit/algo/test_sum.cpp").write_text(
        '#include <strx/strx.hpp>\n#include "../../support/tinytest.h"\n'
        'TEST_CASE("sum") { int v[] = {1, 2}; CHECK(strx::sum(v, 2) == 4); }\n')
    res = mcpp("test", "algo", cwd=root)
    assert res.code == 1
    assert re.search(r"^unit/algo/test_sum \.\.\. FAIL \(exit 1, ", res.out, re.M), res.out
    assert "CHECK(strx::sum(v, 2) == 4) failed" in res.out and "1 cases, 1 failed" in res.out


C_PKG = {
    "mcpp.toml": '[package]\nname = "cfix"\nversion = "0.1.0"\n\n[build]\ninclude_dirs = ["include"]\n',
    "include/cfix.h": "int cfix_count(const char *text);\n",
    "src/cfix.c": '#include "cfix.h"\nint cfix_count(const char *t) { int n = 0; while (*t) n += *t++ == \'\\n\'; return n; }\n',
    "tests/data/three_lines.txt": "a\nb\nc\n",
    # Opens its fixture by a path relative to the package root, as a Cargo test does.
    "tests/io/fixture.c": r"""
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <unistd.h>
        #include "cfix.h"
        int main(void) {
            char buf[256] = {0}, cwd[4096];
            FILE *f = fopen("tests/data/three_lines.txt", "r");
            if (!f) { puts("fixture not found"); return 1; }
            fread(buf, 1, sizeof buf - 1, f);
            fclose(f);
            const char *dir = getenv("MCPP_MANIFEST_DIR");
            if (!dir || !getcwd(cwd, sizeof cwd) || strcmp(dir, cwd) != 0) { printf("dir=%s cwd=%s\n", dir, cwd); return 1; }
            return cfix_count(buf) == 3 ? 0 : 1;
        }
    """,
}


def test_c_tests_in_subdirectories_run_in_the_package_root(project, mcpp):
    root = project(C_PKG)
    # Started from a subdirectory: the test still finds its fixture relative to the package.
    res = mcpp("test", cwd=root / "src")
    assert res.code == 0, res.out + res.err
    assert re.search(r"^io/fixture \.\.\. ok \(", res.out, re.M), res.out


def test_a_failing_c_test_is_reported_as_a_failure(project, mcpp):
    root = project({**C_PKG, "tests/broken.c": '#include <stdio.h>\nint main(void) { puts("boom"); return 3; }\n'})
    res = mcpp("test", cwd=root)
    assert res.code == 1, res.out + res.err
    assert "no tests found" not in res.err
    assert re.search(r"^broken \.\.\. FAIL \(exit 3, ", res.out, re.M), res.out
    assert "    boom" in res.out
    assert "1 passed; 1 failed" in res.out


def test_a_c_and_a_cxx_test_of_one_name_are_an_error(project, mcpp):
    root = project({**C_PKG, "tests/io/fixture.cpp": "int main() {}\n"})
    res = mcpp("test", cwd=root)
    assert res.code == 2, res.out + res.err
    assert "tests/io/fixture.c" in res.err and "tests/io/fixture.cpp" in res.err and "Traceback" not in res.err


SLOW = {
    "mcpp.toml": '[package]\nname = "slow"\nversion = "0.1.0"\n',
    "tests/naps.c": "#include <unistd.h>\nint main(void) { usleep(1500000); return 0; }\n",
    # Forks a child that would outlive it: the timeout kills both.
    "tests/hangs.c": "#include <unistd.h>\nint main(void) { if (fork() == 0) { pause(); } pause(); return 0; }\n",
}


def test_a_slow_test_gets_a_notice_and_a_hung_one_is_killed_at_the_timeout(project, mcpp):
    root = project(SLOW)
    env = {"MCPP_TEST_SLOW_NOTICE": "0.5"}
    res = mcpp("test", "naps", cwd=root, env=env)
    assert res.code == 0, res.out + res.err
    assert res.out.count("naps has been running for over 0.5 s") == 1, res.out
    assert re.search(r"^naps \.\.\. ok \(1\.\d\ds\)$", res.out, re.M), res.out

    t0 = time.monotonic()
    res = mcpp("test", "--timeout", "1", "hangs", cwd=root, env=env, timeout=60)
    assert time.monotonic() - t0 < 30
    assert res.code == 1, res.out + res.err
    assert re.search(r"^hangs \.\.\. FAIL \(timed out after 1 s, 1\.\d\ds\)$", res.out, re.M), res.out
    assert "hangs has been running for over 0.5 s" in res.out
    assert "0 passed; 1 failed" in res.out

    # The default notice is at 60 s: a 1.5 s test gets none.
    res = mcpp("test", "naps", cwd=root)
    assert res.code == 0 and "running for over" not in res.out, res.out


def test_json_reports_a_timeout(project, mcpp):
    root = project(SLOW)
    res = mcpp("test", "hangs", "--timeout", "0.5", "--message-format", "json", cwd=root, timeout=60)
    assert res.code == 1
    [event] = [e for e in res.events if e["reason"] == "test"]
    assert event["name"] == "hangs" and event["ok"] is False and event["timed_out"] is True


def test_a_bad_slow_notice_setting_is_a_user_error(project, mcpp):
    root = project(SLOW)
    res = mcpp("test", "naps", cwd=root, env={"MCPP_TEST_SLOW_NOTICE": "soon"})
    assert res.code == 2 and "MCPP_TEST_SLOW_NOTICE" in res.err and "Traceback" not in res.err


def test_a_test_target_with_its_own_sources_and_defines_runs_once(project, mcpp):
    """A `kind = "test"` target in a nested directory: its helper source is part of it (not a
    test of its own), its define reaches its sources only, and it runs in the package root."""
    files = {
        **C_PKG,
        "mcpp.toml": C_PKG["mcpp.toml"] + """
[targets.golden]
kind = "test"
main = "tests/golden/main.c"
sources = ["tests/golden/expect.c"]
defines = ["GOLDEN_LINES=3"]
""",
        "tests/golden/main.c": r"""
            #include <stdio.h>
            #include "cfix.h"
            int expected(void);
            int main(void) {
                char buf[64] = {0};
                FILE *f = fopen("tests/data/three_lines.txt", "r");
                if (!f) return 2;
                fread(buf, 1, sizeof buf - 1, f);
                return cfix_count(buf) == expected() ? 0 : 1;
            }
        """,
        "tests/golden/expect.c": "int expected(void) { return GOLDEN_LINES; }\n",
    }
    root = project(files)
    res = mcpp("test", cwd=root)
    assert res.code == 0, res.out + res.err
    assert re.search(r"^golden \.\.\. ok \(", res.out, re.M), res.out
    assert "golden/expect" not in res.out and "golden/main" not in res.out
    assert "2 passed; 0 failed" in res.out
