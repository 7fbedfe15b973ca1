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
    name: str  # "std" or "std.compat"
    source: AbsPath  # the .cppm
    include_dirs: tuple[str, ...]


@lru_cache(maxsize=4)
def libcxx_modules(compiler: str) -> dict[str, StdModuleSource]:
    try:
        manifest = subprocess.run([compiler, LIBCXX_FLAG, "-print-file-name=libc++.modules.json"],
                                  capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        manifest = ""
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
