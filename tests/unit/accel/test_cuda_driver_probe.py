"""The driver probe of mcpp.rules.cuda (starlark_rules/plugins/src/rules/cuda.star, `_DRIVER_PROBE`):
the program it compiles asks the driver's own library (`cuDriverGetVersion` in `libcuda.so.1`),
and a machine without a driver is an answer (`absent`), not a failure. A stand-in `libcuda.so.1`
built here plays the driver, found through the loader's path as the real one is."""
from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

RULE = Path(__file__).resolve().parents[3] / "starlark_rules" / "plugins" / "src" / "rules" / "cuda.star"
pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


def probe_program(tmp_path: Path) -> Path:
    text = re.search(r'^_DRIVER_PROBE = ("""[\s\S]*?""")$', RULE.read_text(), re.M)
    assert text is not None, "cuda.star has no _DRIVER_PROBE"
    source = tmp_path / "probe.c"
    source.write_text(ast.literal_eval(text.group(1)))  # Starlark's string escapes are Python's
    exe = tmp_path / "probe"
    subprocess.run(["gcc", "-x", "c", str(source), "-o", str(exe), "-ldl"], check=True)
    return exe


def run(exe: Path, library_path: str) -> str:
    env = {"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": library_path}
    return subprocess.run([str(exe)], capture_output=True, text=True, env=env, check=True).stdout.strip()


@pytest.mark.skipif(any(os.path.exists(p) for p in ("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib64/libcuda.so.1",
                                                     "/usr/lib/aarch64-linux-gnu/libcuda.so.1")),
                    reason="a real driver is installed here")
def test_the_probe_reads_the_driver_version_through_its_library_and_says_when_there_is_none(tmp_path):
    exe = probe_program(tmp_path)
    driver = tmp_path / "driver"
    driver.mkdir()
    assert run(exe, str(driver)) == "absent"
    stub = tmp_path / "stub.c"
    stub.write_text("int cuDriverGetVersion(int* v) { *v = 12080; return 0; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", str(stub), "-o", str(driver / "libcuda.so.1")], check=True)
    assert run(exe, str(driver)) == "version 12080"
    stub.write_text("int cuDriverGetVersion(int* v) { return 3; }\n")  # CUDA_ERROR_NOT_INITIALIZED
    subprocess.run(["gcc", "-shared", "-fPIC", str(stub), "-o", str(driver / "libcuda.so.1")], check=True)
    assert run(exe, str(driver)) == "unanswered"
