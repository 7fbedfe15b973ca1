"""examples/09-heterogeneous/cuda: the CUDA lane end to end, and its CPU-only variant.

The CUDA build really compiles `src/kernels/saxpy.cu` with nvcc (from the payload
`xim:cuda-nvcc`, which the shipped index adopts from /usr/local/cuda) and links the device code
into the binary. These machines have no GPU: the program says so and computes on the CPU, with
the same answer the CPU-only build gives (on a machine with a GPU it runs on the device).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from tests.e2e.e2e_support import copy_example

NVCC = "/usr/local/cuda/bin/nvcc"
needs_nvcc = pytest.mark.skipif(not os.access(NVCC, os.X_OK), reason=f"needs the CUDA toolkit ({NVCC} is absent)")
pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

DRIVER_LIBRARIES = ("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib/aarch64-linux-gnu/libcuda.so.1",
                    "/usr/lib64/libcuda.so.1", "/usr/lib/wsl/lib/libcuda.so.1")
ANSWER = "saxpy: out[0]=1 out[1023]=2047 sum=1048576.0"


def has_device_code(binary) -> bool:
    """The fatbinary nvcc embeds lives in its own ELF section."""
    out = subprocess.run(["readelf", "-S", "-W", str(binary)], capture_output=True, text=True, check=True).stdout
    return ".nv_fatbin" in out


def payloads(root) -> list[str]:
    record = json.loads((root / "target" / "dev" / ".mcpp" / "payloads.json").read_text())
    return [p["id"] for p in record["payloads"]]


@pytest.fixture
def example(tmp_path):
    return copy_example("09-heterogeneous/cuda", tmp_path)


def test_cpu_only_variant_runs_and_resolves_no_cuda_payload(mcpp, example):
    res = mcpp("run", "--no-accel", cwd=example)
    assert res.code == 0, res.err
    assert res.out.splitlines()[-2:] == ["built without accelerators: computed on the CPU", ANSWER]
    assert payloads(example) == []
    listed = mcpp("payload", "list", "--no-accel", cwd=example)
    assert listed.code == 0 and "cuda" not in listed.out + listed.err, listed.out + listed.err
    plan = mcpp.build_json("build", "--no-accel", cwd=example)
    assert not [e for e in plan.events if "nvcc" in str(e.get("id", ""))]
    assert "rules-cuda" not in res.err
    if shutil.which("readelf"):
        assert not has_device_code(example / "target" / "dev" / "saxpy")
    tests = mcpp("test", "--no-accel", cwd=example)
    assert tests.code == 0 and "1 passed" in tests.out, tests.out + tests.err


def test_metadata_shows_the_intent_and_the_narrowed_sources(mcpp, example):
    def package(*flags):
        res = mcpp("metadata", "--format", "json", *flags, cwd=example)
        assert res.code == 0, res.err
        return [p for p in json.loads(res.out)["packages"] if p["name"] == "saxpy"][0]

    assert package("--no-accel")["accelerators"] == ["cuda"]
    assert package("--no-accel")["sources"] == ["src/cpu/saxpy.cpp", "src/main.cpp", "src/saxpy.cppm"]
    # `{ glob, accel }`: --accel vulkan1.2 leaves the .cu out with no hand-written condition, and
    # `cfg(accelerator = "none")` is false once any backend is named.
    assert package("--accel", "vulkan1.2")["sources"] == ["src/main.cpp", "src/saxpy.cppm"]
    assert "src/kernels/saxpy.cu" in package()["sources"]


@needs_nvcc
def test_cuda_build_links_device_code_and_reports_no_device(mcpp, example):
    res = mcpp("run", cwd=example)
    assert res.code == 0, res.out + res.err
    where, answer = res.out.splitlines()[-2:]
    assert answer == ANSWER
    assert where in ("no CUDA device present: computed on the CPU", "computed on the CUDA device")
    # A host compiler within the toolkit's bound (crt/host_config.h) is a setup that is fine: no
    # warning about it. The driver check: without a driver (no GPU here) the rule says so, states no
    # fact, and the runtime's floor is reported, not enforced; with one it is compared, silently.
    warnings = [l for l in res.err.splitlines() if l.startswith("warning")]
    if any(os.path.exists(p) for p in DRIVER_LIBRARIES):
        assert warnings == [], res.err
    else:
        major = subprocess.run([NVCC, "--version"], capture_output=True, text=True).stdout.split(", V")[1].split(".")[0]
        assert warnings == [
            "warning: saxpy: rules-cuda: no CUDA driver answers on this machine (libcuda.so.1 does not load or "
            "gives no version): the driver's version is not known",
            f"warning: saxpy: requires `cuda.driver >= {major}.0`, and no build program states a fact "
            "`cuda.driver`: not enforced"], res.err
    assert has_device_code(example / "target" / "dev" / "saxpy")
    assert payloads(example) == ["xim:cuda-nvcc", "xim:cuda-cudart"]
    obj = example / "target" / "dev" / ".mcpp" / "gen" / "saxpy" / "cuda" / "src" / "kernels" / "saxpy.cu.o"
    assert obj.is_file()
    tests = mcpp("test", cwd=example)
    assert tests.code == 0 and "1 passed" in tests.out, tests.out + tests.err


@needs_nvcc
def test_sass_per_architecture_and_ptx_for_the_floor(mcpp, example):
    res = mcpp("build", "-v", "--accel", "cuda12.9+{sm_80,sm_89} ptx>=75", cwd=example)
    assert res.code == 0, res.out + res.err
    line = [l for l in res.err.splitlines() if "nvcc" in l and "saxpy.cu" in l][0]
    for code in ("arch=compute_80,code=sm_80", "arch=compute_89,code=sm_89", "arch=compute_75,code=compute_75"):
        assert code in line


def fake_toolkit(tmp_path, gcc_bound: int | None = None):
    """A toolkit root holding only nvcc (and its profile), adopted through an index of its own:
    nvcc's plan names stage programs this root lacks. With `gcc_bound`, its crt/host_config.h
    accepts gcc up to that major."""
    root = tmp_path / "toolkit"
    (root / "bin").mkdir(parents=True)
    for name in ("nvcc", "nvcc.profile"):
        shutil.copy2(f"/usr/local/cuda/bin/{name}", root / "bin" / name)
    if gcc_bound is None:
        (root / "include").symlink_to("/usr/local/cuda/include")
    else:
        (root / "include" / "crt").mkdir(parents=True)
        (root / "include" / "crt" / "host_config.h").write_text(
            f"#if defined(__GNUC__)\n#if __GNUC__ > {gcc_bound}\n#error -- unsupported GNU version!\n#endif\n#endif\n")
    index = tmp_path / "index"
    (index / "pkgs" / "xim").mkdir(parents=True)
    (index / "index.toml").write_text('[index]\nname = "fake"\nformat = 1\n')
    version = subprocess.run([NVCC, "--version"], capture_output=True, text=True).stdout.split(", V")[1].split()[0]
    for name in ("cuda-nvcc", "cuda-cudart"):
        (index / "pkgs" / "xim" / f"{name}.toml").write_text(
            f'[package]\nname = "{name}"\nnamespace = "xim"\nbins = []\n[[release]]\nversion = "{version}"\n'
            f'linux-x86_64 = {{ system = "{root}", probe = ["bin/nvcc", "--version"], match = "V([0-9.]+)" }}\n')
    return root, {"MCPP_PAYLOAD_INDEX": str(index)}


@needs_nvcc
def test_the_first_stage_nvcc_cannot_resolve_is_named_with_its_payload(mcpp, example, tmp_path):
    root, env = fake_toolkit(tmp_path)
    res = mcpp("build", cwd=example, env=env)
    assert res.code == 2 and "Traceback" not in res.err, res.out + res.err
    assert (f"rules-cuda: nvcc's plan (nvcc --dryrun) runs `cicc`, which does not resolve (searched: "
            f"{root}/bin/../nvvm/bin/cicc); it is provided by xim:cuda-nvcc") in res.err


@needs_nvcc
def test_a_host_compiler_newer_than_the_toolkit_accepts_is_refused(mcpp, example, tmp_path):
    _, env = fake_toolkit(tmp_path, gcc_bound=4)
    res = mcpp("build", cwd=example, env=env)
    assert res.code == 2, res.out + res.err
    assert "accepts gcc <= 4 as its host compiler (crt/host_config.h)" in res.err
    # The bound is keyed on the header it was read from: a toolkit whose header changes is asked again.
    header = tmp_path / "toolkit" / "include" / "crt" / "host_config.h"
    header.write_text(header.read_text().replace("__GNUC__ > 4", "__GNUC__ > 99"))
    res = mcpp("build", cwd=example, env=env)
    assert res.code == 2 and "host compiler (crt/host_config.h)" not in res.err, res.out + res.err
    assert "runs `cicc`, which does not resolve" in res.err, res.err
