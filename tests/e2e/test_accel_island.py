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
