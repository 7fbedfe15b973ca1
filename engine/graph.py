"""The package graph of one build: which manifest is the root, which packages take part, in
which order, and with which features active.

The root is found by searching upward from the working directory (or `--manifest-path`); a
manifest inside a workspace builds just that member, from the workspace's `target/` (as Cargo
does). Dependencies are path dependencies, loaded recursively; a cycle is reported with the whole
cycle named. Features are unified per package across every edge that requests them, and a
feature's `[feature-deps.<f>]` joins the graph once the feature is active (to a fixed point).

Every manifest is folded here for one build context (target, host, accelerator set; see
`manifest/context.py`), so `build`, `run`, `test` and `metadata` read the same folded manifests:
the one funnel of DESIGN §4 step 1.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from .errors import ManifestError, McppError
from .manifest.context import BuildContext, resolve_context
from .manifest.fold import fold
from .manifest.load import MANIFEST_NAME, ManifestSource, check_dependency_path, display_path, parse_manifest
from .manifest.model import DependencySpec, Manifest


@dataclass(eq=False)
class Package:
    manifest: Manifest
    deps: list["Package"] = field(default_factory=list)  # library deps, manifest order
    dev_deps: list["Package"] = field(default_factory=list)
    features: set[str] = field(default_factory=set)  # active, implies expanded
    edges: list[tuple[DependencySpec, "Package"]] = field(default_factory=list)  # every spec -> package
    # Edges with `tools = [...]`: the dependency is built for the build machine as a host tool
    # (engine/host_tools.py), never linked into this package, so it is not part of `order`.
    tool_edges: list[DependencySpec] = field(default_factory=list)
    program: object = None  # the evaluated build.star (program.ProgramResult), set by the build

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def version(self) -> str:
        return self.manifest.version

    @property
    def root(self) -> str:
        return self.manifest.root


@dataclass
class Selection:
    """What the command line asks for."""

    packages: tuple[str, ...] = ()  # -p; empty: the default members
    features: tuple[str, ...] = ()
    all_features: bool = False
    no_default_features: bool = False
    with_dev_deps: bool = False  # only `mcpp test` resolves [dev-dependencies]
    target: str | None = None  # --target TRIPLE; None: the host
    accel: str | None = None  # --accel SPEC; None: the root package's [build] accel
    no_accel: bool = False  # --no-accel: the empty accelerator set
    strict: bool = False  # --strict: unknown keys are errors
    cross_ok: bool = False  # True for `mcpp metadata`, which folds for any target without compiling


@dataclass
class PackageGraph:
    root_manifest: Manifest
    workspace_root: str  # where target/ lives
    members: list[Package]  # the packages this command builds
    order: list[Package]  # every package, dependencies first
    context: BuildContext | None = None  # what every manifest was folded for
    target_override: str | None = None  # a host tool's build puts its target/ elsewhere

    @property
    def target_dir(self) -> str:
        return self.target_override or os.path.join(self.workspace_root, "target")


def find_manifest(cwd: str, manifest_path: str | None) -> str:
    if manifest_path:
        path = os.path.abspath(manifest_path)
        if os.path.isdir(path):
            path = os.path.join(path, MANIFEST_NAME)
        if not os.path.isfile(path):
            raise McppError(f"manifest path `{manifest_path}` does not exist")
        return path
    d = os.path.abspath(cwd)
    while True:
        candidate = os.path.join(d, MANIFEST_NAME)
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(d)
        if parent == d:
            raise McppError(f"could not find `{MANIFEST_NAME}` in `{os.path.abspath(cwd)}` or any parent directory",
                            notes=["help: run `mcpp new NAME` to create a package"])
        d = parent


class _Sources:
    """Each manifest file parsed and validated once per command."""

    def __init__(self, strict: bool):
        self.strict = strict
        self.parsed: dict[str, ManifestSource] = {}

    def get(self, path: str) -> ManifestSource:
        if path not in self.parsed:
            self.parsed[path] = parse_manifest(path, self.strict)
        return self.parsed[path]


def _enclosing_workspace(manifest: Manifest, sources: _Sources, ctx: BuildContext) -> Manifest | None:
    """The workspace manifest above `manifest` that lists it as a member, if any."""
    d = os.path.dirname(manifest.root)
    while True:
        candidate = os.path.join(d, MANIFEST_NAME)
        if os.path.isfile(candidate):
            ws = sources.get(candidate).base
            if ws.workspace_members is not None:
                members = {os.path.normpath(os.path.join(ws.root, m)) for m in ws.workspace_members}
                return fold(sources.get(candidate), ctx) if manifest.root in members else None
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


class _Loader:
    def __init__(self, sources: _Sources, ctx: BuildContext):
        self.sources = sources
        self.ctx = ctx
        self.by_root: dict[str, Package] = {}
        self.by_name: dict[str, Package] = {}

    def manifest(self, root: str) -> Manifest:
        pkg = self.by_root.get(root)
        return pkg.manifest if pkg else fold(self.sources.get(os.path.join(root, MANIFEST_NAME)), self.ctx)

    def load(self, manifest: Manifest, stack: list[tuple[Package, DependencySpec | None]], dev: bool) -> Package:
        if manifest.root in self.by_root:
            return self.by_root[manifest.root]
        other = self.by_name.get(manifest.name)
        if other is not None:
            raise ManifestError(
                f"two packages are named `{manifest.name}`: `{display_path(other.root)}` and "
                f"`{display_path(manifest.root)}` (one build holds one package of each name)",
                manifest.position("package", "name"))
        pkg = Package(manifest)
        self.by_root[manifest.root] = pkg
        self.by_name[manifest.name] = pkg
        stack.append((pkg, None))
        for spec in manifest.dependencies:
            self.add(pkg.deps, pkg, spec, stack)
        if dev:
            for spec in manifest.dev_dependencies:
                self.add(pkg.dev_deps, pkg, spec, stack)
        stack.pop()
        return pkg

    def add(self, into: list[Package], pkg: Package, spec: DependencySpec, stack) -> None:
        """Follow `spec` from `pkg`: a library edge joins `into`, a tool edge `pkg.tool_edges`."""
        if spec.tools:
            check_dependency_path(spec.path, spec.written_path, spec.key, spec.path_pos)
            self.check_identity(spec, self.manifest(spec.path))
            pkg.tool_edges.append(spec)
        else:
            into.append(self.edge(pkg, spec, stack))

    def check_identity(self, spec: DependencySpec, dep_manifest: Manifest) -> None:
        if dep_manifest.is_virtual:
            raise ManifestError(f"dependency `{spec.key}` points at a virtual workspace, not a package", spec.path_pos)
        if dep_manifest.name != spec.key:
            raise ManifestError(
                f"dependency `{spec.display}` points at package `{dep_manifest.name}` "
                f"(its [package].name); the key must match the package name",
                spec.pos, [f"note: `{display_path(dep_manifest.path)}` declares name = \"{dep_manifest.name}\""])
        if spec.namespace is not None and dep_manifest.namespace != spec.namespace:
            raise ManifestError(
                f"dependency `{spec.display}` points at package `{dep_manifest.name}` in namespace "
                f"`{dep_manifest.namespace or '(none)'}`", spec.pos)

    def edge(self, pkg: Package, spec: DependencySpec, stack) -> Package:
        stack[-1] = (pkg, spec)
        in_progress = [p.root for p, _ in stack]
        if spec.path in in_progress:
            start = in_progress.index(spec.path)
            names = [p.name for p, _ in stack[start:]] + [stack[start][0].name]
            raise ManifestError(f"dependency cycle: {' -> '.join(names)}", spec.pos)
        check_dependency_path(spec.path, spec.written_path, spec.key, spec.path_pos)
        dep_manifest = self.manifest(spec.path)
        self.check_identity(spec, dep_manifest)
        dep = self.load(dep_manifest, stack, dev=False)
        pkg.edges.append((spec, dep))
        return dep

    def feature_edges(self, order: list[Package]) -> bool:
        """Add the [feature-deps.<f>] of every active feature not yet in the graph; True if any."""
        added = False
        for p in order:
            have = {id(spec) for spec, _ in p.edges} | {id(spec) for spec in p.tool_edges}
            for f in sorted(p.features):
                for spec in p.manifest.feature_deps.get(f, ()):
                    if id(spec) not in have:
                        self.add(p.deps, p, spec, [(p, None)])
                        added = True
        return added


def build_context(selection: Selection, root: ManifestSource, sources: _Sources) -> BuildContext:
    """Target and accelerator set of this command line; the set defaults to the [build] accel of
    the package the command starts from (for a virtual workspace: its members', which must agree)."""
    declared = root.base.build.accel
    if root.base.is_virtual:
        found = {}
        for member in root.base.workspace_members or ():
            accel = sources.get(os.path.join(root.root, member, MANIFEST_NAME)).base.build.accel
            if accel is not None and accel.entries:
                found[member] = accel
        if len({str(a) for a in found.values()}) > 1:
            listed = "; ".join(f"{m}: {a}" for m, a in found.items())
            raise McppError(f"the workspace members declare different [build] accel ({listed}); one build has one "
                            f"accelerator set: pass --accel or --no-accel")
        declared = next(iter(found.values()), None)
    ctx = resolve_context(selection.target, selection.accel, selection.no_accel, declared)
    if ctx.cross and not selection.cross_ok:
        raise McppError(f"cross-compiling for `{ctx.target.text}` is not supported yet: this engine builds with the "
                        f"host toolchain (`{ctx.host.text}`)",
                        notes=[f"help: `mcpp metadata --target {ctx.target.text}` shows the manifests folded for it"])
    return ctx


def load_graph(cwd: str, manifest_path: str | None, selection: Selection) -> PackageGraph:
    sources = _Sources(selection.strict)
    root_source = sources.get(find_manifest(cwd, manifest_path))
    ctx = build_context(selection, root_source, sources)
    manifest = fold(root_source, ctx)
    workspace = manifest if manifest.workspace_members is not None else _enclosing_workspace(manifest, sources, ctx)
    loader = _Loader(sources, ctx)
    if workspace is manifest:
        member_roots = [os.path.normpath(os.path.join(manifest.root, m)) for m in manifest.workspace_members]
        if not manifest.is_virtual:
            member_roots.insert(0, manifest.root)
    else:
        member_roots = [manifest.root]
    workspace_root = (workspace or manifest).root

    members = []
    for root in member_roots:
        m = manifest if root == manifest.root else loader.manifest(root)
        members.append(loader.load(m, [], dev=selection.with_dev_deps))
    if selection.packages:
        by_name = {p.name: p for p in loader.by_root.values()}
        chosen = []
        for name in selection.packages:
            if name not in by_name:
                raise McppError(f"package `{name}` is not part of this build; packages: {', '.join(sorted(by_name))}")
            chosen.append(by_name[name])
        members = chosen
        if selection.with_dev_deps:
            for p in members:
                if not p.dev_deps and p.manifest.dev_dependencies:
                    for s in p.manifest.dev_dependencies:
                        loader.add(p.dev_deps, p, s, [(p, None)])

    while True:
        order = _topological(members)
        _resolve_features(members, order, selection)
        if not loader.feature_edges(order):
            break
    return PackageGraph(root_manifest=workspace or manifest, workspace_root=workspace_root,
                        members=members, order=order, context=ctx)


def _topological(members: list[Package]) -> list[Package]:
    """Dependencies first. A cycle closed by a feature edge is found here (the loader's stack
    only sees the edges it is walking)."""
    order: list[Package] = []
    done: set[int] = set()
    path: list[Package] = []

    def visit(p: Package) -> None:
        if id(p) in done:
            return
        path.append(p)
        for spec, d in p.edges:
            if any(d is q for q in path):
                start = next(i for i, q in enumerate(path) if q is d)
                names = [q.name for q in path[start:]] + [d.name]
                raise ManifestError(f"dependency cycle: {' -> '.join(names)}", spec.pos)
            visit(d)
        path.pop()
        done.add(id(p))
        order.append(p)

    for m in members:
        visit(m)
    return order


def _resolve_features(members: list[Package], order: list[Package], sel: Selection) -> None:
    requested: dict[int, set[str]] = {id(p): set() for p in order}
    wants_default: dict[int, bool] = {id(p): False for p in order}
    for m in members:
        if sel.all_features:
            requested[id(m)] |= set(m.manifest.features)
        for f in sel.features:
            if f not in m.manifest.features:
                raise McppError(f"package `{m.name}` has no feature `{f}`"
                                + (f"; declared features: {', '.join(sorted(m.manifest.features))}"
                                   if m.manifest.features else "; it declares no features"))
            requested[id(m)].add(f)
        wants_default[id(m)] |= not sel.no_default_features
    # Parents come after their dependencies in `order`; walk it backwards to push requests down.
    for p in reversed(order):
        active = _expand(p, requested[id(p)] | (set(p.manifest.default_features) if wants_default[id(p)] else set()))
        p.features = active
        for spec, dep in _edges(p):
            for i, f in enumerate(spec.features):
                if f not in dep.manifest.features:
                    raise ManifestError(
                        f"dependency `{spec.display}` has no feature `{f}`"
                        + (f"; declared features: {', '.join(sorted(dep.manifest.features))}"
                           if dep.manifest.features else "; it declares no features"),
                        p.manifest.source_position(*spec.keypath, "features", i))
            requested[id(dep)] |= set(spec.features)
            wants_default[id(dep)] |= spec.default_features


def requested_features(spec: DependencySpec, dep: Package) -> set[str]:
    """The features of `dep` that the edge `spec` turns on (its defaults included), implies
    expanded: what "the consumer activated" means for rule modules and reexported tools."""
    wanted = set(spec.features) | (set(dep.manifest.default_features) if spec.default_features else set())
    return _expand(dep, wanted)


def _edges(p: Package):
    return iter(p.edges)


def _expand(p: Package, features: set[str]) -> set[str]:
    out: set[str] = set()
    todo = list(features)
    while todo:
        f = todo.pop()
        if f in out:
            continue
        out.add(f)
        todo.extend(p.manifest.features[f].implies)
    return out


def feature_define(name: str) -> str:
    return "MCPP_FEATURE_" + re.sub(r"[^A-Za-z0-9]", "_", name).upper()

