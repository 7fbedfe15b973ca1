"""`mcpp pack` (docs/accelerators.md, "Packing prebuilt variants"): the package's library built per
variant into `target/pack/<name>-<version>/`, each artifact with the measured tag and accel of the
build that produced it, the CPU-only variant first; a consumer takes the right one under `--accel`
and `--no-accel`; `mcpp publish --pack` publishes it and a consumer takes it from the index.

The CUDA half really compiles examples/09-heterogeneous/cuda with nvcc (one pack, shared by every
assertion: nvcc is slow)."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.e2e.e2e_support import copy_example

NVCC = "/usr/local/cuda/bin/nvcc"
needs_nvcc = pytest.mark.skipif(not os.access(NVCC, os.X_OK), reason=f"needs the CUDA toolkit ({NVCC} is absent)")
pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

CONSUMER_MAIN = """#include <cstdio>
extern "C" const char* app_backend();
extern "C" int app_saxpy(float a, const float* x, const float* y, float* out, unsigned n);
int main() {
    float x[4] = {1, 2, 3, 4}, y[4] = {1, 1, 1, 1}, out[4];
    app_saxpy(2.0f, x, y, out, 4);
    std::printf("%s %g\\n", app_backend(), out[3]);
}
"""


def consumer(project, dependency: str):
    return project({"mcpp.toml": f'[package]\nname = "consumer"\nversion = "0.1.0"\n[dependencies]\n{dependency}\n',
                    "src/main.cpp": CONSUMER_MAIN}, name="consumer")


def last_line(res) -> str:
    assert res.code == 0, res.out + res.err
    return res.out.splitlines()[-1]


def tag_of_this_compiler() -> str:
    version = subprocess.run(["g++", "-dumpversion"], capture_output=True, text=True).stdout.strip().split(".")[0]
    return f"{os.uname().machine}-linux-gnu-gcc{version}-libstdcxx{version}-c++23"


@needs_nvcc
def test_pack_the_cuda_example_and_consume_each_variant(mcpp, project, tmp_path):
    example = copy_example("09-heterogeneous/cuda", tmp_path)
    res = mcpp("pack", cwd=example)
    assert res.code == 0 and "Traceback" not in res.err, res.out + res.err
    packed = example / "target" / "pack" / "saxpy-0.1.0"
    tag = tag_of_this_compiler()
    # The example asks for cuda12.9; the artifact records the toolkit that compiled it (measured).
    toolkit = ".".join(subprocess.run([NVCC, "--version"], capture_output=True, text=True).stdout
                       .split(", V")[1].split(".")[:2])
    assert (packed / "mcpp.toml").read_text() == f"""\
# Written by `mcpp pack`: prebuilt libraries, one per variant, the CPU-only one first.
[package]
name = "saxpy"
version = "0.1.0"

[build]
sources = []

[[runtime.artifacts]]
role = "static-library"
path = "lib/cpu/libsaxpy.a"
provenance = "mcpp-pack/1"
abi = "{tag}"

[[runtime.artifacts]]
role = "static-library"
path = "lib/accel/libsaxpy.a"
provenance = "mcpp-pack/1"
abi = "{tag}"
accel = "cuda{toolkit}+{{sm_89}} ptx>=89"
"""
    # Measured, not declared: only the accel build's library holds device code (and the runtime).
    symbols = {v: subprocess.run(["nm", "-A", str(packed / "lib" / v / "libsaxpy.a")], capture_output=True,
                                 text=True).stdout for v in ("cpu", "accel")}
    assert "cudaGetDeviceCount" not in symbols["cpu"] and " T cudaGetDeviceCount" in symbols["accel"]

    app = consumer(project, f'saxpy = {{ path = "{packed}" }}')
    assert last_line(mcpp("run", "--no-accel", cwd=app)) == "cpu 9"
    assert last_line(mcpp("run", "--accel", f"cuda{toolkit}+{{sm_89}}", cwd=app)) == "cuda 9"
    if not toolkit.startswith("12."):  # code from a 13.x toolkit needs a 13.x driver: not for a cuda12 build
        assert mcpp("build", "--accel", "cuda12.9+{sm_89}", cwd=app).code == 2
    refused = mcpp("build", "--accel", f"cuda{toolkit}+{{sm_86}}", cwd=app)
    assert refused.code == 2 and f"accel needs cuda{toolkit}+{{sm_89}} ptx>=89, this build has cuda{toolkit}+{{sm_86}}" \
        in refused.err, refused.err

    # Published from the pack (its builds are cached by now), then taken from the index.
    index = tmp_path / "index"
    res = mcpp("publish", "--pack", "--index", str(index), cwd=example)
    assert res.code == 0, res.out + res.err
    assert (index / "archives" / "saxpy-0.1.0.tar.zst").is_file()
    env = {"MCPP_INDEX": str(index)}
    via_index = consumer(project, 'mcpplibs.saxpy = "0.1.0"')
    assert last_line(mcpp("run", "--accel", f"cuda{toolkit}+{{sm_89}}", cwd=via_index, env=env)) == "cuda 9"
    assert last_line(mcpp("run", "--no-accel", cwd=via_index, env=env)) == "cpu 9"


def test_pack_of_a_cpu_library_writes_one_variant_without_accel(mcpp, project):
    lib = project({"mcpp.toml": '[package]\nname = "kit"\nversion = "1.2.0"\n',
                   "src/kit.cpp": 'extern "C" const char* app_backend() { return "kit"; }\n'
                                  'extern "C" int app_saxpy(float a, const float* x, const float* y, float* out,'
                                  ' unsigned n) { for (unsigned i = 0; i < n; ++i) out[i] = a * x[i] + y[i];'
                                  ' return 0; }\n'}, name="kit")
    assert mcpp("pack", cwd=lib).code == 0
    manifest = (lib / "target" / "pack" / "kit-1.2.0" / "mcpp.toml").read_text()
    assert manifest.count("[[runtime.artifacts]]") == 1 and "accel" not in manifest.replace("# Written", "")
    app = consumer(project, f'kit = {{ path = "{lib / "target" / "pack" / "kit-1.2.0"}" }}')
    # A pure CPU package serves every build, with or without accelerators.
    assert last_line(mcpp("run", "--accel", "cuda12.9+{sm_89}", cwd=app)) == "kit 9"


def test_pack_refuses_a_package_without_a_library(mcpp, project):
    root = project({"mcpp.toml": '[package]\nname = "tool"\nversion = "0.1.0"\n',
                    "src/main.cpp": "int main() { return 0; }\n"}, name="tool")
    res = mcpp("pack", cwd=root)
    assert res.code == 2 and "Traceback" not in res.err, res.err
    assert "packing tool v0.1.0: the package has no library to pack" in res.err
    assert not (root / "target" / "pack" / "tool-0.1.0").exists()
