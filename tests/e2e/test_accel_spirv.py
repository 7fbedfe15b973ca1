"""mcpp:plugins' rules-spirv, the data lane: examples/09-heterogeneous/shaders compiles two compute
shaders with one stem (in two directories) by glslangValidator from the payload `xim:glslang`
(adopted from /usr), validates them with spirv-val, and embeds them behind the generated module
`shader_app.shaders`; the program prints each blob's byte count and checks the SPIR-V magic number.
`--no-accel` builds the CPU variant and resolves no shader compiler."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.e2e_support import copy_example

GLSLANG = "/usr/bin/glslangValidator"
needs_glslang = pytest.mark.skipif(not os.access(GLSLANG, os.X_OK), reason=f"needs glslang ({GLSLANG} is absent)")
pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

GEN = ("target", "dev", ".mcpp", "gen", "shader-app")


def payloads(root) -> list[str]:
    record = json.loads((root.joinpath("target", "dev", ".mcpp", "payloads.json")).read_text())
    return [p["id"] for p in record["payloads"]]


@pytest.fixture
def example(tmp_path):
    return copy_example("09-heterogeneous/shaders", tmp_path)


@needs_glslang
def test_two_shaders_with_one_stem_are_two_blobs_behind_one_module(mcpp, example):
    res = mcpp("run", "-v", cwd=example)
    assert res.code == 0, res.out + res.err
    # Each shader is compiled by the payload's glslangValidator and validated by its spirv-val.
    assert "compile.sh glslangValidator /usr/bin/glslangValidator vulkan1.2" in res.err, res.err
    if os.access("/usr/bin/spirv-val", os.X_OK):
        assert "scale.comp.inc /usr/bin/spirv-val`" in res.err, res.err
    spv = example.joinpath(*GEN, "spirv-bin", "shaders")
    top, sub = (spv / "scale.comp.spv").read_bytes(), (spv / "a" / "scale.comp.spv").read_bytes()
    assert top[:4] == bytes.fromhex("03022307") and top != sub
    # The byte counts the program reads through the accessors are the compiled modules' sizes.
    assert res.out.splitlines()[-3:] == [f"shaders/scale.comp: {len(top)} bytes, SPIR-V",
                                         f"shaders/a/scale.comp: {len(sub)} bytes, SPIR-V",
                                         "two blobs: distinct"]
    assert any(p.startswith("xim:glslang") for p in payloads(example)), payloads(example)
    module = example.joinpath(*GEN, "spirv", "shader_app_shaders", "shader_app_shaders.cppm").read_text()
    assert "export module shader_app.shaders;" in module
    assert "export namespace shader_app::shaders::a {" in module
    # An edited shader is compiled again and the program sees its new blob.
    edited = example / "shaders" / "a" / "scale.comp"
    edited.write_text(edited.read_text().replace("v[i] * factor + offset", "v[i] * factor + offset + float(i)"))
    again = mcpp("run", cwd=example)
    assert again.code == 0, again.out + again.err
    grown = (spv / "a" / "scale.comp.spv").read_bytes()
    assert len(grown) != len(sub) and again.out.splitlines()[-2] == f"shaders/a/scale.comp: {len(grown)} bytes, SPIR-V"


@needs_glslang
def test_an_invalid_shader_fails_at_its_line(mcpp, example):
    (example / "shaders" / "a" / "scale.comp").write_text("#version 450\nvoid main() { undefined_name = 1; }\n")
    res = mcpp("build", cwd=example)
    assert res.code == 1, res.out + res.err
    assert "shaders/a/scale.comp:2:" in res.err and "undefined_name" in res.err, res.err


def test_no_accel_builds_the_cpu_variant_without_a_shader_compiler(mcpp, example):
    res = mcpp("run", "--no-accel", cwd=example)
    assert res.code == 0, res.out + res.err
    assert res.out.splitlines()[-1] == "no accelerator: shaders not compiled"
    assert not any(p.startswith("xim:glslang") for p in payloads(example)), payloads(example)
    assert not example.joinpath(*GEN, "spirv-bin").exists()


@needs_glslang
def test_accel_vulkan_compiles_the_shaders_and_leaves_cu_out(mcpp, example):
    """Each narrowed glob is narrowed by the set: a `.cu` entry for CUDA does not enter a Vulkan
    build (no rule here claims `.cu`, so a CUDA build refuses it by name)."""
    manifest = example / "mcpp.toml"
    manifest.write_text(manifest.read_text().replace(
        '{ glob = "shaders/**/*.comp", accel = "vulkan1.2" }',
        '{ glob = "shaders/**/*.comp", accel = "vulkan1.2" }, { glob = "src/kernels/*.cu", accel = "cuda12.9+{sm_89}" }'))
    (example / "src" / "kernels").mkdir()
    (example / "src" / "kernels" / "scale.cu").write_text("this is not CUDA\n")
    res = mcpp("run", "--accel", "vulkan1.2", cwd=example)
    assert res.code == 0, res.out + res.err
    assert res.out.splitlines()[-1] == "two blobs: distinct"
    refused = mcpp("build", "--accel", "cuda12.9+{sm_89}, vulkan1.2", cwd=example)
    assert refused.code == 2 and "src/kernels/scale.cu" in refused.err, refused.out + refused.err


STAGELESS = {
    "mcpp.toml": ('[package]\nname = "st"\nversion = "0.1.0"\n\n[build-dependencies.mcpp]\n'
                  'plugins = { version = "0.3.0", features = ["rules-spirv"], host-module = true }\n\n'
                  '[build]\naccel = "vulkan1.2"\n'
                  'sources = ["src/main.cpp", { glob = "shaders/*", accel = "vulkan1.2" }]\n'),
    "build.star": 'load("mcpp.rules.spirv", "spirv")\nspirv.embed(srcs = mcpp.device_sources())\n',
    "src/main.cpp": "int main() {}\n"}


@needs_glslang
def test_a_shader_path_that_would_break_the_generated_include_is_refused(mcpp, project):
    root = project({**STAGELESS, 'shaders/a"b.comp': "#version 450\nvoid main() {}\n"})
    res = mcpp("build", cwd=root)
    assert res.code == 2 and "Traceback" not in res.err, res.out + res.err
    assert "a shader's path is written into the generated module's `#include`" in res.err, res.err


@needs_glslang
def test_a_stageless_glsl_source_is_refused(mcpp, project):
    root = project({
        "mcpp.toml": ('[package]\nname = "st"\nversion = "0.1.0"\n\n[build-dependencies.mcpp]\n'
                      'plugins = { version = "0.3.0", features = ["rules-spirv"], host-module = true }\n\n'
                      '[build]\naccel = "vulkan1.2"\n'
                      'sources = ["src/main.cpp", { glob = "shaders/*", accel = "vulkan1.2" }]\n'),
        "build.star": 'load("mcpp.rules.spirv", "spirv")\nspirv.embed(srcs = mcpp.device_sources())\n',
        "shaders/scale.comp": "#version 450\nvoid main() {}\n",
        "shaders/common.glsl": "#version 450\nvoid main() {}\n",
        "src/main.cpp": "int main() {}\n"})
    res = mcpp("build", cwd=root)
    assert res.code == 2 and "Traceback" not in res.err, res.out + res.err
    assert ("rules-spirv: shaders/common.glsl names no stage: glslang infers a shader's stage from its "
            "extension, and `.glsl` carries none") in res.err
    assert "build.star:2" in res.err


@pytest.mark.skipif(not os.access("/usr/bin/glslc", os.X_OK), reason="needs glslc")
def test_a_project_that_resolves_xim_shaderc_compiles_with_glslc(mcpp, example, tmp_path):
    """`xim:shaderc` (the shader compiler published for macOS and Windows) chosen by the project:
    its glslc compiles, and a root without spirv-val validates nothing. Both payloads come from an
    index of the test's own (glslang adopted from /usr, shaderc from a root holding only glslc)."""
    root = tmp_path / "shaderc"
    (root / "bin").mkdir(parents=True)
    shutil.copy2("/usr/bin/glslc", root / "bin" / "glslc")
    version = re.search(r"shaderc v?([0-9]+\.[0-9]+)",
                        subprocess.run(["/usr/bin/glslc", "--version"], capture_output=True, text=True).stdout)[1]
    shipped = (Path(__file__).resolve().parents[2] / "starlark_rules" / "payload-index" / "pkgs" / "xim" / "glslang.toml")
    index = tmp_path / "index"
    (index / "pkgs" / "xim").mkdir(parents=True)
    (index / "index.toml").write_text('[index]\nname = "fake"\nformat = 1\n')
    shutil.copy2(shipped, index / "pkgs" / "xim" / "glslang.toml")
    (index / "pkgs" / "xim" / "shaderc.toml").write_text(
        f'[package]\nname = "shaderc"\nnamespace = "xim"\nbins = ["bin/glslc"]\n[[release]]\nversion = "{version}"\n'
        f'linux-x86_64 = {{ system = "{root}", probe = ["bin/glslc", "--version"], match = "shaderc v?([0-9]+[.][0-9]+)" }}\n')
    manifest = example / "mcpp.toml"
    manifest.write_text(manifest.read_text() +
                        f'\n[target.\'cfg(accelerator = "vulkan")\'.xlings.workspace]\n"xim:shaderc" = "{version}"\n')
    res = mcpp("run", "-v", cwd=example, env={"MCPP_PAYLOAD_INDEX": str(index)})
    assert res.code == 0, res.out + res.err
    assert f"compile.sh glslc {root}/bin/glslc vulkan1.2" in res.err, res.err
    assert "spirv-val" not in res.err
    assert res.out.splitlines()[-1] == "two blobs: distinct"
