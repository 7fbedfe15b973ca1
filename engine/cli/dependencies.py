"""`mcpp update`, `mcpp vendor`, `mcpp tree`: the index dependencies of a workspace, locked
(engine/registry/, docs/dependencies.md)."""
from __future__ import annotations

import os

import click

from ..core.errors import display_path
from ..package.graph import load_graph
from ..package.locate import find_manifest
from ..package.model import Package, Selection
from ..registry.session import refresh_lock
from ..registry.vendor import vendor


def _status(verb: str, text: str) -> None:
    click.echo(f"{verb:>12} {text}", err=True)


@click.command("update")
@click.option("-p", "--package", "packages", multiple=True, metavar="NAME",
              help="Move only these packages (default: every locked package).")
@click.option("--offline", is_flag=True, help="Never read the library index (the source cache only).")
@click.pass_obj
def update_cmd(ctx, packages, offline):
    """Resolve the index dependencies again, taking newer versions, and rewrite mcpp.lock."""
    manifest = find_manifest(os.getcwd(), ctx.manifest_path)
    resolution = refresh_lock(manifest, ctx.settings, update=tuple(packages), offline=offline)
    for line in resolution.changed:
        _status("Updating", line)
    if not resolution.changed:
        _status("Locked", f"{display_path(resolution.lock_file)} is up to date")


@click.command("vendor")
@click.argument("directory", required=False, type=click.Path())
@click.option("--locked", is_flag=True, help="Refuse if mcpp.lock would change.")
@click.pass_obj
def vendor_cmd(ctx, directory, locked):
    """Copy every locked package's verified sources into DIRECTORY (default: vendor/)."""
    manifest = find_manifest(os.getcwd(), ctx.manifest_path)
    target, resolution = vendor(manifest, ctx.settings, directory, locked=locked)
    _status("Vendored", f"{len(resolution.lock.packages)} package(s) into {display_path(target)}")
    shown = os.path.relpath(target, os.path.dirname(resolution.lock_file))
    click.echo(f"To build from it, add to the workspace's mcpp.toml:\n\n[source]\nvendor = \"{shown}\"")


@click.command("tree")
@click.option("--duplicates", "-d", is_flag=True, help="Show only packages present in more than one version.")
@click.option("-e", "--edges", "edges", metavar="KINDS", default="normal",
              help="`features`: show the features each dependency edge enables.")
@click.option("--features", "features", multiple=True, metavar="LIST", help="Features to activate.")
@click.option("--all-features", is_flag=True, help="Activate every feature.")
@click.option("--no-default-features", is_flag=True, help="Do not activate the `default` feature.")
@click.option("-p", "--package", "packages", multiple=True, metavar="NAME", help="Root the tree at these packages.")
@click.option("--locked", is_flag=True, help="Refuse if mcpp.lock would change.")
@click.option("--offline", is_flag=True, help="Never read the library index.")
@click.pass_obj
def tree_cmd(ctx, duplicates, edges, features, all_features, no_default_features, packages, locked, offline):
    """The resolved dependency graph, as Cargo draws it."""
    kinds = {k.strip() for k in edges.split(",") if k.strip()}
    if not kinds <= {"normal", "features"}:
        raise click.UsageError(f"-e {edges}: the edge kinds are `normal` and `features`")
    split = tuple(f for v in features for f in v.replace(",", " ").split())
    graph = load_graph(os.getcwd(), ctx.manifest_path,
                       Selection(packages=packages, features=split, all_features=all_features,
                                 no_default_features=no_default_features, locked=locked, offline=offline),
                       settings=ctx.settings)
    if duplicates:
        click.echo("\n".join(duplicate_lines(graph.order)), nl=bool(duplicate_lines(graph.order)))
        return
    index_roots = set(graph.resolution.roots.values()) if graph.resolution is not None else set()
    lines: list[str] = []
    for i, member in enumerate(graph.members):
        if i:
            lines.append("")
        lines += tree_lines(member, "features" in kinds, index_roots)
    click.echo("\n".join(lines))


def tree_lines(root: Package, features: bool, index_roots: set[str]) -> list[str]:
    """Cargo's drawing: `├── `/`└── ` per child, `│   ` down a parent's open branch, `(*)` for
    a package already drawn above; with `features`, each edge's features as `name feature "f"`."""
    def _label(p: Package) -> str:
        """Cargo's label: an index package by name and version, a path package with its directory."""
        shown = "" if p.root in index_roots else f" ({display_path(p.root) or '.'})"
        return f"{p.name} v{p.version}{shown}"

    lines = [_label(root)]
    seen: set[Package] = set()

    def children(p: Package) -> list[tuple[str, Package | None]]:
        out: list[tuple[str, Package | None]] = []
        done: set[Package] = set()
        for spec, dep in p.edges:
            if dep in done or dep not in p.deps:
                continue
            done.add(dep)
            if features:
                wanted = list(spec.features)
                if spec.default_features and "default" in dep.manifest.features:
                    wanted.insert(0, "default")
                for j, f in enumerate(wanted):
                    out.append((f'{dep.name} feature "{f}"', dep if j == 0 else None))
                if wanted:
                    continue
            out.append(("", dep))
        return out

    def walk(p: Package, prefix: str) -> None:
        kids = children(p)
        for i, (text, dep) in enumerate(kids):
            last = i == len(kids) - 1
            branch, down = ("└── ", "    ") if last else ("├── ", "│   ")
            if text:  # a feature node: the package below it
                lines.append(prefix + branch + text)
                if dep is not None:
                    lines.append(prefix + down + "└── " + _label(dep) + (" (*)" if dep in seen else ""))
                    if dep not in seen:
                        seen.add(dep)
                        walk(dep, prefix + down + "    ")
                continue
            assert dep is not None
            lines.append(prefix + branch + _label(dep) + (" (*)" if dep in seen and dep.deps else ""))
            if dep not in seen:
                seen.add(dep)
                walk(dep, prefix + down)

    seen.add(root)
    walk(root, "")
    return lines


def duplicate_lines(order: list[Package]) -> list[str]:
    """Packages of one name in more than one version. One build holds one version of each
    package (the loader refuses two of one name), so a resolved graph has none to show."""
    by_name: dict[str, set[str]] = {}
    for p in order:
        by_name.setdefault(p.name, set()).add(p.version)
    return [f"{name} v{v}" for name, vs in sorted(by_name.items()) if len(vs) > 1 for v in sorted(vs)]
