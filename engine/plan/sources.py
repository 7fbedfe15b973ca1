"""Which files a package compiles, and what role each one plays.

The role comes from the extension alone (a C source, a C++ source, a C++ module interface, a
header). A file named by `[build] sources` whose extension has no role is an error rather than
silently skipped: a typo in a glob should not drop a file from the build.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from ..errors import ManifestError
from ..graph import Package
from ..manifest import globs

C_EXTS = (".c",)
CXX_EXTS = (".cpp", ".cc", ".cxx", ".c++", ".C")
MODULE_EXTS = (".cppm", ".ixx", ".mpp", ".cxxm", ".ccm", ".c++m")
HEADER_EXTS = (".h", ".hh", ".hpp", ".hxx", ".h++", ".inl", ".ipp", ".tpp", ".inc")

ROLES = {**{e: "c" for e in C_EXTS}, **{e: "cxx" for e in CXX_EXTS},
         **{e: "module" for e in MODULE_EXTS}, **{e: "header" for e in HEADER_EXTS}}

_COMPILED = C_EXTS + CXX_EXTS + MODULE_EXTS
DEFAULT_GLOBS = tuple(f"src/**/*{e}" for e in _COMPILED)


@dataclass(frozen=True)
class Source:
    path: str  # package-relative, `/`-separated
    role: str  # "c", "cxx" or "module"


def role_of(path: str) -> str | None:
    return ROLES.get(os.path.splitext(path)[1])


def package_sources(pkg: Package) -> list[Source]:
    """The compiled sources of `pkg` with its active features applied, in a stable order."""
    m = pkg.manifest
    patterns = list(m.build.sources) if m.build.sources is not None else list(DEFAULT_GLOBS)
    # Files a feature claims are built only with that feature, even when a broad glob names them.
    feature_only: set[str] = set()
    active_feature_files: set[str] = set()
    for f in m.features.values():
        if f.sources:
            matched = globs.expand(m.root, f.sources)
            if f.name in pkg.features:
                patterns.extend(f.sources)
                active_feature_files.update(matched)
            else:
                feature_only.update(matched)
    if m.lib_path:
        patterns.append(m.lib_path)
    out = []
    for path in globs.expand(m.root, patterns):
        if path in feature_only and path not in active_feature_files:
            continue
        role = role_of(path)
        if role is None:
            pos = m.build.sources_pos or m.position("build", "sources")
            raise ManifestError(
                f"source file `{path}` has no role: extension `{os.path.splitext(path)[1] or '(none)'}` "
                f"is not a C, C++, module-interface or header extension",
                pos, [f"note: C++ sources: {' '.join(CXX_EXTS)}; modules: {' '.join(MODULE_EXTS)}; C: .c"])
        if role != "header":
            out.append(Source(path, role))
    return out


def include_dirs(pkg: Package) -> list[str]:
    """Absolute include directories a package exposes to itself and its dependents."""
    m = pkg.manifest
    dirs = [os.path.normpath(os.path.join(m.root, d)) for d in m.build.include_dirs]
    conventional = os.path.join(m.root, "include")
    if os.path.isdir(conventional) and conventional not in dirs:
        dirs.append(conventional)
    return dirs


def header_pool(pkg: Package) -> list[str]:
    """Absolute paths of the files a compile of `pkg` may `#include` from the package itself:
    headers beside its sources, and everything under its include directories. The sandbox
    stages these; the depfile tells which of them were read (and so enter the key)."""
    m = pkg.manifest
    out = [os.path.join(m.root, p) for p in globs.expand(m.root, [f"src/**/*{e}" for e in HEADER_EXTS])]
    for d in include_dirs(pkg):
        out += [os.path.join(d, p) for p in globs.expand(d, ["**/*"])]
    return sorted(set(out))


def glob_roots(pkg: Package) -> list[str]:
    """Absolute directories whose contents decide what `pkg` compiles: the literal directory
    prefix of each source pattern (`src/**/*.cpp` -> `src/`), the include directories and the
    header pool's `src/`. A new file can only join the build inside one of these."""
    m = pkg.manifest
    patterns = list(m.build.sources) if m.build.sources is not None else list(DEFAULT_GLOBS)
    for f in m.features.values():
        patterns += list(f.sources)
    patterns.append("src/x")
    roots = []
    for pattern in patterns:
        parts = pattern.lstrip("!").split("/")
        literal = []
        for part in parts[:-1]:
            if any(c in part for c in "*?[{"):
                break
            literal.append(part)
        roots.append(os.path.normpath(os.path.join(m.root, *literal)))
    return sorted(set(roots) | set(include_dirs(pkg)))
