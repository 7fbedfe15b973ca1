"""`mcpp.tools.island` (from the shipped `mcpp:plugins`): the four refusals, each with its own
message (golden files in tests/unit/accel/golden/), and the boundary it writes when the
implementations agree."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

GOLDEN = Path(__file__).resolve().parent.parent / "unit" / "accel" / "golden"

MANIFEST = """
[package]
name = "isl"
version = "0.1.0"

[build-dependencies.mcpp]
plugins = { version = "0.3.0", host-module = true }

[build]
sources = ["src/main.cpp"]
"""
SCAN = """
load("mcpp.tools.island", "island")
entries = island.scan(module_name = "app.kernels", roots = {roots}, strip_prefix = "app_")
island.emit(entries, module_name = "app.kernels")
"""
SAXPY = "MCPP_EXPORT_C\nint app_saxpy(float a, const float* x, float* out, unsigned n)\n{ return 0; }\n"


def refusal(res) -> str:
    """The message of a failed program, without the Starlark stack (whose paths vary)."""
    assert res.code == 2, f"{res.out}\n{res.err}"
    assert "Traceback" not in res.err
    m = re.search(r"error: fail: (.*?)\nnote: Starlark call stack", res.err, re.S)
    assert m, res.err
    assert "build.star:2" in res.err  # the stack names the caller's line
    return m.group(1) + "\n"


def build(mcpp, project, roots: list[str], files: dict[str, str]):
    root = project({"mcpp.toml": MANIFEST, "build.star": SCAN.format(roots=roots),
                    "src/main.cpp": "int main() {}\n", **files})
    return mcpp("build", cwd=root)


@pytest.mark.parametrize("case, roots, files", [
    ("island_twice_in_one_root", ["src/kernels"],
     {"src/kernels/a.cu": SAXPY, "src/kernels/b.cu": SAXPY}),
    ("island_declarations_differ", ["src/kernels", "src/cpu"],
     {"src/kernels/saxpy.cu": SAXPY,
      "src/cpu/saxpy.cpp": SAXPY.replace("unsigned n", "unsigned long n")}),
    ("island_roots_overlap", ["src", "src/kernels"], {"src/kernels/saxpy.cu": SAXPY}),
    ("island_root_without_entry_point", ["src/kernels", "src/cpu"],
     {"src/kernels/saxpy.cu": SAXPY, "src/cpu/saxpy.cpp": "int app_saxpy_helper() { return 1; }\n"}),
])
def test_island_refusals(mcpp, project, case, roots, files):
    got = refusal(build(mcpp, project, roots, files))
    assert got == (GOLDEN / f"{case}.txt").read_text()


def test_the_boundary_it_writes(mcpp, project):
    files = {"src/kernels/saxpy.cu": "// MCPP_EXPORT_C in a comment is not a mark\n" + SAXPY,
             "src/kernels/image/blur.cu": "MCPP_EXPORT_C int app_blur(int r) { return r; }\nint internal() {}\n",
             "src/cpu/all.cpp": '#include "app_kernels.h"\n' + SAXPY + "MCPP_EXPORT_C int app_blur(int r) { return r; }\n"}
    manifest = MANIFEST.replace('sources = ["src/main.cpp"]', 'sources = ["src/main.cpp", "src/cpu/*.cpp"]')
    root = project({"mcpp.toml": manifest, "build.star": SCAN.format(roots=["src/kernels", "src/cpu"]),
                    "src/main.cpp": "import app.kernels;\nint main() { return app::kernels::image::blur(0); }\n",
                    **files})
    res = mcpp("build", cwd=root)
    assert res.code == 0, res.err
    assert mcpp("run", cwd=root).code == 0  # image::blur(0): the namespace path of src/kernels/image/
    gen = root / "target" / "dev" / ".mcpp" / "gen" / "isl" / "island"
    assert (gen / "app_kernels.h").read_text() == (GOLDEN / "island_header.h").read_text()
    assert (gen / "app_kernels.cppm").read_text() == (GOLDEN / "island_module.cppm").read_text()


L2_SCAN = """
load("mcpp.tools.island", "island")
entries = island.scan(module_name = "app.kernels", roots = ["src/cpu"], strip_prefix = "app_")
entries.append(island.declared("{decl}", module_name = "app.kernels", subdir = "math", strip_prefix = "app_"))
island.emit(entries, module_name = "app.kernels")
"""
# An entry point `scan` cannot see: a macro writes its definition.
TWICE = '#define DEFINE_TWICE(T, name) extern "C" T name(T x) { return x + x; }\nDEFINE_TWICE(int, app_twice)\n'


@pytest.mark.skipif(shutil.which("clang++-19") is None, reason="needs clang-19")
def test_l2_declared_entry_and_using_declarations_under_clang(mcpp, project):
    """Level L2: `island.declared` adds an entry point scan cannot see; under clang the module names
    each entry point with `using ::name;` (GCC 12 gets constexpr pointers, see the golden module)."""
    manifest = MANIFEST.replace('sources = ["src/main.cpp"]', 'sources = ["src/main.cpp", "src/cpu/*.cpp"]')
    root = project({
        "mcpp.toml": manifest + '\n[toolchain]\ndefault = "clang-19"\n',
        "build.star": L2_SCAN.format(decl="int app_twice(int x)"),
        "src/cpu/all.cpp": '#include "app_kernels.h"\n' + SAXPY + TWICE,
        "src/main.cpp": ("import app.kernels;\nint main() {\n"
                         "  return app::kernels::math::app_twice(2) == 4 && app::kernels::math::twice(3) == 6 &&\n"
                         "         app::kernels::saxpy(1.0f, nullptr, nullptr, 0) == 0 ? 0 : 1;\n}\n")})
    res = mcpp("run", cwd=root)
    assert res.code == 0, res.out + res.err
    gen = root / "target" / "dev" / ".mcpp" / "gen" / "isl" / "island"
    module = (gen / "app_kernels.cppm").read_text()
    assert "export namespace app::kernels::math {\nusing ::app_twice;\ninline constexpr auto twice = ::app_twice;\n}" in module
    assert "using ::app_saxpy;" in module and "inline constexpr auto app_saxpy" not in module
    assert "int app_twice(int x);" in (gen / "app_kernels.h").read_text()


def test_a_declared_entry_that_disagrees_with_the_scanned_one_is_refused(mcpp, project):
    root = project({"mcpp.toml": MANIFEST, "build.star": L2_SCAN.format(decl="int app_saxpy(float a)"),
                    "src/cpu/all.cpp": SAXPY, "src/main.cpp": "int main() {}\n"})
    res = mcpp("build", cwd=root)
    assert res.code == 2 and "Traceback" not in res.err, res.out + res.err
    assert ("island.emit: `app_saxpy` is declared two ways; C linkage does not mangle names, so the link would be "
            "clean and each side would read the arguments by its own ABI:\n"
            "  int app_saxpy(float a, const float* x, float* out, unsigned n)\n  int app_saxpy(float a)") in res.err
