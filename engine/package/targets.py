"""Which targets a package links (what the planner plans and what a host tool dependency may
name) and which sources belong to one target alone."""
from __future__ import annotations

import os

from ..core.conventions import HEADER_EXTS, Role
from ..core.errors import ManifestError
from ..core.paths import PkgPath
from ..manifest import globs
from ..manifest.model import DEFAULT_MAINS, TargetSpec
from .model import Package
from .sources import Source, role_of


def targets_of(pkg: Package) -> list[TargetSpec]:
    """The package's targets: `[targets.*]` as written, else `src/main.cpp` (or, in a C
    package, `src/main.c`) as a binary named after the package."""
    m = pkg.manifest
    if m.explicit_targets:
        return list(m.targets)
    main = default_main(m.root)
    return [TargetSpec(m.name, "bin", PkgPath(main))] if main else []


def default_main(root: str) -> str | None:
    """The implied entry source of a package's binary: `src/main.cpp`, else `src/main.c`."""
    return next((m for m in DEFAULT_MAINS if os.path.isfile(os.path.join(root, m))), None)


def owned_sources(pkg: Package, target: TargetSpec, expand: globs.Expand = globs.expand) -> list[Source]:
    """The sources only `target` compiles and links: its `main`, then its `sources` globs. They
    are never part of the package's library, so one binary does not link another's files."""
    m = pkg.manifest
    paths: list[str] = [target.main] if target.main else []
    if target.sources:
        paths += [p for p in expand(m.root, list(target.sources)) if p not in paths]
    out = []
    for path in paths:
        role = role_of(path)
        if role in (Role.HEADER, Role.STARLARK):
            continue
        if role not in (Role.C, Role.CXX, Role.MODULE, Role.ASM, Role.ASM_CPP):
            raise ManifestError(f"source file `{path}` of target `{target.name}` is not a C, C++, module or "
                                f"assembler source",
                                m.position("targets", target.name, "sources"))
        out.append(Source(PkgPath(path), role))
    return out


def owned_by_targets(pkg: Package, expand: globs.Expand = globs.expand) -> set[str]:
    """Every source a bin, test or shared target, or a library of its own, claims: what the
    package's static library leaves out."""
    return {s.path for t in targets_of(pkg) if t.kind in ("bin", "test", "shared") or own_library(t)
            for s in owned_sources(pkg, t, expand)}


def own_library(t: TargetSpec) -> bool:
    """A `lib` target with `sources`: a static library of its own (`libgtest_main.a`), not the
    package's."""
    return t.kind == "lib" and bool(t.sources)


def libraries(pkg: Package) -> dict[str, TargetSpec | None]:
    """The package's static libraries by name: the one named after the package (its [build]
    sources; None), a `lib` target without `sources` naming that same library (None), and each
    `lib` target with `sources` (itself)."""
    out: dict[str, TargetSpec | None] = {pkg.name: None}
    for t in targets_of(pkg):
        if t.kind == "lib":
            out[t.name] = t if t.sources else None
    return out


def library_closure(pkg: Package, names: list[str] | tuple[str, ...]) -> list[str]:
    """`names` and the libraries of the package they name in `deps`, each before the ones it
    depends on (the order a single-pass linker needs): `gtest_main` -> [gtest_main, gtest]. A
    `lib` target without `sources` is the package's library, whose own `deps` it carries."""
    by_name = {t.name: t for t in targets_of(pkg) if t.kind in ("lib", "shared")}
    seen: set[str] = set()
    post: list[str] = []

    def visit(n: str) -> None:
        if n in seen:
            return
        seen.add(n)
        t = by_name.get(n)
        deps = list(t.libs) if t is not None else []
        if t is None or (t.kind == "lib" and not own_library(t)):  # the package's library: what its aliases name
            deps += [d for a in by_name.values() if a.kind == "lib" and not own_library(a) for d in a.libs]
        for d in deps:
            visit(d)
        post.append(n)

    for n in names:
        visit(n)
    return list(reversed(post))


def target_headers(pkg: Package, target: TargetSpec, expand: globs.Expand = globs.expand) -> list[str]:
    """Absolute paths of the headers a target's own sources may include beyond the package's
    pool: those beside its sources (`examples/util.h`) and under its `include_dirs`."""
    m = pkg.manifest
    dirs = {os.path.dirname(s.path) for s in owned_sources(pkg, target, expand)}
    patterns = [f"{d}/*{e}" if d else f"*{e}" for d in sorted(dirs) for e in HEADER_EXTS]
    out = [os.path.join(m.root, p) for p in expand(m.root, patterns)] if patterns else []
    for d in target.include_dirs:
        full = os.path.normpath(os.path.join(m.root, d))
        if os.path.isdir(full):
            out += [os.path.join(full, p) for p in expand(full, ["**/*"], m.root)]
    return sorted(set(out))


def shared_names(t: TargetSpec) -> list[str]:
    """The file names of a shared target, from the link a consumer names to the real file:
    `[libz.so]`, or with a version `[libz.so, libz.so.1, libz.so.1.3.1]`. A `soname` of the
    form `lib<x>.so[.N]` also names the files (a target `z-shared` with soname `libz.so.1`)."""
    base = f"lib{t.name}.so"
    if t.soname and ".so" in t.soname:
        base = t.soname[:t.soname.index(".so") + 3]
    if not t.version:
        return [base] if not t.soname or t.soname == base else [base, t.soname]
    soname = t.soname or f"{base}.{t.version.split('.')[0]}"
    real = f"{base}.{t.version}"
    return list(dict.fromkeys([base, soname, real]))
