"""Which Starlark modules a program may `load`.

A build program may load
- a *rule module*: the dotted name a dependency's feature binds with `rule_module = "a.b.c"` to
  the `.star` file in that feature's `sources`; only a package whose dependency entry activates
  the feature (or says `host-module = true`) may load it: a rule is part of the feature's
  interface, not of the dependency as a whole;
- the engine's own library, `@mcpp//<file>.star`, the files of `starlark_rules/`.
A rule module may load only the engine's library. Nothing else is reachable: Starlark has no
other way to read a file.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from mcpp import starlark_rules

from ..errors import ManifestError, McppError
from ..package.features import requested_features
from ..package.model import Package
from ..manifest import globs
from ..manifest.model import DependencySpec

LIBRARY_PREFIX = "@mcpp//"
LIBRARY_DIR = os.path.dirname(os.path.abspath(starlark_rules.__file__))


@dataclass(frozen=True)
class RuleModule:
    name: str  # the dotted name
    path: str  # absolute .star file
    package: Package
    feature: str

    @property
    def label(self) -> str:
        """`example:rules-toy`: the package that provides it, as the `Rules` line shows it."""
        m = self.package.manifest
        return f"{m.namespace}:{m.name}" if m.namespace else m.name


def library_path(module_id: str) -> str | None:
    """The file of `@mcpp//<name>.star`, or None when the id is not the library's."""
    if not module_id.startswith(LIBRARY_PREFIX):
        return None
    name = module_id[len(LIBRARY_PREFIX):]
    if not name.endswith(".star") or "/" in name or name.startswith("."):
        return None
    path = os.path.join(LIBRARY_DIR, name)
    return path if os.path.isfile(path) else None


def rule_module_file(dep: Package, feature: str) -> str:
    """The `.star` file a feature's `rule_module` names: the one `.star` in its `sources`."""
    spec = dep.manifest.features[feature]
    stars = [p for p in globs.expand(dep.root, spec.sources) if p.endswith(".star")]
    if len(stars) != 1:
        found = ", ".join(f"`{p}`" for p in stars) or "none"
        raise ManifestError(
            f"feature `{feature}` declares rule_module = \"{spec.rule_module}\", which needs exactly one `.star` "
            f"file in its `sources` (found: {found})", dep.manifest.position("features", feature, "rule_module"))
    return os.path.join(dep.root, stars[0])


def visible_rule_modules(pkg: Package) -> dict[str, RuleModule]:
    """The rule modules `pkg`'s build program may load, by dotted name."""
    out: dict[str, RuleModule] = {}
    for spec, dep in pkg.edges:
        features = set(dep.manifest.features) if spec.host_module else requested_features(spec, dep)
        for f in sorted(features):
            name = dep.manifest.features[f].rule_module
            if name and name not in out:
                out[name] = RuleModule(name, rule_module_file(dep, f), dep, f)
    return out


def section_of(spec: DependencySpec) -> str:
    return f"[feature-deps.{spec.feature}]" if spec.feature else "[dependencies]"


def unavailable(program: str, module_id: str, pkg: Package) -> McppError:
    """The error for a `load` of a rule module that no dependency provides, naming the entries
    that would provide it with `host-module = true` (docs/rules.md shows the message)."""
    if module_id.startswith(LIBRARY_PREFIX):
        have = ", ".join(sorted(LIBRARY_PREFIX + n for n in os.listdir(LIBRARY_DIR) if n.endswith(".star")))
        return McppError(f"{program} loads '{module_id}', which is not a file of the engine's library",
                         notes=[f"       the library has: {have}"])
    notes = []
    for spec, dep in pkg.edges:
        for _, feature in sorted(dep.manifest.features.items()):
            if feature.rule_module == module_id:
                notes.append(f"       declared without `host-module = true`: {spec.key} (in {section_of(spec)})")
                break
    return McppError(f"{program} loads '{module_id}', and no dependency provides it as a host module.", notes=notes)
