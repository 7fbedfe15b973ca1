"""`mcpp test`: one binary per tests/*.cpp, per-test lines, a summary, exit 1 on failure."""
from __future__ import annotations

import json
import re

LIB = {
    "mcpp.toml": '[package]\nname = "mathx"\nversion = "0.1.0"\n\n[dev-dependencies]\nchecks = { path = "checks" }\n',
    "src/mathx.cppm": "export module mathx;\nexport namespace mathx { int square(int x) { return x * x; } }\n",
    "tests/square.cpp": '#include "check.hpp"\nimport mathx;\nint main() { return CHECK(mathx::square(3) == 9); }\n',
    "tests/negative.cpp": '#include "check.hpp"\nimport mathx;\nint main() { return CHECK(mathx::square(-2) == 4); }\n',
    "checks/mcpp.toml": '[package]\nname = "checks"\nversion = "0.1.0"\n[build]\ninclude_dirs = ["inc"]\nsources = []\n',
    "checks/inc/check.hpp": "#pragma once\n#include <cstdio>\n#define CHECK(c) ((c) ? 0 : (std::puts(\"check failed: \" #c), 1))\n",
}


def test_tests_pass_with_per_test_lines_and_a_summary(project, mcpp):
    root = project(LIB)
    res = mcpp("test", cwd=root)
    assert res.code == 0, res.err
    assert re.search(r"^negative \.\.\. ok \(\d+\.\d\ds\)$", res.out, re.M), res.out
    assert re.search(r"^square \.\.\. ok \(\d+\.\d\ds\)$", res.out, re.M)
    assert re.search(r"^test result: ok\. 2 passed; 0 failed; finished in \d+\.\d\ds$", res.out, re.M)


def test_a_failing_test_fails_the_run(project, mcpp):
    root = project({**LIB, "tests/broken.cpp": '#include "check.hpp"\nint main() { return CHECK(1 == 2); }\n'})
    res = mcpp("test", cwd=root)
    assert res.code == 1
    assert re.search(r"^broken \.\.\. FAIL \(exit 1, \d+\.\d\ds\)$", res.out, re.M), res.out
    assert "check failed: 1 == 2" in res.out
    assert "test result: FAILED. 2 passed; 1 failed;" in res.out


def test_pattern_filters_tests(project, mcpp):
    root = project(LIB)
    res = mcpp("test", "squ", cwd=root)
    assert res.code == 0
    assert "square ... ok" in res.out and "negative" not in res.out
    assert "1 passed; 0 failed" in res.out


def test_no_tests_found(project, mcpp):
    root = project({"mcpp.toml": '[package]\nname = "x"\nversion = "0.1.0"\n',
                    "src/main.cpp": "int main() {}\n"})
    res = mcpp("test", cwd=root)
    assert res.code == 0 and "no tests found" in res.err


def test_json_format_gives_one_object_per_test_then_a_summary(project, mcpp):
    root = project(LIB)
    res = mcpp("test", "--message-format", "json", cwd=root)
    assert res.code == 0
    tests = [e for e in res.events if e["reason"] == "test"]
    assert sorted((t["name"], t["ok"]) for t in tests) == [("negative", True), ("square", True)]
    summary = [e for e in res.events if e["reason"] == "test-summary"]
    assert summary and summary[0]["passed"] == 2 and summary[0]["failed"] == 0
    for line in res.out.splitlines():
        json.loads(line)  # stdout holds JSON only


def test_dev_dependencies_are_only_resolved_by_test(project, mcpp):
    root = project({**LIB, "tests/square.cpp": LIB["tests/square.cpp"]})
    res = mcpp("build", "--message-format", "json", cwd=root)
    assert res.code == 0
    assert not any(e.get("package") == "checks" for e in res.events if e["reason"] == "action-finished")
    # A plain build must not even need the dev-dependency to exist.
    import shutil
    shutil.rmtree(root / "checks")
    assert mcpp("build", cwd=root).code == 0
