"""examples/09-heterogeneous/boundary (L0) and .../multi-backend (the `not(...)` trap, its fix with
`accelerator = "none"`, and the run-time-choice shape); plus the accel set on plain projects:
device sources nobody claims are refused by name, `{ glob, accel }` entries narrow, the `mcpp`
namespace of shipped packages, and prebuilt artifacts chosen (or refused) by tag and accel."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.e2e_support import copy_example

GOLDEN = Path(__file__).resolve().parent.parent / "unit" / "accel" / "golden"

NVCC = "/usr/local/cuda/bin/nvcc"
needs_nvcc = pytest.mark.skipif(not os.access(NVCC, os.X_OK), reason=f"needs the CUDA toolkit ({NVCC} is absent)")
pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
CUDA = "cuda12.9+{sm_89}"
NONE_SECTION = "[target.'cfg(accelerator = \"none\")'.build]"
TRAP_SECTION = "[target.'cfg(not(accelerator = \"vulkan\"))'.build]"


def lines(res) -> list[str]:
    assert res.code == 0, res.out + res.err
    return res.out.splitlines()


def has_device_code(binary) -> bool:
    out = subprocess.run(["readelf", "-S", "-W", str(binary)], capture_output=True, text=True, check=True).stdout
    return ".nv_fatbin" in out


def test_boundary_l0_runs_on_the_cpu_by_default(mcpp, tmp_path):
    root = copy_example("09-heterogeneous/boundary", tmp_path)
    assert lines(mcpp("run", cwd=root))[-1] == "sum of squares 1..100 = 338350"
    header = (root / "target" / "dev" / ".mcpp" / "gen" / "boundary" / "island" / "boundary.h").read_text()
    assert "long long sum_of_squares(const int* v, unsigned n);" in header


@needs_nvcc
def test_boundary_l0_with_cuda_gives_the_same_answer(mcpp, tmp_path):
    root = copy_example("09-heterogeneous/boundary", tmp_path)
    assert lines(mcpp("run", "--accel", CUDA, cwd=root))[-1] == "sum of squares 1..100 = 338350"
    assert has_device_code(root / "target" / "dev" / "boundary")


def test_multi_backend_cpu_build(mcpp, tmp_path):
    root = copy_example("09-heterogeneous/multi-backend", tmp_path)
    assert lines(mcpp("run", cwd=root))[-2:] == ["impl: cpu", "sum = 18"]


@needs_nvcc
def test_multi_backend_fix_links_one_implementation(mcpp, tmp_path):
    root = copy_example("09-heterogeneous/multi-backend", tmp_path)
    out = lines(mcpp("run", "--accel", CUDA, cwd=root))
    assert out[-2] in ("impl: cuda (no device present: CPU)", "impl: cuda (device)") and out[-1] == "sum = 18"
    # The project's own declaration of the toolkit (the override path) is the nearer one.
    listed = mcpp("payload", "list", "--accel", CUDA, cwd=root)
    assert "declared by `multi` at mcpp.toml" in listed.out, listed.out + listed.err


@needs_nvcc
def test_multi_backend_trap_puts_cpu_and_cuda_into_one_link(mcpp, tmp_path):
    """`not(accelerator = "vulkan")` is also true of a CUDA build: both implementations link."""
    root = copy_example("09-heterogeneous/multi-backend", tmp_path)
    manifest = root / "mcpp.toml"
    text = manifest.read_text()
    assert NONE_SECTION in text
    manifest.write_text(text.replace(NONE_SECTION, TRAP_SECTION))
    res = mcpp("build", "--accel", CUDA, cwd=root)
    assert res.code == 1, res.out + res.err
    assert "multiple definition of `impl'" in res.err
    assert "src/cpu/impl.cpp" in res.err and "src/cuda/impl.cpp" in res.err
    # The same manifest builds when no backend is named: the trap is specific to device builds.
    assert lines(mcpp("run", "--no-accel", cwd=root))[-2:] == ["impl: cpu", "sum = 18"]


def test_runtime_choice_builds_every_backend_in(mcpp, tmp_path):
    root = copy_example("09-heterogeneous/multi-backend", tmp_path) / "runtime-choice"
    out = lines(mcpp("run", cwd=root))
    assert out[-3:] == ["built in: cpu", "chosen at run time: cpu", "sum = 18"]


@needs_nvcc
def test_runtime_choice_with_cuda_asks_at_run_time(mcpp, tmp_path):
    root = copy_example("09-heterogeneous/multi-backend", tmp_path) / "runtime-choice"
    out = lines(mcpp("run", "--accel", CUDA, cwd=root))
    assert "built in: cuda cpu" in out and out[-1] == "sum = 18"


@pytest.mark.parametrize("ext", [".metal", ".cl", ".cu"])
def test_an_unclaimed_device_source_is_refused_by_name(mcpp, project, ext):
    root = project({"mcpp.toml": f"""
        [package]
        name = "p"
        version = "0.1.0"
        [build]
        sources = ["src/*.cpp", "src/shaders/*{ext}"]
        """, "src/main.cpp": "int main() {}\n", f"src/shaders/k{ext}": "kernel\n"})
    res = mcpp("build", cwd=root)
    assert res.code == 2 and "Traceback" not in res.err
    assert f"error: device source `src/shaders/k{ext}` is not claimed by any action" in res.err
    assert f"`{ext}` is a device source" in res.err


def test_device_sources_are_not_in_the_default_glob(mcpp, project):
    root = project({"mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
                    "src/main.cpp": "int main() {}\n", "src/k.cu": "not C++ at all\n", "src/k.cuh": "nor this\n"})
    assert mcpp("build", cwd=root).code == 0


def test_accel_entries_narrow_sources_and_none_is_the_empty_set(mcpp, project):
    root = project({"mcpp.toml": """
        [package]
        name = "p"
        version = "0.1.0"
        [build]
        sources = ["src/main.cpp", { glob = "src/v/*.cpp", accel = "vulkan1.2" }]
        [target.'cfg(accelerator = "none")'.build]
        sources = ["src/none/*.cpp"]
        defines = ["WHICH=\\"none\\""]
        [target.'cfg(not(accelerator = "none"))'.build]
        defines = ["WHICH=\\"some\\""]
        """,
        "src/main.cpp": '#include <cstdio>\nint extra();\nint main() { std::printf("%s %d\\n", WHICH, extra()); }\n',
        "src/none/extra.cpp": "int extra() { return 0; }\n",
        "src/v/extra.cpp": "int extra() { return 7; }\n"})
    assert lines(mcpp("run", cwd=root))[-1] == "none 0"
    assert lines(mcpp("run", "--accel", "vulkan1.2", cwd=root))[-1] == "some 7"
    assert lines(mcpp("run", "--no-accel", cwd=root))[-1] == "none 0"


@pytest.mark.parametrize("entry, message", [
    ('nothere = { version = "0.3.0", host-module = true }',
     "error: mcpp ships no package `mcpp:nothere` (it ships: mcpp:plugins)"),
    ('plugins = { version = "^0.4", host-module = true }',
     "error: dependency `mcpp.plugins` requires version `^0.4`, but `"),
])
def test_the_mcpp_namespace_names_packages_shipped_with_mcpp(mcpp, project, entry, message):
    root = project({"mcpp.toml": f'[package]\nname = "p"\nversion = "0.1.0"\n[build-dependencies.mcpp]\n{entry}\n',
                    "src/main.cpp": "int main() {}\n"})
    res = mcpp("build", cwd=root)
    assert res.code == 2 and "Traceback" not in res.err, res.err
    assert "mcpp.toml:5:" in res.err and message in res.err, res.err


def prebuilt_project(project, tmp_path, artifacts: str):
    """`gpuonly` publishes prebuilt static libraries (made here with g++ and ar); `app` links it."""
    root = project({
        "gpuonly/mcpp.toml": '[package]\nname = "gpuonly"\nnamespace = "mcpplibs"\nversion = "0.1.0"\n'
                             '[build]\nsources = []\n' + artifacts,
        "app/mcpp.toml": '[package]\nname = "app"\nversion = "0.1.0"\n'
                         '[dependencies]\nmcpplibs.gpuonly = { path = "../gpuonly" }\n',
        "app/src/main.cpp": '#include <cstdio>\nextern "C" int gpukit_answer();\n'
                            'int main() { std::printf("%d\\n", gpukit_answer()); }\n'}, name="prebuilt")
    lib = root / "gpuonly" / "lib"
    lib.mkdir()
    for name, answer in (("gpukit", 42), ("cpukit", 7)):  # the answer says which variant was linked
        obj = tmp_path / f"{name}.o"
        subprocess.run(["gcc", f"-DANSWER={answer}", "-x", "c", "-c", "-", "-o", str(obj)], check=True,
                       input=b"int gpukit_answer(void) { return ANSWER; }\n")
        subprocess.run(["ar", "rcs", str(lib / f"lib{name}.a"), str(obj)], check=True)
    return root / "app"


GPU_ONLY = """
[[runtime.artifacts]]
role = "static-library"
path = "lib/libgpukit.a"
provenance = "mcpp-pack/1"
abi = "x86_64-linux-gnu"
accel = "cuda12.8+{sm_90f}"
"""
CPU_ARTIFACT = """
[[runtime.artifacts]]
role = "static-library"
path = "lib/libcpukit.a"
abi = "x86_64-linux-gnu"
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the published tags are x86_64-linux-gnu")
def test_a_prebuilt_artifact_that_covers_no_requested_architecture_is_refused(mcpp, project, tmp_path):
    app = prebuilt_project(project, tmp_path, GPU_ONLY)
    res = mcpp("build", "--accel", "cuda12.8+{sm_86}", cwd=app)
    assert res.code == 2 and "Traceback" not in res.err, res.out + res.err
    got = res.err[res.err.index("error: mcpplibs.gpuonly@0.1.0"):]
    expected = (GOLDEN / "prebuilt_refusal.txt").read_text()
    tag = got.splitlines()[1].split(": ", 1)[1].split(" accel=")[0]  # this machine's compiler
    assert got == expected.replace("x86_64-linux-gnu-gcc16-libstdcxx16-c++23", tag)
    # A family target covers a later minor of its major: the library is taken and linked.
    assert lines(mcpp("run", "--accel", "cuda12.8+{sm_92}", cwd=app))[-1] == "42"


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the published tags are x86_64-linux-gnu")
def test_the_accel_set_picks_the_device_or_the_cpu_variant(mcpp, project, tmp_path):
    """The CPU artifact is listed first (as publishers are told to): an accel build still takes the
    device artifact that covers it, `--no-accel` the CPU one, and an uncovered architecture is refused
    with the message of docs/accelerators.md, though a CPU artifact exists."""
    app = prebuilt_project(project, tmp_path, CPU_ARTIFACT + GPU_ONLY)
    assert lines(mcpp("run", "--accel", "cuda12.8+{sm_90}", cwd=app))[-1] == "42"
    assert lines(mcpp("run", "--no-accel", cwd=app))[-1] == "7"
    res = mcpp("build", "--accel", "cuda12.8+{sm_86}", cwd=app)
    assert res.code == 2 and "Traceback" not in res.err, res.out + res.err
    got = res.err[res.err.index("error: mcpplibs.gpuonly@0.1.0"):]
    tag = got.splitlines()[1].split(": ", 1)[1].split(" accel=")[0]
    expected = (GOLDEN / "prebuilt_refusal.txt").read_text().replace("x86_64-linux-gnu-gcc16-libstdcxx16-c++23", tag)
    expected = expected.replace("  published tags :\n", "  published tags :\n    x86_64-linux-gnu\n")
    assert got == expected


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the published tags are x86_64-linux-gnu")
def test_only_device_artifacts_refuse_a_build_without_accelerators_naming_accel(mcpp, project, tmp_path):
    app = prebuilt_project(project, tmp_path, GPU_ONLY)
    res = mcpp("build", "--no-accel", cwd=app)
    assert res.code == 2 and "Traceback" not in res.err, res.out + res.err
    assert "every published artifact carries device code, and this build names no accelerator." in res.err
    assert "(--accel)" in res.err and "Compiling" not in res.err


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the published tags are x86_64-linux-gnu")
def test_a_pure_cpu_package_serves_an_accel_build(mcpp, project, tmp_path):
    app = prebuilt_project(project, tmp_path, CPU_ARTIFACT)
    assert lines(mcpp("run", "--accel", "cuda12.8+{sm_86}", cwd=app))[-1] == "7"
