"""A link's key covers every file the link reads: the linker program the driver runs, and the
crt objects, libraries and linker scripts the linker opened (its `--dependency-file`), so a
changed linker or system library relinks, and `rm -rf target` never restores a binary linked
against the old one (engine/toolchain/linker.py, engine/plan/links.py).

Each test failed on the engine that keyed a link by its command and declared inputs alone."""
from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.e2e.e2e_support import Mcpp

pytestmark = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("ar") is None,
                                reason="needs g++ and ar")

MAIN = '#include <cstdio>\nextern "C" int mcpp_value();\nint main() { std::printf("%d\\n", mcpp_value()); }\n'


def manifest(ldflags: list[str], extra: str = "") -> str:
    flags = ", ".join(f'"{f}"' for f in ldflags)
    return f'[package]\nname = "p"\nversion = "0.1.0"\n[build]\nldflags = [{flags}]\n{extra}'


def run_binary(root: Path) -> str:
    return subprocess.run([str(root / "target" / "dev" / "p")], capture_output=True, text=True, check=True).stdout


def finished(res) -> dict:
    return [e for e in res.events if e.get("reason") == "build-finished"][0]


# -- the linker program ----------------------------------------------------------------------------

LINKER = '#!/bin/sh\n# {version}\nexec /usr/bin/ld "$@"\n'
BROKEN_LINKER = '#!/bin/sh\necho "custom linker {version} ran" >&2\nexit 1\n'


@pytest.mark.parametrize("mode", ["bwrap", "dir"])
def test_a_changed_linker_at_the_same_command_relinks_and_rm_target_does_not_restore_the_old_binary(
        project, mcpp: Mcpp, tmp_path, mode):
    """`-B dir` puts `dir/ld` before the system's linker (as another `ld` first on PATH would):
    the command line is the same whatever that file holds."""
    ldbin = tmp_path / "ldbin"
    ldbin.mkdir()
    ld = ldbin / "ld"
    ld.write_text(LINKER.format(version="v1"))
    ld.chmod(0o755)
    root = project({"mcpp.toml": manifest([f"-B{ldbin}/"]),
                    "src/main.cpp": '#include <cstdio>\nint main() { std::printf("1\\n"); }\n'})
    mcpp("build", "--sandbox", mode, cwd=root, check=True)
    assert run_binary(root) == "1\n"
    # Another linker at the same path and the same command: the link must run it.
    ld.write_text(BROKEN_LINKER.format(version="v2"))
    res = mcpp("build", "--sandbox", mode, "--message-format", "json", cwd=root)
    assert res.code != 0, f"the link was not run with the changed linker:\n{res.out}\n{res.err}"
    assert "custom linker v2 ran" in res.out + res.err
    shutil.rmtree(root / "target")
    res = mcpp("build", "--sandbox", mode, cwd=root)
    assert res.code != 0, "rm -rf target restored a binary made by another linker"
    assert "custom linker v2 ran" in res.out + res.err
    # Back to the first linker: its result is in the cache again.
    ld.write_text(LINKER.format(version="v1"))
    res = mcpp.build_json("--sandbox", mode, cwd=root)
    assert "link p:p" not in res.executed(), res.out
    assert run_binary(root) == "1\n"


# -- the libraries the linker read -----------------------------------------------------------------

@pytest.fixture
def system_lib_dir():
    """A directory under /usr/local/lib (a system root a sandboxed link reads), made for the test
    and removed after it."""
    parent = Path("/usr/local/lib")
    if os.geteuid() != 0 or not os.access(parent, os.W_OK):
        pytest.skip("needs to write /usr/local/lib (CI runs as root)")
    path = parent / f"mcpp_test_{uuid.uuid4().hex[:12]}"
    path.mkdir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


def write_static_lib(directory: Path, value: int, scratch: Path) -> None:
    """`libmcppvalue.a` whose `mcpp_value()` returns `value`."""
    src, obj = scratch / "value.c", scratch / "value.o"
    src.write_text(f"int mcpp_value(void) {{ return {value}; }}\n")
    subprocess.run(["gcc", "-c", str(src), "-o", str(obj)], check=True)
    tmp = directory / "libmcppvalue.a.tmp"
    subprocess.run(["ar", "rcs", str(tmp), str(obj)], check=True)
    os.replace(tmp, directory / "libmcppvalue.a")


@pytest.mark.parametrize("mode", ["bwrap", "dir"])
def test_a_changed_system_library_relinks_and_rm_target_does_not_restore_the_old_binary(
        project, mcpp: Mcpp, system_lib_dir: Path, tmp_path, mode):
    write_static_lib(system_lib_dir, 1, tmp_path)
    root = project({"mcpp.toml": manifest([f"-L{system_lib_dir}", "-lmcppvalue"]), "src/main.cpp": MAIN})
    mcpp("build", "--sandbox", mode, cwd=root, check=True)
    assert run_binary(root) == "1\n"
    write_static_lib(system_lib_dir, 2, tmp_path)
    res = mcpp.build_json("--sandbox", mode, cwd=root)
    assert res.executed() == ["link p:p"], res.out
    assert run_binary(root) == "2\n"
    # The plain no-op fast path must notice it too.
    write_static_lib(system_lib_dir, 3, tmp_path)
    mcpp("build", "--sandbox", mode, cwd=root, check=True)
    assert run_binary(root) == "3\n"
    shutil.rmtree(root / "target")
    write_static_lib(system_lib_dir, 4, tmp_path)
    mcpp("build", "--sandbox", mode, cwd=root, check=True)
    assert run_binary(root) == "4\n"
    # Unchanged, the libraries are answered from the stat cache: nothing is hashed again.
    res = mcpp.build_json("--sandbox", mode, cwd=root)
    assert finished(res)["files_hashed"] == 0 and res.executed() == [], res.out


@pytest.mark.parametrize("mode", ["bwrap", "dir"])
def test_a_link_with_lto_reads_its_own_temporaries_without_an_undeclared_input_error(project, mcpp: Mcpp, mode):
    """`lto-wrapper` writes objects under /tmp that the linker reads (and its depfile names),
    then removes them: they are the action's own, not inputs from outside it."""
    root = project({"mcpp.toml": manifest(["-flto"], 'cxxflags = ["-flto"]\n'),
                    "src/main.cpp": '#include <cstdio>\nint main() { std::printf("1\\n"); }\n'})
    mcpp("build", "--sandbox", mode, cwd=root, check=True)
    assert run_binary(root) == "1\n"
