"""What every part of the planner reads and none of them changes: the package graph, the
toolchain and profile, the build's layout (the execroot, where every action runs, and
`target/<profile>`; given by the caller), each package's targets and how source globs are
expanded (`expand`: a warm server's build child remembers them, manifest/globs.py)."""
from __future__ import annotations

from typing import Callable

from ..core.paths import AbsPath, ExecPath
from ..manifest import globs
from ..manifest.model import TargetSpec
from ..package.layout import Layout
from ..package.model import Package, PackageGraph
from ..package.profiles import Profile
from ..toolchain.compilers import Toolchain


class PlanContext:
    def __init__(self, graph: PackageGraph, toolchain: Toolchain, profile: Profile, layout: Layout,
                 targets: dict[Package, list[TargetSpec]], expand: globs.Expand = globs.expand):
        self.graph = graph
        self.tc = toolchain
        self.profile = profile
        self.layout = layout
        self.execroot: AbsPath = layout.execroot
        # A path relative to the execroot: the layout's conversion, bound once (the planner asks
        # it a thousand times a plan).
        self.rel: Callable[[str], ExecPath] = layout.exec_path
        self.targets = targets  # every package of the graph -> its targets
        self.expand = expand
        self.out_abs: AbsPath = layout.out_dir
        self.out: ExecPath = self.rel(self.out_abs)  # the profile's output directory: final artifacts
        self.work: ExecPath = self.rel(layout.work_dir)  # everything else the build makes

    def targets_of(self, pkg: Package) -> list[TargetSpec]:
        return self.targets[pkg]


def transitive_deps(pkg: Package, dev: bool) -> list[Package]:
    """`pkg`'s library dependencies, transitively, breadth first; with `dev`, its own
    dev-dependencies too (a test binary's view)."""
    out: dict[Package, None] = {}
    todo = list(pkg.deps) + (list(pkg.dev_deps) if dev else [])
    while todo:
        p = todo.pop(0)
        if p not in out:
            out[p] = None
            todo.extend(p.deps)
    return list(out)


def target_deps(pkg: Package, dev: bool, names: tuple[str, ...]) -> list[Package]:
    """The dependencies a target names in `deps` that `transitive_deps(pkg, dev)` leaves out
    (dev-dependencies of a binary), with theirs, transitively."""
    have = transitive_deps(pkg, dev)
    out: dict[Package, None] = {}
    todo = [d for d in pkg.dev_deps if d.name in names and d not in have]
    while todo:
        p = todo.pop(0)
        if p not in out and p not in have:
            out[p] = None
            todo.extend(p.deps)
    return list(out)
