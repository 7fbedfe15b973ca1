"""A cross build's new inputs: the cross compiler, the sysroot and the runner. Each missing one is
one clear error (exit 2, at the manifest key where one names it); an explicit sysroot outside
the system directories is passed to the compiler, shown to the sandbox and keyed (a header of it
edited rebuilds); a header outside the declared inputs and the sysroot is not readable by a
cross compile under bwrap."""
from __future__ import annotations

import os
import shutil

import pytest

from tests.e2e.e2e_support import Mcpp

TRIPLE = "aarch64-linux-gnu"
pytestmark = pytest.mark.skipif(
    shutil.which(f"{TRIPLE}-g++") is None or shutil.which("qemu-aarch64") is None,
    reason="needs g++-aarch64-linux-gnu and qemu-user (scripts/install-system-deps.sh installs them)")

RUNNER = f'runner = ["qemu-aarch64", "-L", "/usr/{TRIPLE}"]'
MAIN = '#include <cstdio>\nint main() { std::puts("hi"); }\n'


def manifest(target_keys: str = "", build: str = "") -> str:
    return f'[package]\nname = "p"\nversion = "0.1.0"\n{build}\n[target.{TRIPLE}]\n{target_keys}\n'


def line_of(path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_a_missing_compiler_sysroot_or_runner_is_one_clear_error(project, mcpp: Mcpp):
    root = project({"mcpp.toml": manifest(), "src/main.cpp": MAIN})
    toml = root / "mcpp.toml"

    other = "riscv64-linux-gnu"  # a triple whose cross gcc this machine lacks
    if shutil.which(f"{other}-g++") is None:
        res = mcpp("build", "--target", other, cwd=root)
        assert res.code == 2, res.err
        assert f"error: no C++ cross compiler for `{other}`: `{other}-g++` was not found on PATH" in res.err
        assert "Traceback" not in res.err

    toml.write_text(manifest('cxx = "/nonexistent/bin/aarch64-linux-gnu-g++"'))
    res = mcpp("build", "--target", TRIPLE, cwd=root)
    assert res.code == 2
    assert f"mcpp.toml:{line_of(toml, 'cxx =')}:7: error: [target.{TRIPLE}] cxx " \
           f"`/nonexistent/bin/aarch64-linux-gnu-g++` was not found" in res.err

    toml.write_text(manifest('sysroot = "no-such-sysroot"'))
    res = mcpp("build", "--target", TRIPLE, cwd=root)
    assert res.code == 2
    assert f"mcpp.toml:{line_of(toml, 'sysroot =')}:11: error: sysroot `no-such-sysroot` does not exist" in res.err

    toml.write_text(manifest())
    res = mcpp("run", "--target", TRIPLE, cwd=root)
    assert res.code == 2
    assert f"set [target.{TRIPLE}] runner in mcpp.toml" in res.err and "hi" not in res.out
    res = mcpp("test", "--target", TRIPLE, cwd=root)  # no test, no runner needed
    assert res.code == 0, res.err

    toml.write_text(manifest('runner = ["qemu-nonexistent-arch"]'))
    res = mcpp("run", "--target", TRIPLE, cwd=root)
    assert res.code == 2
    assert f"mcpp.toml:{line_of(toml, 'runner =')}:10: error: the runner `qemu-nonexistent-arch` of " \
           f"[target.{TRIPLE}] runner was not found on PATH" in res.err


def test_an_explicit_sysroot_is_passed_shown_to_the_sandbox_and_keyed(project, mcpp: Mcpp, tmp_path):
    """A sysroot under /tmp (which bwrap replaces with an empty tmpfs): the compile finds its
    headers only because the sandbox shows it; editing one of them rebuilds."""
    sysroot = tmp_path / "sysroot"
    (sysroot / "usr" / "include").mkdir(parents=True)
    for name in os.listdir(f"/usr/{TRIPLE}/include"):  # the cross libc's headers, a marker of our own
        (sysroot / "usr" / "include" / name).symlink_to(f"/usr/{TRIPLE}/include/{name}")
    (sysroot / "usr" / "lib").symlink_to(f"/usr/{TRIPLE}/lib")
    (sysroot / "usr" / TRIPLE).symlink_to(f"/usr/{TRIPLE}")  # where the cross libc.so names its parts
    marker = sysroot / "usr" / "include" / "sysmarker.h"
    marker.write_text("#define SYS_VALUE 7\n")
    root = project({
        "mcpp.toml": manifest(f'sysroot = "{sysroot}"\n{RUNNER}'),
        "src/main.cpp": '#include <cstdio>\n#include <sysmarker.h>\nint main() { std::printf("sys=%d\\n", SYS_VALUE); }\n',
    })
    res = mcpp("-q", "run", "--target", TRIPLE, "--sandbox", "bwrap", cwd=root)
    assert res.code == 0, res.err
    assert res.out.strip().splitlines()[-1] == "sys=7"
    commands = (root / "target" / "compile_commands.json").read_text()
    assert f"--sysroot={sysroot}" in commands
    marker.write_text("#define SYS_VALUE 8\n")
    res = mcpp("-q", "run", "--target", TRIPLE, "--sandbox", "bwrap", cwd=root)
    assert res.code == 0, res.err
    assert res.out.strip().splitlines()[-1] == "sys=8"


def test_a_cross_compile_under_bwrap_cannot_read_a_header_outside_its_inputs(project, mcpp: Mcpp, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.h").write_text("#define SECRET 1\n")
    root = project({
        "mcpp.toml": manifest(build=f'[build]\ncxxflags = ["-I{outside}"]\n'),
        "src/main.cpp": '#include "secret.h"\nint main() { return SECRET; }\n',
    })
    res = mcpp("build", "--target", TRIPLE, "--sandbox", "bwrap", cwd=root)
    assert res.code == 1
    assert "secret.h: No such file or directory" in res.err
    res = mcpp("build", "--target", TRIPLE, "--sandbox", "off", cwd=root)  # the header is there
    assert res.code == 0, res.err


def test_a_cross_gcc_declared_as_a_host_payload_is_selected_for_the_triple(project, mcpp: Mcpp, tmp_path):
    """An index's `system` release adopts a directory whose `bin/` holds the triple's drivers (here
    wrappers of the installed cross gcc); a build for the triple compiles with them, not PATH's."""
    tc = tmp_path / "cross-tc"
    (tc / "bin").mkdir(parents=True)
    for driver in ("g++", "gcc"):
        wrapper = tc / "bin" / f"{TRIPLE}-{driver}"
        wrapper.write_text(f'#!/bin/sh\nexec /usr/bin/{TRIPLE}-{driver} "$@"\n')
        wrapper.chmod(0o755)
    index = tmp_path / "index"
    (index / "pkgs" / "xim").mkdir(parents=True)
    (index / "index.toml").write_text('[index]\nname = "local"\nformat = 1\n')
    (index / "pkgs" / "xim" / "gcc-aarch64.toml").write_text(
        '[package]\nname = "gcc-aarch64"\nbins = []\n[[release]]\nversion = "12.2.0"\n'
        f'linux-x86_64 = {{ system = "{tc}", probe = ["bin/{TRIPLE}-g++", "-dumpfullversion"], '
        'match = "([0-9.]+)" }\n')
    root = project({
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n[xlings.workspace]\n"xim:gcc-aarch64" = "12.2.0"\n'
                     f'[target.{TRIPLE}]\n{RUNNER}\n',
        "src/main.cpp": MAIN,
    })
    env = {"MCPP_PAYLOAD_INDEX": str(index)}
    res = mcpp("-q", "run", "--target", TRIPLE, "--sandbox", "bwrap", cwd=root, env=env)
    assert res.code == 0, res.err
    assert res.out.strip().splitlines()[-1] == "hi"
    commands = (root / "target" / "compile_commands.json").read_text()
    assert f'"{tc}/bin/{TRIPLE}-g++"' in commands


def test_the_remote_cache_shares_cross_results_and_never_serves_them_to_a_native_build(project, tmp_path):
    from tests.unit.remote.buildgrid_server import BuildGridServer, bgd_executable

    if bgd_executable() is None:
        pytest.skip("BuildGrid is not installed (pip install -e '.[test]')")
    a = project({"mcpp.toml": manifest(), "src/main.cpp": MAIN, "src/two.cpp": "int two() { return 2; }\n"})
    with BuildGridServer() as server:
        ci = Mcpp(tmp_path / "ci-home")
        first = ci.build_json("build", "--target", TRIPLE, "--remote", server.url, "--remote-upload", cwd=a)
        uploaded = first.executed()
        assert uploaded
        b = tmp_path / "laptop" / "b"  # another checkout, another home
        shutil.copytree(a, b, ignore=shutil.ignore_patterns("target"))
        laptop = Mcpp(tmp_path / "laptop-home")
        second = laptop.build_json("build", "--target", TRIPLE, "--remote", server.url, cwd=b)
        assert second.executed() == []
        assert sorted(e["id"] for e in second.events if e.get("status") == "remote") == sorted(uploaded)
        native = laptop.build_json("build", "--remote", server.url, cwd=b)
        statuses = {e["id"]: e["status"] for e in native.events if e.get("reason") == "action-finished"}
        assert statuses and set(statuses.values()) == {"executed"}, statuses
