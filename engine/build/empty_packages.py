"""A package that builds nothing because nothing matched its sources is almost always a mistake
(files under `source/` instead of `src/`, a misspelled glob), yet the build "finishes" with it:
say so. `sources = []` is the way to build nothing on purpose, a virtual workspace has no
sources of its own, and a rule package (a feature binding a `rule_module`) holds Starlark, not C
or C++; none of them warns unless C or C++ files lie in its tree."""
from __future__ import annotations

from mcpp.cas.action import ActionKind

from ..core.conventions import COMPILED_EXTS, DEFAULT_GLOBS
from ..core.errors import McppError
from ..manifest import globs
from ..package.sources import package_sources


def empty_package_warnings(graph, plan, expand: globs.Expand = globs.expand) -> list[str]:
    """`mcpp.toml:1:1: warning: ...` for each package of `graph` with no sources and no actions,
    or with no sources and only its build program's actions while C or C++ files lie in its
    tree: those actions (a generated config header) would hide that nothing was compiled.
    `expand` expands the source globs (manifest/globs.py)."""
    asked = [p for p in graph.order if not (p.manifest.is_virtual or p.manifest.build.sources == ())]
    if not asked:
        return []
    compiled = _compiled(plan, {p.name for p in asked})
    planned: set[str] | None = None  # made for the first package that needs it
    out: list[str] = []
    for pkg in asked:
        m = pkg.manifest
        if pkg.name in compiled:
            continue
        if planned is None:
            planned = set(plan.package_of.values())
        try:
            if package_sources(pkg, expand):
                continue
            rules = any(f.rule_module for f in m.features.values())
            stray = expand(m.root, [f"**/*{e}" for e in COMPILED_EXTS]) if pkg.name in planned or rules else []
        except McppError:
            continue  # reported where the sources are read
        if (pkg.name in planned or rules) and not stray:
            continue  # build-program actions alone (a code generator, an archive), or a rule package
        patterns = m.build.sources if m.build.sources is not None else DEFAULT_GLOBS
        shown = ", ".join(f"`{p}`" for p in patterns[:3]) + (", ..." if len(patterns) > 3 else "")
        found = (f"; its C/C++ files ({', '.join(f'`{p}`' for p in stray[:3])}{', ...' if len(stray) > 3 else ''})"
                 f" are not compiled: name them in [build] sources") if stray else ""
        out.append(f"{m.position('package', prefer='key')}: warning: package `{pkg.name}` has no sources "
                   f"(nothing matches {shown}), so it builds nothing{found}; write `sources = []` under [build] "
                   f"if that is meant")
    return out


def _compiled(plan, names: set[str]) -> set[str]:
    """Those of the packages `names` that planned an action besides a build program's: the plan
    is walked only until each is found (every package compiles something, in a build that
    warns of nothing, and its first compile comes early)."""
    found: set[str] = set()
    for a in plan.actions:
        if a.kind != ActionKind.RULE:
            name = plan.package_of[a.id]
            if name in names and name not in found:
                found.add(name)
                if len(found) == len(names):
                    break
    return found
