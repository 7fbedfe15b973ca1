"""Features across the graph: unified per package over every edge that requests them, `implies`
expanded, and the preprocessor define each active feature gets."""
from __future__ import annotations

import re

from ..core.errors import ManifestError, McppError
from ..manifest.model import DependencySpec
from .model import Package, Selection


def expand(p: Package, features: set[str]) -> set[str]:
    """`features` with everything they imply, transitively."""
    out: set[str] = set()
    todo = list(features)
    while todo:
        f = todo.pop()
        if f in out:
            continue
        out.add(f)
        todo.extend(p.manifest.features[f].implies)
    return out


def requested_features(spec: DependencySpec, dep: Package) -> set[str]:
    """The features of `dep` that the edge `spec` turns on (its defaults included), implies
    expanded: what "the consumer activated" means for rule modules and reexported tools."""
    wanted = set(spec.features) | (set(dep.manifest.default_features) if spec.default_features else set())
    return expand(dep, wanted)


def resolve_features(members: list[Package], order: list[Package], sel: Selection) -> None:
    """Set `features` of every package in `order`: the command line's requests on the members,
    then every edge's requests pushed down to its dependency."""
    requested: dict[Package, set[str]] = {p: set() for p in order}
    wants_default: dict[Package, bool] = {p: False for p in order}
    for m in members:
        if sel.all_features:
            requested[m] |= set(m.manifest.features)
        for f in sel.features:
            if f not in m.manifest.features:
                raise McppError(f"package `{m.name}` has no feature `{f}`"
                                + (f"; declared features: {', '.join(sorted(m.manifest.features))}"
                                   if m.manifest.features else "; it declares no features"))
            requested[m].add(f)
        wants_default[m] |= not sel.no_default_features
    # Parents come after their dependencies in `order`; walk it backwards to push requests down.
    for p in reversed(order):
        p.features = expand(p, requested[p] | (set(p.manifest.default_features) if wants_default[p] else set()))
        for spec, dep in p.edges:
            for i, f in enumerate(spec.features):
                if f not in dep.manifest.features:
                    raise ManifestError(
                        f"dependency `{spec.display}` has no feature `{f}`"
                        + (f"; declared features: {', '.join(sorted(dep.manifest.features))}"
                           if dep.manifest.features else "; it declares no features"),
                        p.manifest.source_position(*spec.keypath, "features", i))
            requested[dep] |= set(spec.features)
            wants_default[dep] |= spec.default_features


def feature_define(name: str) -> str:
    """The macro a compile of a package sees for each of its active features."""
    return "MCPP_FEATURE_" + re.sub(r"[^A-Za-z0-9]", "_", name).upper()
