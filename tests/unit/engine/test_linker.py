"""engine/toolchain/linker.py: the linker a link's driver runs, looked up as gcc's collect2 and clang do,
so that another `ld` first on PATH (or in a `-B` directory) is another tool in the link's key."""
from __future__ import annotations

from pathlib import Path

from mcpp.engine.toolchain.linker import link_programs, search_dirs, selection_flags
from mcpp.engine.toolchain.compilers import Compiler, Toolchain


def exe(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def toolchain(family: str, programs: tuple[str, ...], target: str = "x86_64-linux-gnu") -> Toolchain:
    c = Compiler("/fake/bin/cc", "12.2.0", target, "0" * 64, programs)
    return Toolchain(name=family, family=family, cc=c, cxx=c, ar="/fake/bin/ar")


def test_gcc_runs_collect2_from_its_program_dirs_and_the_first_ld_on_path(tmp_path):
    lib = tmp_path / "lib/gcc/12"
    collect2 = exe(lib / "collect2")
    local, usr = tmp_path / "local/bin", tmp_path / "usr/bin"
    system_ld = exe(usr / "ld")
    local.mkdir(parents=True)
    tc = toolchain("gcc", (f"{lib}/",))
    path = (str(local), str(usr))
    assert link_programs(tc, tc.cxx, (), path) == (str(collect2), str(system_ld))
    # Another `ld` first on PATH: another tool, so another key.
    other = exe(local / "ld")
    assert link_programs(tc, tc.cxx, (), path) == (str(collect2), str(other))
    assert {str(local), str(usr), str(lib)} <= set(search_dirs(tc, tc.cxx, (), path))


def test_gcc_tries_each_name_through_its_program_dirs_before_path(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    exe(first / "ld")
    real = exe(second / "real-ld")  # collect2 looks for `real-ld` everywhere before `ld`
    exe(tmp_path / "bin/ld")
    tc = toolchain("gcc", (f"{first}/", f"{second}/"))
    assert link_programs(tc, tc.cxx, (), (str(tmp_path / "bin"),)) == (str(real),)


def test_a_b_prefix_and_fuse_ld_choose_the_linker(tmp_path):
    usr = tmp_path / "usr/bin"
    exe(usr / "ld")
    gold = exe(usr / "ld.gold")
    mine = exe(tmp_path / "mine/ld")
    tc = toolchain("gcc", ())
    path = (str(usr),)
    assert link_programs(tc, tc.cxx, ("-fuse-ld=gold",), path) == (str(gold),)
    assert link_programs(tc, tc.cxx, (f"-B{tmp_path / 'mine'}",), path) == (str(mine),)
    assert link_programs(tc, tc.cxx, ("-B", f"{tmp_path / 'mine'}/"), path) == (str(mine),)
    assert link_programs(tc, tc.cxx, ("-Brelative/",), path) == (str(usr / "ld"),)  # not staged: not seen
    argv = ["g++", "-o", "x", "a.o", "-B", "/d/", "-Wl,-Bstatic", "-fuse-ld=lld"]
    assert selection_flags(argv) == ("-B", "/d/", "-fuse-ld=lld")


def test_clang_prefers_the_target_prefixed_name_then_its_program_dirs_then_path(tmp_path):
    llvm, usr = tmp_path / "llvm/bin", tmp_path / "usr/bin"
    exe(llvm / "ld")
    prefixed = exe(usr / "x86_64-pc-linux-gnu-ld")
    tc = toolchain("clang", (str(llvm),), target="x86_64-pc-linux-gnu")
    assert link_programs(tc, tc.cxx, (), (str(usr),)) == (str(prefixed),)
    prefixed.unlink()
    assert link_programs(tc, tc.cxx, (), (str(usr),)) == (str(llvm / "ld"),)
    assert link_programs(tc, tc.cxx, ("--ld-path=/opt/ld",), ()) == ("/opt/ld",)
