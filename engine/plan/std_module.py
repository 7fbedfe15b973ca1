"""`import std;` with clang and libc++: the standard library module is built like any other
module interface, from the `std.cppm` libc++ ships, once per build configuration.

libc++ describes its modules in `libc++.modules.json` next to the library; reading that file
(rather than hard-coding a path) keeps this working across LLVM versions and distributions.
"""
from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from functools import lru_cache

from ..core.errors import McppError
from ..core.paths import AbsPath

STD_MODULES = ("std", "std.compat")
LIBCXX_FLAG = "-stdlib=libc++"


@dataclass(frozen=True)
class StdModuleSource:
    """The source of one of the toolchain's standard library modules."""
    name: str  # "std" or "std.compat"
    source: AbsPath  # the .cppm
    include_dirs: tuple[str, ...]


@lru_cache(maxsize=4)
def libcxx_modules(compiler: str, flags: tuple[str, ...] = ()) -> dict[str, StdModuleSource]:
    """libc++'s module sources for `compiler` asked with `flags` (a cross toolchain's `--target=`
    and `--sysroot=`: the target's libc++, whose headers are configured for it)."""
    try:
        manifest = subprocess.run([compiler, *flags, LIBCXX_FLAG, "-print-file-name=libc++.modules.json"],
                                  capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        manifest = ""
    target = next((f[len("--target="):] for f in flags if f.startswith("--target=")), None)
    if target is not None and not _target_libcxx(compiler, flags, target):
        raise McppError(f"`import std;` for `{target}` needs the target's libc++ and its module sources, and "
                        f"`{compiler} --target={target}` finds none: give a sysroot holding a libc++ built for "
                        f"`{target}` (`[target.{target}] sysroot`); Debian's "
                        f"libc++-{_major(compiler)}-dev:{_debian_arch(target)} "
                        f"libc++abi-{_major(compiler)}-dev:{_debian_arch(target)} hold one, but Debian 12 cannot "
                        f"install them beside the host's (both own /usr/lib/llvm-{_major(compiler)}/lib)")
    if not manifest or not os.path.isfile(manifest):
        raise McppError(f"`import std;` needs libc++'s module sources, and `{compiler}` has none "
                        "(apt-get install libc++-19-dev libc++abi-19-dev)")
    base = os.path.dirname(os.path.realpath(manifest))
    with open(manifest) as f:
        data = json.load(f)
    out = {}
    for m in data.get("modules", []):
        local = m.get("local-arguments", {})
        out[m["logical-name"]] = StdModuleSource(
            m["logical-name"], AbsPath(os.path.normpath(os.path.join(base, m["source-path"]))),
            tuple(os.path.normpath(os.path.join(base, d)) for d in local.get("system-include-directories", [])))
    return out


# ELF `e_machine` of each arch (a cross clang finds the host's libc++ when the target has none)
_ELF_MACHINE = {"x86_64": 62, "aarch64": 183, "arm": 40, "i686": 3, "riscv64": 243, "loongarch64": 258}


def _target_libcxx(compiler: str, flags: tuple[str, ...], target: str) -> bool:
    """Whether the libc++ a link for `target` would take is built for the target's arch."""
    try:
        found = subprocess.run([compiler, *flags, LIBCXX_FLAG, "-print-file-name=libc++.so.1"],
                               capture_output=True, text=True, timeout=30).stdout.strip()
        with open(found, "rb") as f:
            head = f.read(20)
    except (OSError, subprocess.SubprocessError):
        return False
    want = _ELF_MACHINE.get(target.split("-")[0])
    return head[:4] == b"\x7fELF" and want is not None and int.from_bytes(head[18:20], "little") == want


def _major(compiler: str) -> str:
    """`19` for `clang++-19`; `NN` where the name carries no version."""
    tail = os.path.basename(compiler).rsplit("-", 1)
    return tail[1] if len(tail) == 2 and tail[1].isdigit() else "NN"


def _debian_arch(triple: str) -> str:
    """Debian's architecture name of a triple (`arm64` for `aarch64-linux-gnu`)."""
    arch = triple.split("-")[0]
    return {"aarch64": "arm64", "x86_64": "amd64", "i686": "i386", "riscv64": "riscv64"}.get(arch, arch)
