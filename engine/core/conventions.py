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
# `.cuh` and `.hiph` are headers: never compiled, but a change to one can change what the build
# graph should be, so they invalidate like any other header.
HEADER_EXTS = (".h", ".hh", ".hpp", ".hxx", ".h++", ".inl", ".ipp", ".tpp", ".inc", ".cuh", ".hiph")
STARLARK_EXTS = (".star",)
# gcc's and clang's own conventions: `.s` goes straight to the assembler, `.S` and `.sx` through
# the C preprocessor first.
ASM_EXTS = (".s",)
ASM_CPP_EXTS = (".S", ".sx")

# Device sources: files written in a language another compiler consumes (a device compiler that
# accepts no C++20 modules), so the engine never scans them for imports, never makes a BMI of
# them and never compiles them itself: a rule's action does. The criterion is the compiler, not
# the language (`.sycl` holds plain C++). Rule packages add to this table with
# `device_extensions`; docs/accelerators.md has it as a table.
DEVICE_EXTS = (
    ".cu", ".hip",  # CUDA, HIP
    ".sycl",  # SYCL
    ".asc", ".cce",  # Ascend C
    # GLSL by stage, then without a stage (the shader rule, not this table, refuses a stageless name)
    ".comp", ".vert", ".frag", ".geom", ".tesc", ".tese", ".mesh", ".task",
    ".rgen", ".rint", ".rahit", ".rchit", ".rmiss", ".rcall", ".glsl",
    ".hlsl",  # HLSL
    ".cl",  # OpenCL C
    ".metal",  # Metal Shading Language
)

# Extension -> role. A package's further device extensions come from the features it activates
# (`device_extensions`), so they are not here.
ROLES: dict[str, Role] = {**{e: Role.C for e in C_EXTS}, **{e: Role.CXX for e in CXX_EXTS},
                          **{e: Role.MODULE for e in MODULE_EXTS}, **{e: Role.HEADER for e in HEADER_EXTS},
                          **{e: Role.STARLARK for e in STARLARK_EXTS}, **{e: Role.DEVICE for e in DEVICE_EXTS},
                          **{e: Role.ASM for e in ASM_EXTS}, **{e: Role.ASM_CPP for e in ASM_CPP_EXTS}}

COMPILED_EXTS = C_EXTS + CXX_EXTS + MODULE_EXTS + ASM_EXTS + ASM_CPP_EXTS

# The roles compiled by the C driver (never scanned for C++ modules, never given C++ flags).
C_DRIVER_ROLES = frozenset({Role.C, Role.ASM, Role.ASM_CPP})

# What a package compiles without `[build] sources`: every compiled extension under `src/`. Device
# extensions are not in it: a package that vendors a `.cu` and builds it elsewhere must not start
# compiling it when mcpp is upgraded; a device source joins the build only when it is named.
DEFAULT_GLOBS = tuple(f"src/**/*{e}" for e in COMPILED_EXTS)

# The headers beside a package's sources, which its compiles may `#include`.
HEADER_GLOBS = tuple(f"src/**/*{e}" for e in HEADER_EXTS)

# A package's build program, at its root (engine/program/).
PROGRAM_FILE = "build.star"

# The folders the engine makes directly under `target/`, beside the profiles' (`target/<profile>/`):
# host tools' builds (engine/build/host_tools.py), index packages' sources (engine/registry/cache.py),
# `mcpp package` and `mcpp pack` (engine/publish/), the timings report (engine/report/timings.py).
# A profile of one of these names would build into one of them.
TARGET_FOLDERS = ("host", "registry", "package", "pack", "mcpp-timings")
