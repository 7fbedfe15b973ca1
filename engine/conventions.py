"""The file-name conventions of a package: which extension plays which role, and which files a
package compiles when its manifest names none.

Both the manifest (folding `[build] sources` puts the default globs in front of conditional ones)
and the package model (the role of each source) read these tables, so they live below both and
import nothing of the engine.
"""
from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    """What a file is to the build. A `StrEnum`: it compares, hashes and serialises as its value."""

    C = "c"
    CXX = "cxx"
    MODULE = "module"  # a C++ module interface unit
    HEADER = "header"  # never compiled on its own; reached through `#include`
    STARLARK = "starlark"  # rule modules and build programs: read by the engine, never compiled
    DEVICE = "device"  # compiled by a rule's action, not by the engine (see `device_extensions`)
    ASM = "asm"  # assembled as written: the C driver with no defines, include dirs or flags
    ASM_CPP = "asm-cpp"  # preprocessed first, so it takes the package's defines and include dirs


C_EXTS = (".c",)
CXX_EXTS = (".cpp", ".cc", ".cxx", ".c++", ".C")
MODULE_EXTS = (".cppm", ".ixx", ".mpp", ".cxxm", ".ccm", ".c++m")
HEADER_EXTS = (".h", ".hh", ".hpp", ".hxx", ".h++", ".inl", ".ipp", ".tpp", ".inc")
STARLARK_EXTS = (".star",)
# gcc's and clang's own conventions: `.s` goes straight to the assembler, `.S` and `.sx` through
# the C preprocessor first.
ASM_EXTS = (".s",)
ASM_CPP_EXTS = (".S", ".sx")

# Extension -> role. A device extension is not here: it is one only for a package that activates
# a dependency's feature declaring it.
ROLES: dict[str, Role] = {**{e: Role.C for e in C_EXTS}, **{e: Role.CXX for e in CXX_EXTS},
                          **{e: Role.MODULE for e in MODULE_EXTS}, **{e: Role.HEADER for e in HEADER_EXTS},
                          **{e: Role.STARLARK for e in STARLARK_EXTS},
                          **{e: Role.ASM for e in ASM_EXTS}, **{e: Role.ASM_CPP for e in ASM_CPP_EXTS}}

COMPILED_EXTS = C_EXTS + CXX_EXTS + MODULE_EXTS + ASM_EXTS + ASM_CPP_EXTS

# The roles compiled by the C driver (never scanned for C++ modules, never given C++ flags).
C_DRIVER_ROLES = frozenset({Role.C, Role.ASM, Role.ASM_CPP})

# What a package compiles without `[build] sources`: every compiled extension under `src/`.
DEFAULT_GLOBS = tuple(f"src/**/*{e}" for e in COMPILED_EXTS)

# The headers beside a package's sources, which its compiles may `#include`.
HEADER_GLOBS = tuple(f"src/**/*{e}" for e in HEADER_EXTS)
