"""Following dependency edges from the members: each package loaded once, its identity checked
against the entry that names it, a cycle reported with the whole cycle named, and the order
(dependencies first) the rest of the build walks."""
from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING

from ..core.errors import ManifestError
from ..core.paths import AbsPath
from ..manifest.context import BuildContext
from ..manifest.deps import INDEX_NAMESPACE, check_version
from ..manifest.fold import fold
from ..manifest.load import MANIFEST_NAME, check_dependency_path, display_path
from ..manifest.model import DependencySpec, Manifest
from .locate import ManifestFiles
from .model import Package, declared_by

if TYPE_CHECKING:  # the resolver is imported only for a graph with index deps (graph.py)
    from ..registry.session import Resolution


class Loader:
    def __init__(self, files: ManifestFiles, ctx: BuildContext):
        self.files = files
        self.ctx = ctx
        # The index packages' versions and directories (engine/registry/), once the graph is
        # known to write any; `target_dir` is where the build reads their sources from.
        self.resolution: Resolution | None = None
        self.target_dir = ""
        self.by_root: dict[str, Package] = {}
        self.by_name: dict[str, Package] = {}

    def manifest(self, root: str) -> Manifest:
        pkg = self.by_root.get(root)
        return pkg.manifest if pkg else fold(self.files.get(os.path.join(root, MANIFEST_NAME)), self.ctx)

    def load(self, manifest: Manifest, stack: list[tuple[Package, DependencySpec | None]], dev: bool) -> Package:
        """The package of `manifest` with every package it reaches, loaded depth first. The walk
        keeps its own stack (`frames`), so a chain of dependencies may be as long as a real graph
        makes it; `stack` holds the packages in progress, each with the edge it is following."""
        if manifest.root in self.by_root:
            return self.by_root[manifest.root]
        pkg = self._register(manifest)
        frames = [(pkg, self._entries(pkg, dev))]
        stack.append((pkg, None))
        while frames:
            owner, todo = frames[-1]
            entry = next(todo, None)
            if entry is None:
                frames.pop()
                stack.pop()
                continue
            into, spec = entry
            spec = self.located(spec)
            if spec.tools:
                self._tool_edge(owner, spec)
                continue
            dep_manifest = self._follow(owner, spec, stack)
            dep = self.by_root.get(dep_manifest.root)
            if dep is None:
                dep = self._register(dep_manifest)
                frames.append((dep, self._entries(dep, dev=False)))
                stack.append((dep, None))
            owner.edges.append((spec, dep))
            into.append(dep)
        return pkg

    def _register(self, manifest: Manifest) -> Package:
        other = self.by_name.get(manifest.name)
        if other is not None:
            raise ManifestError(
                f"two packages are named `{manifest.name}`: `{display_path(other.root)}` and "
                f"`{display_path(manifest.root)}` (one build holds one package of each name)",
                manifest.position("package", "name"))
        pkg = Package(manifest)
        self.by_root[manifest.root] = pkg
        self.by_name[manifest.name] = pkg
        return pkg

    @staticmethod
    def _entries(pkg: Package, dev: bool):
        """The edges `pkg` declares, each with the list it joins. A build dependency is a rule
        package its program loads (`host-module = true`): an edge like any other, whose
        (Starlark-only) package links nothing."""
        m = pkg.manifest
        entries = [(pkg.deps, s) for s in (*m.dependencies, *m.build_dependencies)]
        if dev:
            entries += [(pkg.dev_deps, s) for s in m.dev_dependencies]
        return iter(entries)

    def add(self, into: list[Package], pkg: Package, spec: DependencySpec, stack) -> None:
        """Follow `spec` from `pkg`: a library edge joins `into`, a tool edge `pkg.tool_edges`."""
        spec = self.located(spec)
        if spec.tools:
            self._tool_edge(pkg, spec)
            return
        dep = self.load(self._follow(pkg, spec, stack), stack, dev=False)
        pkg.edges.append((spec, dep))
        into.append(dep)

    def located(self, spec: DependencySpec) -> DependencySpec:
        """`spec` with its package's directory: an index dependency's is the locked release's."""
        if not spec.index:
            return spec
        root = None
        if self.resolution is not None:
            root = self.resolution.root_of(spec.namespace or "", spec.key, self.target_dir)
        if root is None:
            raise ManifestError(f"index dependency `{spec.display}` is not in the lock", spec.pos)
        return replace(spec, path=AbsPath(root), written_path=display_path(root))

    def _tool_edge(self, pkg: Package, spec: DependencySpec) -> None:
        check_dependency_path(spec.path, spec.written_path, spec.key, spec.path_pos)
        self.check_identity(spec, self.manifest(spec.path))
        pkg.tool_edges.append(spec)

    def _follow(self, pkg: Package, spec: DependencySpec, stack) -> Manifest:
        """The manifest `spec` of `pkg` names, checked: no cycle through the packages in progress,
        a path that may be followed, the identity the entry asks for."""
        stack[-1] = (pkg, spec)
        in_progress = [p.root for p, _ in stack]
        if spec.path in in_progress:
            start = in_progress.index(spec.path)
            names = [p.name for p, _ in stack[start:]] + [stack[start][0].name]
            raise ManifestError(f"dependency cycle: {' -> '.join(names)}", spec.pos)
        check_dependency_path(spec.path, spec.written_path, spec.key, spec.path_pos)
        dep_manifest = self.manifest(spec.path)
        self.check_identity(spec, dep_manifest)
        return dep_manifest

    def check_identity(self, spec: DependencySpec, dep_manifest: Manifest) -> None:
        if dep_manifest.is_virtual:
            raise ManifestError(f"dependency `{spec.key}` points at a virtual workspace, not a package", spec.path_pos)
        if dep_manifest.name != spec.key:
            raise ManifestError(
                f"dependency `{spec.display}` points at package `{dep_manifest.name}` "
                f"(its [package].name); the key must match the package name",
                spec.pos, [f"note: `{display_path(dep_manifest.path)}` declares name = \"{dep_manifest.name}\""])
        found_namespace = dep_manifest.namespace or (INDEX_NAMESPACE if spec.index else None)
        if spec.namespace is not None and found_namespace != spec.namespace:
            raise ManifestError(
                f"dependency `{spec.display}` points at package `{dep_manifest.name}` in namespace "
                f"`{dep_manifest.namespace or '(none)'}`", spec.pos)
        check_version(spec, dep_manifest.version, dep_manifest.path)

    def feature_edges(self, order: list[Package]) -> bool:
        """Add the [feature-deps.<f>] of every active feature not yet in the graph; True if any."""
        added = False
        for p in order:
            have = {declared_by(p, spec) for spec, _ in p.edges} | {declared_by(p, spec) for spec in p.tool_edges}
            for f in sorted(p.features):
                for spec in p.manifest.feature_deps.get(f, ()):
                    if declared_by(p, spec) not in have:
                        self.add(p.deps, p, spec, [(p, None)])
                        added = True
        return added


def topological(members: list[Package]) -> list[Package]:
    """Dependencies first. A cycle closed by a feature edge is found here (the loader's stack
    only sees the edges it is walking). Walked with a stack of its own: a chain of dependencies
    may be as long as a real graph makes it."""
    order: list[Package] = []
    done: set[Package] = set()
    path: list[Package] = []  # the packages in progress, outermost first
    on_path: set[Package] = set()
    for m in members:
        if m in done:
            continue
        frames = [(m, iter(m.edges))]
        path.append(m)
        on_path.add(m)
        while frames:
            p, edges = frames[-1]
            edge = next(edges, None)
            if edge is None:
                frames.pop()
                path.pop()
                on_path.discard(p)
                done.add(p)
                order.append(p)
                continue
            spec, d = edge
            if d in on_path:
                start = path.index(d)
                names = [q.name for q in path[start:]] + [d.name]
                raise ManifestError(f"dependency cycle: {' -> '.join(names)}", spec.pos)
            if d not in done:
                frames.append((d, iter(d.edges)))
                path.append(d)
                on_path.add(d)
    return order
