"""rules-cuda through the project's own clang (`[toolchain] default = "clang-19"`): `clang -x cuda
--cuda-path=... --cuda-gpu-arch=sm_XX` compiles the units, and a clang that does not support the
toolkit's CUDA version is refused before anything compiles, naming both versions and the range
clang supports. Here clang 19 (CUDA up to 12.5) meets the CUDA 13 toolkit at /usr/local/cuda."""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from tests.e2e.e2e_support import copy_example

NVCC = "/usr/local/cuda/bin/nvcc"
CLANG = shutil.which("clang++-19")
pytestmark = [
    pytest.mark.skipif(not os.access(NVCC, os.X_OK), reason=f"needs the CUDA toolkit ({NVCC} is absent)"),
    pytest.mark.skipif(CLANG is None, reason="needs clang-19"),
]


def clang_cuda_bound() -> str | None:
    """What clang itself says is the newest CUDA it supports, when the toolkit is newer."""
    r = subprocess.run([CLANG, "-x", "cuda", "--cuda-path=/usr/local/cuda", "--cuda-gpu-arch=sm_89", "-nocudainc",
                        "-nocudalib", "-fsyntax-only", "/dev/null"], capture_output=True, text=True)
    m = re.search(r"newer than the latest (?:partially )?supported version ([0-9.]+)", r.stderr)
    return m.group(1) if m else None


def test_a_clang_that_does_not_support_the_toolkit_is_refused_before_any_compile(mcpp, tmp_path):
    bound = clang_cuda_bound()
    if bound is None:
        pytest.skip("this clang supports the installed CUDA toolkit")
    root = copy_example("09-heterogeneous/cuda", tmp_path)
    manifest = root / "mcpp.toml"
    manifest.write_text(manifest.read_text() + '\n[toolchain]\ndefault = "clang-19"\n')
    res = mcpp("build", cwd=root)
    assert res.code == 2 and "Traceback" not in res.err, res.out + res.err
    toolkit = re.search(r"V([0-9.]+)", subprocess.run([NVCC, "--version"], capture_output=True, text=True).stdout)[1]
    assert (f"rules-cuda: clang 19." in res.err and f"supports CUDA versions up to {bound} (clang's "
            f"-Wunknown-cuda-version statement), and the toolkit xim:cuda-nvcc at /usr/local/cuda is CUDA "
            f"{toolkit}; take xim:cuda-nvcc {bound} or older") in res.err, res.err
    assert "Compiling" not in res.err and not (root / "target" / "dev" / ".mcpp" / "obj").exists()
    # The same project under the GCC toolchain takes the nvcc route and builds.
    manifest.write_text(manifest.read_text().replace('default = "clang-19"', 'default = "gcc"'))
    assert mcpp("build", cwd=root).code == 0
