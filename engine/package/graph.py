"""The package graph of one build: which manifest is the root, which packages take part, in
which order, and with which features active.

The root is found by searching upward from the working directory (or `--manifest-path`); a
manifest inside a workspace builds just that member, from the workspace's `target/` (as Cargo
does). Dependencies are path dependencies and index dependencies (resolved and locked for the
whole workspace first, engine/registry/, then loaded from their sources like a path dependency),
loaded recursively; a cycle is reported with the whole
cycle named. Features are unified per package across every edge that requests them, and a
feature's `[feature-deps.<f>]` joins the graph once the feature is active (to a fixed point).

Every manifest is folded here for one build context (target, host, accelerator set; see
`manifest/context.py`), so `build`, `run`, `test` and `metadata` read the same folded manifests:
there is no second place that interprets a manifest.
"""
from __future__ import annotations

import os

from ..core.errors import McppError
from ..core.settings import Settings
from ..manifest.context import BuildContext, resolve_context
from ..manifest.fold import fold
from ..manifest.load import MANIFEST_NAME, ManifestSource
from ..registry.presence import any_index_entry
from .features import resolve_features
from .loader import Loader, topological
from .locate import ManifestFiles, enclosing_workspace, find_manifest
from .model import PackageGraph, Selection


def build_context(selection: Selection, root: ManifestSource, files: ManifestFiles) -> BuildContext:
    """Target and accelerator set of this command line; the set defaults to the [build] accel of
    the package the command starts from (for a virtual workspace: its members', which must agree)."""
    declared = root.base.build.accel
    if root.base.is_virtual:
        found = {}
        for member in root.base.workspace_members or ():
            accel = files.get(os.path.join(root.root, member, MANIFEST_NAME)).base.build.accel
            if accel is not None and accel.entries:
                found[member] = accel
        if len({str(a) for a in found.values()}) > 1:
            listed = "; ".join(f"{m}: {a}" for m, a in found.items())
            raise McppError(f"the workspace members declare different [build] accel ({listed}); one build has one "
                            f"accelerator set: pass --accel or --no-accel")
        declared = next(iter(found.values()), None)
    return resolve_context(selection.target, selection.accel, selection.no_accel, declared)


def load_graph(cwd: str, manifest_path: str | None, selection: Selection,
               target_override: str | None = None, settings: Settings | None = None) -> PackageGraph:
    """The graph of the build `selection` asks for, starting from `cwd` (or `manifest_path`).
    `target_override` puts its `target/` elsewhere (a host tool builds into its consumer's);
    `settings` (default: this process's environment) locate the library index and its cache."""
    files = ManifestFiles(selection.strict)
    root_source = files.get(find_manifest(cwd, manifest_path))
    ctx = build_context(selection, root_source, files)
    manifest = fold(root_source, ctx)
    workspace = manifest if manifest.workspace_members is not None else enclosing_workspace(manifest, files, ctx)
    loader = Loader(files, ctx)
    # From the workspace's root every member builds; from inside a member that member alone,
    # unless `-p` names packages: then any package of the workspace, a sibling's included.
    if workspace is not None and (workspace is manifest or selection.packages):
        member_roots = [os.path.normpath(os.path.join(workspace.root, m)) for m in workspace.workspace_members]
        if not workspace.is_virtual:
            member_roots.insert(0, workspace.root)
    else:
        member_roots = [manifest.root]
    workspace_root = (workspace or manifest).root
    ws = workspace or manifest
    all_members = [os.path.normpath(os.path.join(ws.root, m)) for m in ws.workspace_members or ()]
    if not ws.is_virtual:
        all_members.insert(0, ws.root)
    loader.target_dir = target_override or os.path.join(workspace_root, "target")
    if any_index_entry(files, all_members):
        # The resolver, the lock and the index (engine/registry/) only for a workspace with index deps.
        from ..registry.session import Options, resolve_workspace

        loader.resolution = resolve_workspace(files, workspace_root, all_members, settings,
                                              Options(locked=selection.locked, offline=selection.offline))

    members = []
    for root in member_roots:
        if root == manifest.root:
            m = manifest
        elif workspace is not None and root == workspace.root:
            m = workspace
        else:
            m = loader.manifest(root)
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
    for p in members:  # a bin's `deps` may name a dev-dependency: `mcpp build` links it too
        # (a test target's do not: `mcpp build` builds no test, so what only tests use stays unbuilt)
        named = {d for t in p.manifest.targets if t.kind != "test" or selection.with_dev_deps for d in t.deps}
        for s in p.manifest.dev_dependencies:
            if s.key in named and not any(d.name == s.key for d in p.dev_deps):
                loader.add(p.dev_deps, p, s, [(p, None)])

    while True:
        order = topological(members)
        resolve_features(members, order, selection)
        if not loader.feature_edges(order):
            break
    return PackageGraph(root_manifest=workspace or manifest, workspace_root=workspace_root,
                        members=members, order=order, context=ctx, target_override=target_override,
                        lock_file=loader.resolution.lock_file if loader.resolution is not None else None,
                        resolution=loader.resolution, archive_members=selection.archive_members)
