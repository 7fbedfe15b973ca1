"""Which files a package compiles, and what role each one plays.

The role comes from the extension alone (a C source, a C++ source, a C++ module interface, a
header; the tables are in `engine/core/conventions.py`); an extension that a feature the package
activates declares in `device_extensions` makes a device source instead. A file named by
`[build] sources` whose extension has no role is an error rather than silently skipped: a typo
in a glob should not drop a file from the build.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from ..core.conventions import (
    ASM_CPP_EXTS, ASM_EXTS, CXX_EXTS, DEFAULT_GLOBS, HEADER_GLOBS, MODULE_EXTS, ROLES, Role)
from ..core.errors import ManifestError
from ..core.paths import PkgPath
from ..manifest import globs
from .features import requested_features
from .model import Package


@dataclass(frozen=True)
class Source:
    """One source file of a package and its role."""
    path: PkgPath  # `/`-separated
    role: Role  # C, CXX, MODULE, or DEVICE (compiled by a rule's action, not by the engine)

    def __post_init__(self):
        if type(self.role) is not Role:  # a role spelled as its value is the role
            object.__setattr__(self, "role", Role(self.role))


def role_of(path: str, device_exts: frozenset[str] = frozenset()) -> Role | None:
    ext = extension(path)
    return Role.DEVICE if ext in device_exts else ROLES.get(ext)


def extension(path: str) -> str:
    """`os.path.splitext(path)[1]` of a `/`-separated path, without its generality on the common
    name (`f.cpp`: a name whose first character is not a dot), asked once per source per build."""
    dot = path.rfind(".")
    start = path.rfind("/") + 1
    if dot > start and path[start] != ".":
        return path[dot:]
    return os.path.splitext(path)[1]


def device_extensions(pkg: Package) -> dict[str, str]:
    """Extension -> rule module (or feature) that declares it, for the extensions `pkg` treats
    as device sources: those of every feature it activates on a dependency (the feature's
    `device_extensions`, docs/rules.md), and of its own active features."""
    out: dict[str, str] = {}
    for spec, dep in pkg.edges:
        for f in sorted(requested_features(spec, dep)):
            feature = dep.manifest.features[f]
            for ext in feature.device_extensions:
                out.setdefault(ext, feature.rule_module or f"{dep.name}/{f}")
    for f in sorted(pkg.features):
        feature = pkg.manifest.features[f]
        for ext in feature.device_extensions:
            out.setdefault(ext, feature.rule_module or f"{pkg.name}/{f}")
    return out


def package_sources(pkg: Package, expand: globs.Expand = globs.expand) -> list[Source]:
    """The sources of `pkg` with its active features applied, in a stable order: what the engine
    compiles, and the device sources (`role == Role.DEVICE`) a rule's action must claim. Device
    extensions are never in the default glob: a device source is built because it is named.
    `expand`: how globs are expanded (a warm server's build child remembers them, manifest/globs.py)."""
    m = pkg.manifest
    device_exts = frozenset(device_extensions(pkg))
    patterns = _declared_patterns(pkg)
    # Files a feature claims are built only with that feature, even when a broad glob names them.
    feature_only: set[str] = set()
    active_feature_files: set[str] = set()
    for f in m.features.values():
        if f.sources:
            matched = _expand(pkg, expand, m.root, f.sources)
            if f.name in pkg.features:
                patterns.extend(f.sources)
                active_feature_files.update(matched)
            else:
                feature_only.update(matched)
    out = []
    for path in _expand(pkg, expand, m.root, patterns):
        if path in feature_only and path not in active_feature_files:
            continue
        role = role_of(path, device_exts)
        if role is None:
            pos = m.build.sources_pos or m.position("build", "sources")
            raise ManifestError(
                f"source file `{path}` has no role: extension `{os.path.splitext(path)[1] or '(none)'}` "
                f"is not a C, C++, module-interface, assembler or header extension",
                pos, [f"note: C++ sources: {' '.join(CXX_EXTS)}; modules: {' '.join(MODULE_EXTS)}; C: .c; "
                      f"assembler: {' '.join(ASM_EXTS + ASM_CPP_EXTS)}",
                      "note: another extension is a device source only for a package that activates a "
                      "dependency's feature declaring it in `device_extensions`"])
        if role not in (Role.HEADER, Role.STARLARK):
            out.append(Source(PkgPath(path), role))
    return out


def first_source(pkg: Package) -> Source | None:
    """One C++ source `package_sources(pkg)` holds, found without listing the whole package
    (`globs.first`): the first build of a fresh home starts its compile while the rest is listed
    and planned (engine/plan/planner.py). None for a package whose features name sources (what
    they claim needs the whole listing) or where the quick look is not sure."""
    m = pkg.manifest
    if any(f.sources for f in m.features.values()):
        return None
    path = globs.first(m.root, _declared_patterns(pkg))
    if path is None or role_of(path, frozenset(device_extensions(pkg))) is not Role.CXX:
        return None
    return Source(PkgPath(path), Role.CXX)


def _declared_patterns(pkg: Package) -> list[str]:
    """The globs of a package's sources before its features add theirs: `[build] sources` (or the
    default ones under `src/`) and the library's path."""
    m = pkg.manifest
    patterns = list(m.build.sources) if m.build.sources is not None else list(DEFAULT_GLOBS)
    if m.lib_path:
        patterns.append(m.lib_path)
    return patterns


def _expand(pkg: Package, expand: globs.Expand, root: str, patterns: list[str],
            boundary: str | None = None) -> list[str]:
    """`expand`, a file it refuses (not a regular file, not UTF-8, unreadable) reported at the
    manifest's `[build] sources`: what selected the file."""
    try:
        return expand(root, patterns, boundary)
    except ManifestError as e:
        if e.pos is None:
            m = pkg.manifest
            e.pos = m.build.sources_pos or m.position("build", "sources")
            if m.build.sources_pos is None:
                e.notes.append("note: no `[build] sources` is declared: the default globs under `src/` select it")
        raise


def include_dirs(pkg: Package) -> list[str]:
    """Absolute include directories a package exposes to itself and its dependents."""
    m = pkg.manifest
    dirs = [os.path.normpath(os.path.join(m.root, d)) for d in m.build.include_dirs]
    conventional = os.path.join(m.root, "include")
    if os.path.isdir(conventional) and conventional not in dirs:
        dirs.append(conventional)
    if pkg.program is not None:  # `mcpp.include_dir(...)` of its build program
        dirs += [d for d in pkg.program.include_dirs if d not in dirs]
    return dirs


def header_pool(pkg: Package, expand: globs.Expand = globs.expand) -> list[str]:
    """Absolute paths of the files a compile of `pkg` may `#include` from the package itself:
    headers beside its sources, and everything under its include directories. The sandbox
    stages these; the depfile tells which of them were read (and so enter the key)."""
    m = pkg.manifest
    out = [os.path.join(m.root, p) for p in _expand(pkg, expand, m.root, list(HEADER_GLOBS))]
    for d in include_dirs(pkg):
        # An include directory of the package may link to the package's other files (`../src`);
        # one elsewhere (or generated under `target/`, which may be a link to a scratch disk)
        # keeps to itself.
        inside_pkg = d.startswith(m.root.rstrip("/") + "/") and not d.startswith(os.path.join(m.root, "target", ""))
        boundary = m.root if inside_pkg else d
        out += [os.path.join(d, p) for p in _expand(pkg, expand, d, ["**/*"], boundary)]
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
