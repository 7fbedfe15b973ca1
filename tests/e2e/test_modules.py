"""C++20 modules: dependency order, partitions, scanner refusals, cycles, clang and `import std`."""
from __future__ import annotations

import shutil

import pytest

MANIFEST = '[package]\nname = "mods"\nversion = "0.1.0"\n'
HAVE_CLANG19 = shutil.which("clang++-19") is not None
needs_clang = pytest.mark.skipif(not HAVE_CLANG19, reason="clang-19 is not installed (.ci/run installs it)")


def modules_project(project, manifest=MANIFEST):
    return project({
        "mcpp.toml": manifest,
        "src/main.cpp": "#include <cstdio>\nimport shapes;\nint main() { std::printf(\"%d\\n\", shapes::area(6, 7)); }\n",
        "src/shapes.cppm": "export module shapes;\nexport import :impl;\nexport namespace shapes { int area(int w, int h) { return detail::mul(w, h); } }\n",
        "src/shapes-impl.cppm": "export module shapes:impl;\nexport namespace shapes::detail { int mul(int a, int b) { return a * b; } }\n",
        "src/extra.cpp": "module shapes;\nint unused_helper() { return shapes::area(1, 1); }\n",
    })


def test_modules_compile_in_dependency_order_with_gcc(project, mcpp):
    root = modules_project(project)
    res = mcpp("run", "-j", "2", cwd=root)
    assert res.code == 0, res.err
    assert res.out.strip().endswith("42")


def test_partition_change_recompiles_its_importers_in_order(project, mcpp):
    root = modules_project(project)
    mcpp("build", cwd=root, check=True)
    impl = root / "src" / "shapes-impl.cppm"
    impl.write_text(impl.read_text() + "export namespace shapes::detail { int one() { return 1; } }\n")
    res = mcpp("build", "-j", "1", "--message-format", "json", cwd=root)
    executed = res.executed("compile")
    assert executed[0] == "compile mods:src/shapes-impl.cppm"
    assert executed[1] == "compile mods:src/shapes.cppm"  # the primary interface imports the partition
    assert sorted(executed[2:]) == ["compile mods:src/extra.cpp", "compile mods:src/main.cpp"]


def test_import_inside_preprocessor_conditional_is_refused(project, mcpp):
    root = project({"mcpp.toml": MANIFEST,
                    "src/main.cpp": "#ifdef FAST\nimport fast;\n#endif\nint main() {}\n"})
    res = mcpp("build", cwd=root)
    assert res.code == 2
    assert "src/main.cpp:2:1: error: `import` inside a preprocessor conditional is not supported" in res.err


def test_header_units_are_refused(project, mcpp):
    root = project({"mcpp.toml": MANIFEST, "src/main.cpp": "import <vector>;\nint main() {}\n"})
    res = mcpp("build", cwd=root)
    assert res.code == 2
    assert "src/main.cpp:1:1: error: header units are not supported: `import <vector>;`" in res.err


def test_module_cycle_is_an_error_naming_the_modules(project, mcpp):
    root = project({"mcpp.toml": MANIFEST, "src/main.cpp": "import a;\nint main() {}\n",
                    "src/a.cppm": "export module a;\nimport b;\n", "src/b.cppm": "export module b;\nimport a;\n"})
    res = mcpp("build", cwd=root)
    assert res.code == 2
    assert "error: module cycle: a -> b -> a" in res.err


def test_unknown_module_is_an_error(project, mcpp):
    root = project({"mcpp.toml": MANIFEST, "src/main.cpp": "// uses a module nobody exports\nimport nowhere;\nint main() {}\n"})
    res = mcpp("build", cwd=root)
    assert res.code == 2
    assert "src/main.cpp:2: error: module `nowhere` is imported but no source" in res.err


def test_import_std_with_gcc_explains_what_is_needed(project, mcpp):
    root = project({"mcpp.toml": MANIFEST, "src/main.cpp": "import std;\nint main() {}\n"})
    res = mcpp("build", cwd=root)
    assert res.code == 2 and "`import std;` needs clang-19 with libc++" in res.err


@needs_clang
def test_modules_with_clang(project, mcpp):
    root = modules_project(project)
    res = mcpp("run", "--toolchain", "clang-19", cwd=root)
    assert res.code == 0, res.err
    assert res.out.strip().endswith("42")


@needs_clang
def test_import_std_with_clang19_and_libcxx(project, mcpp):
    root = project({
        "mcpp.toml": MANIFEST.replace('"0.1.0"', '"0.1.0"\nstandard = "c++23"') + '\n[toolchain]\ndefault = "clang-19"\n',
        "src/main.cpp": "import std;\nimport stats;\nint main() { std::println(\"mean = {}\", stats::mean({1.0, 2.0, 6.0})); }\n",
        "src/stats.cppm": "export module stats;\nimport std;\nexport namespace stats {\n"
                          "double mean(const std::vector<double>& v) { double s = 0; for (double x : v) s += x; return s / v.size(); }\n}\n",
    })
    res = mcpp("run", cwd=root)
    assert res.code == 0, res.err[-3000:]
    assert "mean = 3" in res.out
