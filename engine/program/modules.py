"""Which Starlark modules a program may `load`.

A build program may load
- a *rule module*: the dotted name a dependency's feature binds with `rule_module = "a.b.c"` to
  the `.star` file in that feature's `sources`; only a package whose dependency entry activates
  the feature (or says `host-module = true`) may load it: a rule is part of the feature's
  interface, not of the dependency as a whole;
- the engine's own library, `@mcpp//<file>.star`, the files of `starlark_rules/`.
A rule file (the module itself, or a helper it loads) may load the engine's library, the `.star`
files of its own feature's `sources` as `//src/common.star` (the path from its package's root),
and the rule modules its own package's dependencies provide it as host modules. Nothing else is
reachable: Starlark has no other way to read a file. Which files a loader may reach depends only
on who the loader is, never on what was loaded before (`resolve` is asked first, the module cache
second).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from mcpp import starlark_rules

from ..core.errors import ManifestError, McppError
from ..manifest import globs
from ..manifest.model import DependencySpec
from ..package.features import requested_features
from ..package.model import Package

LIBRARY_PREFIX = "@mcpp//"
LIBRARY_DIR = os.path.dirname(os.path.abspath(starlark_rules.__file__))


@dataclass(frozen=True)
class RuleModule:
    """One `.star` module a build program loads."""
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


def feature_stars(dep: Package, feature: str, expand: globs.Expand = globs.expand) -> list[str]:
    """The `.star` files of a feature's `sources`, relative to the package root."""
    spec = dep.manifest.features[feature]
    return [p for p in expand(dep.root, spec.sources) if p.endswith(".star")]


def rule_module_file(dep: Package, feature: str, expand: globs.Expand = globs.expand) -> str:
    """The `.star` file a feature's `rule_module` names: `rule_module_entry`, or the only `.star`
    in its `sources` (a rule module split into helpers names which file is the entry)."""
    spec = dep.manifest.features[feature]
    stars = feature_stars(dep, feature, expand)
    found = ", ".join(f"`{p}`" for p in stars) or "none"
    entry = spec.rule_module_entry
    if entry is not None:
        if os.path.normpath(entry) not in stars:
            raise ManifestError(
                f"feature `{feature}` declares rule_module_entry = \"{entry}\", which is not a `.star` file of its "
                f"`sources` (found: {found})", dep.manifest.position("features", feature, "rule_module_entry"))
        return os.path.join(dep.root, os.path.normpath(entry))
    if len(stars) != 1:
        hint = "; name the entry with `rule_module_entry = \"src/<file>.star\"`" if stars else ""
        raise ManifestError(
            f"feature `{feature}` declares rule_module = \"{spec.rule_module}\", which needs one `.star` file "
            f"in its `sources` or a `rule_module_entry` (found: {found}){hint}",
            dep.manifest.position("features", feature, "rule_module"))
    return os.path.join(dep.root, stars[0])


@dataclass(frozen=True)
class Loader:
    """Who is loading: the build program (`module` None) or a file of a rule module's package.
    What it may load follows from this alone."""
    label: str  # as messages name it: `build.star`, `rule module 'a.b'`, `//src/common.star`
    module: RuleModule | None = None


def package_file(loader: Loader, module_id: str) -> str | McppError:
    """`//src/common.star` for a rule file: a `.star` of its own feature's `sources`."""
    rule = loader.module
    rel = module_id[2:]
    norm = os.path.normpath(rel)
    stars = feature_stars(rule.package, rule.feature)
    if norm in stars and not norm.startswith(".."):
        return os.path.join(rule.package.root, norm)
    have = ", ".join(f"//{p}" for p in stars)
    return McppError(f"{loader.label} loads '{module_id}', which is not a `.star` file of feature "
                     f"`{rule.feature}`'s `sources` in {rule.label}",
                     notes=[f"       its `sources` have: {have}",
                            "       a rule file may load `.star` files its feature lists in `sources`"])


def resolve(loader: Loader, module_id: str, program_modules: dict[str, RuleModule]) -> tuple[str, Loader] | McppError:
    """The file `module_id` names for `loader` and the loader its own loads will run as, or the
    error that refuses it."""
    path = library_path(module_id)
    if path is not None:
        return path, Loader(module_id)
    if loader.label.startswith(LIBRARY_PREFIX):
        return McppError(f"the engine's library loads '{module_id}'; it may load only the engine's library")
    if loader.module is None:
        module = program_modules.get(module_id)
        if module is None:
            return McppError(f"{loader.label} loads '{module_id}'; it may load rule modules its dependencies "
                             f"provide and the engine's library")
        return module.path, Loader(f"rule module '{module_id}'", module)
    if module_id.startswith("//"):
        found = package_file(loader, module_id)
        return found if isinstance(found, McppError) else (found, Loader(module_id, loader.module))
    module = visible_rule_modules(loader.module.package).get(module_id)
    if module is None:
        return McppError(
            f"{loader.label} loads '{module_id}'; a rule file may load `//<path>.star` files of its own "
            f"feature's `sources`, the rule modules {loader.module.label} has as host modules, and the engine's "
            f"library (`@mcpp//<file>.star`)")
    return module.path, Loader(f"rule module '{module_id}'", module)


def visible_rule_modules(pkg: Package, expand: globs.Expand = globs.expand) -> dict[str, RuleModule]:
    """The rule modules `pkg`'s build program may load, by dotted name."""
    out: dict[str, RuleModule] = {}
    for spec, dep in pkg.edges:
        features = set(dep.manifest.features) if spec.host_module else requested_features(spec, dep)
        for f in sorted(features):
            name = dep.manifest.features[f].rule_module
            if name and name not in out:
                out[name] = RuleModule(name, rule_module_file(dep, f, expand), dep, f)
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
