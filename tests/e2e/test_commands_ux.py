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
    assert res.code == 0 and "Removed" in res.err


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


def test_new_refuses_cxx_keywords_and_std(tmp_path, mcpp):
    for args in (["int"], ["class"], ["std", "--lib"], ["std"], ["co-await", "--lib"]):
        res = mcpp("new", *args, cwd=tmp_path)
        assert res.code == 2, (args, res.out, res.err)
        assert "cannot be used as a package name" in res.err
        assert list(tmp_path.iterdir()) == []


def test_new_starts_a_git_repository_unless_inside_one_or_vcs_none(tmp_path, mcpp):
    import subprocess

    assert mcpp("new", "fresh", cwd=tmp_path).code == 0
    assert (tmp_path / "fresh" / ".git").is_dir()
    assert mcpp("new", "plain", "--vcs", "none", cwd=tmp_path).code == 0
    assert not (tmp_path / "plain" / ".git").exists()
    # Inside an existing repository: no nested one.
    assert mcpp("new", "nested", cwd=tmp_path / "fresh").code == 0
    assert (tmp_path / "fresh" / "nested" / "mcpp.toml").is_file()
    assert not (tmp_path / "fresh" / "nested" / ".git").exists()
    subprocess.run(["git", "-C", str(tmp_path / "fresh"), "status"], check=True, capture_output=True)


def test_init_adopts_an_existing_directory(tmp_path, mcpp):
    old = tmp_path / "legacy"
    (old / "src").mkdir(parents=True)
    main = '#include <cstdio>\nint main() { std::puts("legacy code"); }\n'
    (old / "src" / "main.cpp").write_text(main)
    (old / ".gitignore").write_text("*.o\n")
    res = mcpp("init", "--vcs", "none", cwd=old)
    assert res.code == 0, res.err
    assert 'name = "legacy"' in (old / "mcpp.toml").read_text()
    assert (old / "src" / "main.cpp").read_text() == main
    assert (old / ".gitignore").read_text().splitlines()[:2] == ["*.o", "/target"]
    res = mcpp("run", cwd=old)
    assert res.code == 0 and "legacy code" in res.out
    res = mcpp("init", cwd=old)
    assert res.code == 2 and "existing mcpp packages" in res.err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert mcpp("init", str(empty), "--lib", "--vcs", "none", cwd=tmp_path).code == 0
    assert (empty / "src" / "empty.cppm").is_file()


def test_new_inside_a_workspace_adds_the_member(tmp_path, mcpp):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "mcpp.toml").write_text('# my workspace\n[workspace]\nmembers = []\n')
    res = mcpp("new", "app", cwd=ws)
    assert res.code == 0, res.err
    assert "Adding" in res.err and "`app` as member of workspace" in res.err
    (ws / "libs").mkdir()
    assert mcpp("new", "libs/util", "--lib", cwd=ws).code == 0
    text = (ws / "mcpp.toml").read_text()
    assert text.startswith("# my workspace\n") and 'members = ["app", "libs/util"]' in text
    res = mcpp("build", cwd=ws)
    assert res.code == 0, res.err
    assert "Compiling app" in res.err and "Compiling util" in res.err


def test_verbose_commands_can_be_pasted_into_a_shell(project, mcpp):
    import re
    import subprocess

    root = project({"mcpp.toml": MANIFEST + '[features]\nfeat = { defines = ["APP_NAME=\\"feat two\\""] }\n'
                                            'default = ["feat"]\n',
                    "src/main.cpp": '#include <cstring>\nint main() { return std::strcmp(APP_NAME, "feat two"); }\n'})
    res = mcpp("build", "-v", cwd=root / "src")  # from a subdirectory: the line must `cd` itself
    assert res.code == 0, res.err
    commands = re.findall(r"Running `(.*)`$", res.err, re.M)
    assert len(commands) == 2 and "@@EXECROOT@@" not in res.err
    compile_line, link_line = commands
    assert """'-DAPP_NAME="feat two"'""" in compile_line
    # The commands write where the build wrote; remove those outputs and let the pasted lines redo them.
    objects = list((root / "target" / "dev" / ".mcpp" / "obj").rglob("*.o"))
    assert objects
    for path in [*objects, root / "target" / "dev" / "x"]:
        path.unlink()
    for line in commands:
        done = subprocess.run(["bash", "-c", line], cwd="/", capture_output=True, text=True)
        assert done.returncode == 0, (line, done.stderr)
    assert subprocess.run([str(root / "target" / "dev" / "x")]).returncode == 0


def test_explain_without_an_argument_lists_actions_and_help_is_its_own(project, mcpp):
    root = project({"mcpp.toml": MANIFEST, "src/main.cpp": "int helper();\nint main() { return helper(); }\n",
                    "src/helper.cpp": "int helper() { return 0; }\n"})
    res = mcpp("explain", cwd=root)
    assert res.code == 0 and "no action has run" in res.out
    mcpp("build", cwd=root, check=True)
    res = mcpp("explain", cwd=root)
    assert res.code == 0, res.err
    listed = [line.strip() for line in res.out.splitlines()[1:]]
    assert listed == ["compile x:src/helper.cpp", "compile x:src/main.cpp", "link x:x"]
    help_text = mcpp("explain", "--help", cwd=root).out
    for build_only in ("--keep-going", "--sandbox", "--remote", "--jobs", "--features", "--message-format"):
        assert build_only not in help_text
    # A new source changes the link's object list: that is an input added, not a "flag added".
    (root / "src" / "more.cpp").write_text("int more() { return 1; }\n")
    mcpp("build", cwd=root, check=True)
    res = mcpp("explain", "link x:x", cwd=root)
    assert res.code == 0, res.err
    assert "input added: target/dev/.mcpp/obj/x/src/more.cpp.o" in res.out
    assert "flag added" not in res.out


def test_metadata_json_lists_each_packages_targets(project, mcpp):
    import json

    root = project({"mcpp.toml": MANIFEST, "src/main.cpp": "int main() {}\n"})
    res = mcpp("metadata", "--format", "json", cwd=root)
    assert res.code == 0, res.err
    data = json.loads(res.out)
    (pkg,) = data["packages"]
    assert pkg["targets"] == [{"kind": "bin", "name": "x", "main": "src/main.cpp",
                               "output": str(root / "target" / "dev" / "x"), "implicit": False}]
    assert data["target_directory"] == str(root / "target")
    mcpp("build", cwd=root, check=True)
    assert (root / "target" / "dev" / "x").is_file()


def test_cache_stats_has_no_hit_rate_without_lookups(project, mcpp):
    root = project({"mcpp.toml": MANIFEST, "src/main.cpp": "int main() {}\n"})
    mcpp("build", cwd=root, check=True)
    mcpp("build", cwd=root, check=True)  # everything up to date: no lookup at all
    res = mcpp("cache", "stats", cwd=root)
    assert res.code == 0 and "100%" not in res.out and "no cache lookups" in res.out


def test_cache_gc_says_why_it_stayed_above_the_limit(project, tmp_path, mcpp):
    import re

    from e2e_support import Mcpp

    own = Mcpp(tmp_path / "home")  # a store of this test's own: sizes are exact
    root = project({"mcpp.toml": MANIFEST, "src/main.cpp": "int main() {}\n"})
    own("build", cwd=root, check=True)
    res = own("cache", "gc", "--max-size", "1K", cwd=root)
    assert res.code == 0, res.err
    # Every blob was written seconds ago, so the grace window keeps them: gc must say so.
    assert re.search(r"\d+ action entries and 0 blobs", res.out)
    assert "note: the store is still above 1000 B" in res.err
    assert "written less than 10 minutes ago" in res.err
