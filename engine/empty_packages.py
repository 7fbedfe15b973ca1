"""A package that builds nothing because nothing matched its sources is almost always a mistake
(files under `source/` instead of `src/`, a misspelled glob), yet the build "finishes" with it:
say so. `sources = []` is the way to build nothing on purpose, and a virtual workspace has no
sources of its own; neither warns."""
from __future__ import annotations

from .conventions import DEFAULT_GLOBS
from .errors import McppError
from .package.sources import package_sources


def empty_package_warnings(graph, plan) -> list[str]:
    """`mcpp.toml:1:1: warning: ...` for each package of `graph` with no sources and no actions."""
    planned = set(plan.package_of.values())
    out: list[str] = []
    for pkg in graph.order:
        m = pkg.manifest
        if pkg.name in planned or m.is_virtual or m.build.sources == ():
            continue
        try:
            if package_sources(pkg):
                continue
        except McppError:
            continue  # reported where the sources are read
        patterns = m.build.sources if m.build.sources is not None else DEFAULT_GLOBS
        shown = ", ".join(f"`{p}`" for p in patterns[:3]) + (", ..." if len(patterns) > 3 else "")
        out.append(f"{m.position('package', prefer='key')}: warning: package `{pkg.name}` has no sources "
                   f"(nothing matches {shown}), so it builds nothing; write `sources = []` under [build] "
                   f"if that is meant")
    return out
