"""Incrementality from action keys: exactly the affected actions run, nothing on a no-op."""
from __future__ import annotations

import os
import re
import shutil

import pytest

from mcpp.cas.statcache import StatCache, stat_key

PROJECT = {
    "mcpp.toml": """
        [package]
        name = "calc"
        version = "0.1.0"

        [features]
        loud = { defines = ["LOUD=1"] }
    """,
    "src/main.cpp": """
        #include <cstdio>
        #include "ops.hpp"
        int main() {
        #ifdef LOUD
            std::puts("LOUD");
        #endif
            std::printf("%d %d\\n", add(2, 3), mul(2, 3));
        }
    """,
    "src/add.cpp": '#include "ops.hpp"\nint add(int a, int b) { return a + b; }\n',
    "src/mul.cpp": '#include "mul_impl.hpp"\nint mul(int a, int b) { return MUL(a, b); }\n',
    "src/ops.hpp": "#pragma once\nint add(int, int);\nint mul(int, int);\n",
    "src/mul_impl.hpp": "#pragma once\n#define MUL(a, b) ((a) * (b))\n",
}


@pytest.fixture
def calc(project, mcpp):
    root = project(PROJECT)
    res = mcpp.build_json(cwd=root)
    assert sorted(res.executed("compile")) == [f"compile calc:src/{n}.cpp" for n in ("add", "main", "mul")]
    return root


def test_noop_build_runs_nothing_and_says_finished_fast(calc, mcpp):
    res = mcpp.build_json(cwd=calc)
    assert res.executed() == []
    assert res.events[-1]["files_hashed"] == 0  # a no-op stats each input and hashes nothing
    human = mcpp("build", cwd=calc)
    assert re.search(r"Finished dev \[unoptimized \+ debuginfo\] in \d+\.\d\ds", human.err), human.err
    assert "Compiling" not in human.err


def test_editing_one_source_recompiles_it_and_relinks(calc, mcpp):
    src = calc / "src" / "add.cpp"
    src.write_text(src.read_text().replace("a + b", "b + a + 0"))
    res = mcpp.build_json(cwd=calc)
    assert res.executed("compile") == ["compile calc:src/add.cpp"]
    assert res.executed("link") == ["link calc:calc"]


def test_touch_without_change_runs_nothing(calc, mcpp):
    import os
    os.utime(calc / "src" / "add.cpp")
    assert mcpp.build_json(cwd=calc).executed() == []


def test_editing_a_header_recompiles_exactly_its_dependents(calc, mcpp):
    hdr = calc / "src" / "mul_impl.hpp"
    hdr.write_text(hdr.read_text().replace("((a) * (b))", "((b) * (a))"))
    assert mcpp.build_json(cwd=calc).executed("compile") == ["compile calc:src/mul.cpp"]
    hdr = calc / "src" / "ops.hpp"
    hdr.write_text(hdr.read_text() + "// a comment\n")
    assert sorted(mcpp.build_json(cwd=calc).executed("compile")) == [
        "compile calc:src/add.cpp", "compile calc:src/main.cpp"]


def test_feature_change_rebuilds_what_it_affects_and_the_program_follows(calc, mcpp):
    res = mcpp.build_json("build", "--features", "loud", cwd=calc)
    assert len(res.executed("compile")) == 3  # a new define changes every command line
    out = mcpp("run", "--features", "loud", cwd=calc).out
    assert "LOUD\n5 6" in out
    assert "LOUD" not in mcpp("run", cwd=calc).out


def test_flag_change_in_manifest_rebuilds(calc, mcpp):
    manifest = calc / "mcpp.toml"
    manifest.write_text(manifest.read_text() + '\n[build]\ncxxflags = ["-Wall"]\n')
    assert len(mcpp.build_json(cwd=calc).executed("compile")) == 3
    assert mcpp.build_json(cwd=calc).executed() == []


def test_release_profile_builds_separately(calc, mcpp):
    res = mcpp("build", "--release", cwd=calc)
    assert "Finished release [optimized] in" in res.err
    assert (calc / "target" / "release" / "calc").is_file()
    assert mcpp.build_json(cwd=calc).executed() == []  # dev is still up to date


def test_deleted_output_is_restored_from_the_cache(calc, mcpp):
    (calc / "target" / "dev" / "calc").unlink()
    res = mcpp.build_json(cwd=calc)
    assert res.executed() == []
    assert [e["id"] for e in res.events if e.get("status") == "cached"] == ["link calc:calc"]
    assert (calc / "target" / "dev" / "calc").is_file()


def test_compile_error_is_printed_once_and_exit_code_is_1(calc, mcpp):
    src = calc / "src" / "mul.cpp"
    src.write_text("int mul(int a, int b) { return a * ; }\n")
    res = mcpp("build", "-j", "1", cwd=calc)
    assert res.code == 1
    assert res.err.count("expected primary-expression") == 1
    assert "error: build failed" in res.err
    assert "Traceback" not in res.err


def test_keep_going_builds_what_it_can(calc, mcpp):
    (calc / "src" / "mul.cpp").write_text("int mul(int a, int b) { return a * ; }\n")
    (calc / "src" / "add.cpp").write_text('#include "ops.hpp"\nint add(int a, int b) { return a - -b; }\n')
    (calc / "src" / "main.cpp").write_text((calc / "src" / "main.cpp").read_text() + "\n// edited\n")
    res = mcpp("build", "--keep-going", "-j", "1", "--message-format", "json", cwd=calc)
    assert res.code == 1
    assert sorted(res.executed("compile")) == ["compile calc:src/add.cpp", "compile calc:src/main.cpp"]


def test_a_clean_build_starts_its_largest_compile_first(mcpp, project):
    """The scheduler takes compiles largest source first (engine/exec/larger_first.py, the sizes
    the stat cache recorded while planning): a long compile started last would run alone."""
    root = project({"mcpp.toml": '[package]\nname = "big"\nversion = "0.1.0"\n',
                    "src/main.cpp": '#include "lib.h"\nint main() { return f0() + f1(); }\n',
                    "src/lib.h": "int f0();\nint f1();\n",
                    "src/a0.cpp": "int f0() { return 0; }\n",
                    "src/a1.cpp": "int f1() { return 1; }\n" + "// padding\n" * 400})
    def compiled() -> list[str]:
        res = mcpp("build", "-j", "1", "--message-format", "json", cwd=root)
        assert res.code == 0, res.err
        return [e["id"] for e in res.events if e.get("reason") == "action-finished" and e.get("kind") == "compile"]

    # A first build (an empty home) starts the first unit it plans before the rest are planned
    # (engine/exec/head_start.py); the largest is the first the scheduler starts.
    assert compiled() == ["compile big:src/a0.cpp", "compile big:src/a1.cpp", "compile big:src/main.cpp"]
    # Every source changed, the home kept (nothing started ahead): the largest first.
    for name in ("a0.cpp", "a1.cpp", "main.cpp"):
        (root / "src" / name).write_text((root / "src" / name).read_text() + "// changed\n")
    shutil.rmtree(root / "target")
    assert compiled()[0] == "compile big:src/a1.cpp"


def test_the_stale_binary_and_objects_an_edit_replaces_are_gone_when_the_build_ends(calc, mcpp):
    """engine/exec/discard.py: the outputs an edit-one build replaces are moved aside at once and
    deleted while the actions run; nothing is left behind, and what runs is the new binary."""
    src = calc / "src" / "mul.cpp"
    src.write_text(src.read_text().replace("MUL(a, b)", "MUL(a, b) + 1"))
    res = mcpp.build_json(cwd=calc)
    assert res.executed("link") == ["link calc:calc"]
    # empty when the command returns, also through a server (whose child answers first)
    discarded = calc / "target" / "dev" / ".mcpp" / "discarded"
    assert discarded.is_dir() and list(discarded.iterdir()) == []
    assert mcpp("run", cwd=calc).out.split() == ["5", "7"]


def _state_files(root) -> dict[str, os.stat_result]:
    return {name: os.stat(root / "target/dev/.mcpp" / name) for name in ("actions", "stat")}


def test_an_edit_appends_its_changes_to_the_state_files_and_a_fresh_process_reads_them_back(calc, mcpp):
    """cas/journal.py: the records of the two actions an edit ran are appended, not the state
    rewritten; a build in its own process (which reads the files, not a server's copy) is a no-op."""
    before = _state_files(calc)
    src = calc / "src" / "add.cpp"
    src.write_text(src.read_text().replace("a + b", "b + a + 0"))
    assert mcpp.build_json(cwd=calc).executed() == ["compile calc:src/add.cpp", "link calc:calc"]
    after = _state_files(calc)
    for name, st in after.items():
        assert st.st_ino == before[name].st_ino and st.st_size > before[name].st_size, name  # appended
    res = mcpp("build", "--no-server", "--message-format", "json", cwd=calc, check=True)
    assert [e for e in res.events if e.get("status") == "executed"] == []
    # the edited source's entry came from the appended frame: the file as it is now
    assert StatCache(calc / "target/dev/.mcpp/stat").recorded(src) == tuple(stat_key(src))


def test_a_state_file_cut_short_while_appending_costs_that_build_and_is_written_whole(calc, mcpp):
    """A build killed in the middle of its append: the next build reads what came before (the
    edited compile's old record), finds the object's key changed, takes it again, and writes the
    file whole rather than appending after the partial frame."""
    src = calc / "src" / "add.cpp"
    src.write_text(src.read_text().replace("a + b", "b + a + 0"))
    mcpp.build_json(cwd=calc)
    actions = calc / "target/dev/.mcpp/actions"
    os.truncate(actions, actions.stat().st_size - 3)
    torn = actions.stat()
    res = mcpp("build", "--message-format", "json", cwd=calc, check=True)
    assert "warning" not in res.err and "Traceback" not in res.err, res.err
    ran = {e["id"]: e.get("status") for e in res.events if e.get("reason") == "action-finished"}
    assert ran["compile calc:src/add.cpp"] == "cached" and ran["link calc:calc"] == "cached"  # its records lost
    assert ran["compile calc:src/mul.cpp"] == ran["compile calc:src/main.cpp"] == "fresh"  # the rest kept
    assert actions.stat().st_ino != torn.st_ino  # written whole
    assert mcpp.build_json(cwd=calc).executed() == []
    res = mcpp("build", "--no-server", "--message-format", "json", cwd=calc, check=True)
    assert [e for e in res.events if e.get("status") == "executed"] == []
