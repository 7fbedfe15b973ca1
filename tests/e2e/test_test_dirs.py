"""Tests outside `tests/`: `test/` is discovered as `tests/` is (zlib, zlib-ng and googletest
keep their suites there), `[test] dirs` names other directories, and test-looking sources that
no rule builds are named in a warning rather than `mcpp test` passing with nothing run."""
from __future__ import annotations

import re

LIB = {
    "src/add.c": "int add(int a, int b) { return a + b; }\n",
    "src/add.h": "int add(int a, int b);\n",
}


def manifest(extra: str = "") -> str:
    return '[package]\nname = "adder"\nversion = "0.1.0"\n\n[build]\ninclude_dirs = ["src"]\n' + extra


CHECK = '#include "add.h"\nint main(void) { return add(2, 3) == 5 ? 0 : 1; }\n'


def test_sources_under_test_are_tests(project, mcpp):
    root = project({**LIB, "mcpp.toml": manifest(), "test/example.c": CHECK, "test/unit/more.c": CHECK})
    res = mcpp("test", cwd=root)
    assert res.code == 0, res.err
    assert re.search(r"^example \.\.\. ok", res.out, re.M), res.out
    assert re.search(r"^unit/more \.\.\. ok", res.out, re.M), res.out
    assert "2 passed; 0 failed" in res.out
    assert "warning" not in res.err


def test_a_test_in_test_and_one_in_tests_of_one_name_are_refused(project, mcpp):
    root = project({**LIB, "mcpp.toml": manifest(), "test/same.c": CHECK, "tests/same.c": CHECK})
    res = mcpp("test", cwd=root)
    assert res.code == 2, res.err
    assert "`tests/same.c` and `test/same.c`" in res.err and "Traceback" not in res.err


def test_test_dirs_names_the_directories(project, mcpp):
    root = project({**LIB, "mcpp.toml": manifest('\n[test]\ndirs = ["checks/unit"]\n'),
                    "checks/unit/one.c": CHECK, "test/other.c": CHECK})
    res = mcpp("test", cwd=root)
    assert res.code == 0, res.err
    assert re.search(r"^one \.\.\. ok", res.out, re.M), res.out
    assert "other ..." not in res.out and "1 passed" in res.out
    # `test/` is no longer a test directory: its source is named in a warning
    assert "warning: adder: `test/other.c` look like tests but no rule builds them" in res.err, res.err


def test_undiscovered_test_sources_are_named_in_a_warning(project, mcpp):
    root = project({**LIB, "mcpp.toml": manifest(), "unittests/add_unittest.cc": CHECK,
                    "src/parse_test.c": CHECK, "tools/gen.c": "int main(void) { return 0; }\n",
                    "mcpp.toml.in": ""})
    # src/parse_test.c is a library source (the default glob takes src/): built, so not named
    res = mcpp("test", cwd=root)
    assert res.code == 0 and "no tests found" in res.err, res.err
    warning = [line for line in res.err.splitlines() if "warning:" in line]
    assert len(warning) == 1, res.err
    assert "`unittests/add_unittest.cc`" in warning[0] and "[test] dirs" in warning[0]
    assert "parse_test" not in warning[0] and "tools/gen.c" not in warning[0]


def test_a_target_that_claims_a_test_looking_source_silences_the_warning(project, mcpp):
    root = project({**LIB, "mcpp.toml": manifest('\n[targets.check]\nkind = "test"\nmain = "unittests/add_test.c"\n'),
                    "unittests/add_test.c": CHECK})
    res = mcpp("test", cwd=root)
    assert res.code == 0, res.err
    assert "check ... ok" in res.out and "warning" not in res.err


def test_a_test_may_link_the_packages_shared_library(project, mcpp):
    import subprocess

    root = project({**LIB, "mcpp.toml": manifest('''
[targets.adder-shared]
kind = "shared"
soname = "libadder.so.1"
version = "1.0.0"

[targets.check]
kind = "test"
main = "test/check.c"
deps = ["adder-shared"]
'''), "test/check.c": CHECK})
    res = mcpp("test", "--sandbox", "bwrap", cwd=root)
    assert res.code == 0, res.out + res.err
    assert "check ... ok" in res.out
    binary = root / "target" / "dev" / ".mcpp" / "tests" / "adder" / "check"
    dynamic = subprocess.run(["readelf", "-d", "-W", str(binary)], capture_output=True, text=True, check=True).stdout
    assert "Shared library: [libadder.so.1]" in dynamic, dynamic
    # the library's code is in the shared library, not in the test
    symbols = subprocess.run(["nm", str(binary)], capture_output=True, text=True, check=True).stdout
    assert re.search(r"^\s+U add$", symbols, re.M), symbols


def test_a_test_directory_leading_out_of_the_package_is_refused(project, mcpp, tmp_path):
    import os

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "steal.c").write_text(CHECK)
    root = project({**LIB, "mcpp.toml": manifest('\n[test]\ndirs = ["suite"]\n')})
    os.symlink(outside, root / "suite")
    res = mcpp("test", cwd=root)
    assert res.code == 2, res.out + res.err
    assert "test directory `suite` of `adder` leads outside the package" in res.err and "Traceback" not in res.err
