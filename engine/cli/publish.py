"""`mcpp package`, `mcpp pack` and `mcpp publish --index DIR [--pack]` (docs/dependencies.md, "Packaging" and
"Publishing"; docs/accelerators.md, "Packing prebuilt variants")."""
from __future__ import annotations

import os

import click

from ..core.errors import McppError, display_path
from ..package.graph import load_graph
from ..package.locate import find_manifest
from ..package.model import Package, PackageGraph, Selection


def _chosen(ctx, package: str | None) -> tuple[Package, PackageGraph]:
    """The package a command packages: `-p NAME` (a workspace member), else the one whose
    manifest is found from the working directory."""
    graph = load_graph(os.getcwd(), ctx.manifest_path, Selection(packages=(package,) if package else ()))
    if package:
        return graph.members[0], graph
    root = os.path.dirname(find_manifest(os.getcwd(), ctx.manifest_path))
    for pkg in graph.order:
        if pkg.root == root:
            return pkg, graph
    members = ", ".join(p.name for p in graph.members)
    raise McppError(f"{display_path(root)} is a virtual workspace, not a package; choose a member with `-p NAME` "
                    f"(members: {members})")


def _common(fn):
    options = [
        click.option("-p", "--package", "package", metavar="NAME", default=None,
                     help="The workspace member to package (default: the package here)."),
        click.option("--no-verify", is_flag=True, help="Do not build the unpacked archive."),
        click.option("--toolchain", metavar="NAME", default=None,
                     help="The toolchain of the verifying build, as `mcpp build --toolchain` takes it."),
        click.option("-j", "--jobs", "jobs_local", type=int, default=None, metavar="N",
                     help="Parallel actions of the verifying build (default and 0: number of CPUs)."),
    ]
    for opt in reversed(options):
        fn = opt(fn)
    return fn


def _package(ctx, package, no_verify, toolchain, jobs_local, pack: bool = False):
    from ..publish.package import make_package

    pkg, graph = _chosen(ctx, package)
    jobs = jobs_local if jobs_local is not None else ctx.jobs
    if pack:  # the packed directory is the package published: its prebuilt variants, no sources
        pkg, graph = _packed(ctx, pkg, graph, toolchain, jobs or 0)
    return make_package(pkg, graph, ctx.settings, ctx.reporter(), verify=not no_verify, jobs=jobs or 0,
                        toolchain=toolchain)


def _packed(ctx, pkg: Package, graph: PackageGraph, toolchain, jobs: int) -> tuple[Package, PackageGraph]:
    from ..publish.files import MANIFEST_NAME
    from ..publish.pack import make_pack

    out = make_pack(pkg, graph, ctx.settings, ctx.reporter(), jobs=jobs, toolchain=toolchain)
    # Its archive goes beside the pack directories (target/pack/package/), not inside the one it packs.
    packed = load_graph(out, os.path.join(out, MANIFEST_NAME), Selection(), os.path.join(graph.target_dir, "pack"))
    return packed.members[0], packed


@click.command("pack")
@click.option("-p", "--package", "package", metavar="NAME", default=None,
              help="The workspace member to pack (default: the package here).")
@click.option("--toolchain", metavar="NAME", default=None,
              help="The toolchain of the builds, as `mcpp build --toolchain` takes it.")
@click.option("-j", "--jobs", "jobs_local", type=int, default=None, metavar="N",
              help="Parallel actions (default and 0: number of CPUs).")
@click.pass_obj
def pack_cmd(ctx, package, toolchain, jobs_local):
    """Build the package's library once with --no-accel and once with its [build] accel, and write
    target/pack/NAME-VERSION/: the libraries and an mcpp.toml whose [[runtime.artifacts]] carry each
    build's measured tag and accel, the CPU-only variant first."""
    from ..publish.pack import make_pack

    pkg, graph = _chosen(ctx, package)
    jobs = jobs_local if jobs_local is not None else ctx.jobs
    make_pack(pkg, graph, ctx.settings, ctx.reporter(), jobs=jobs or 0, toolchain=toolchain)


@click.command("package")
@_common
@click.pass_obj
def package_cmd(ctx, package, no_verify, toolchain, jobs_local):
    """Write target/package/NAME-VERSION.tar.zst (the package's files, deterministic), then build
    it unpacked from an empty target/ to prove it is complete."""
    _package(ctx, package, no_verify, toolchain, jobs_local)


@click.command("publish")
@click.option("--index", "index_dir", required=True, metavar="DIR", type=click.Path(file_okay=False),
              help="The directory index to publish into (created when it does not exist).")
@click.option("--pack", "pack", is_flag=True,
              help="Publish the prebuilt variants `mcpp pack` writes instead of the sources.")
@_common
@click.pass_obj
def publish_cmd(ctx, index_dir, pack, package, no_verify, toolchain, jobs_local):
    """Package (and verify), then add the release to the directory index DIR: the archive as
    archives/NAME-VERSION.tar.zst and a [[release]] in pkgs/NAMESPACE/NAME.toml. With --pack the
    package published is target/pack/NAME-VERSION/ (`mcpp pack`)."""
    from ..publish.index_writer import publish

    packaged = _package(ctx, package, no_verify, toolchain, jobs_local, pack=pack)
    descriptor, warnings = publish(packaged, index_dir)
    reporter = ctx.reporter()
    for w in warnings:
        reporter.warning(w)
    reporter.status("Published", f"{packaged.namespace}.{packaged.name} v{packaged.version} to "
                                 f"{display_path(os.path.abspath(index_dir))} ({display_path(descriptor)})")
