"""Everyday commands behave as a Cargo user expects: release asserts, crash reports, clean, -j 0,
toolchain names, `mcpp new`/`init`, pasteable -v commands, explain, metadata and cache reports."""
from __future__ import annotations

MANIFEST = '[package]\nname = "x"\nversion = "0.1.0"\n'


def test_release_defines_ndebug_and_dev_does_not(project, mcpp):
    root = project({"mcpp.toml": MANIFEST,
                    "src/main.cpp": "int main() {\n#ifdef NDEBUG\n    return 3;\n#else\n    return 0;\n#endif\n}\n"})
    assert mcpp("run", cwd=root).code == 0
    assert mcpp("run", "--release", cwd=root).code == 3


def test_run_reports_a_program_killed_by_a_signal(project, mcpp):
    root = project({"mcpp.toml": MANIFEST,
                    "src/main.cpp": "#include <cstdlib>\nint main() { std::abort(); }\n"})
    res = mcpp("run", cwd=root)
    assert res.code == 128 + 6
    assert "process didn't exit successfully: `" in res.err
    assert "(signal: 6, SIGABRT)" in res.err


def test_clean_is_silent_when_there_is_nothing_to_remove(project, mcpp):
    root = project({"mcpp.toml": MANIFEST, "src/main.cpp": "int main() {}\n"})
    res = mcpp("clean", cwd=root)
    assert res.code == 0 and "Removed" not in res.out + res.err
    mcpp("build", cwd=root, check=True)
    res = mcpp("clean", cwd=root)
    assert res.code == 0 and "Removed" in res.out


def test_jobs_zero_means_all_cores(project, mcpp):
    root = project({"mcpp.toml": MANIFEST, "src/main.cpp": "int main() {}\n"})
    assert mcpp("build", "-j", "0", cwd=root).code == 0
    assert mcpp("-j", "0", "build", cwd=root).code == 0
    res = mcpp("build", "-j", "-1", cwd=root)
    assert res.code == 2 and "0 for all cores" in res.err


def test_toolchain_clang_resolves_to_the_newest_versioned_clang(project, mcpp):
    import glob
    import shutil

    import pytest

    if shutil.which("clang++") or not glob.glob("/usr/bin/clang++-[0-9]*"):
        pytest.skip("needs only versioned clang drivers (clang++-NN) on PATH")
    newest = max(int(p.rsplit("-", 1)[1]) for p in glob.glob("/usr/bin/clang++-[0-9]*"))
    root = project({"mcpp.toml": MANIFEST, "src/main.cpp": "int main() { return __clang__ ? 0 : 1; }\n"})
    res = mcpp("run", "-v", "--toolchain", "clang", cwd=root)
    assert res.code == 0, res.err
    assert f"clang++-{newest}" in res.out + res.err
    res = mcpp("build", "--toolchain", "clang-3", cwd=root)
    assert res.code == 2 and "`clang-3` was not found" in res.err
