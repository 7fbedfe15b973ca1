"""From a package graph to a graph of actions: compile every source, order module interfaces,
archive libraries, link binaries (and test binaries for `mcpp test`).

The planner decides *what* runs; it never runs anything. Its output is a `Plan`: actions with
execroot-relative paths, the prerequisites of each, the small files the engine must write before
an action runs (gcc module mappers), and the artifacts users care about.

The work is done by parts with one concept each, in this order: a package's units
(units.py) and its build program's actions (program_actions.py); the module graph of all units
(module_graph.py); compiles (compiles.py); archives, links and test binaries (links.py). Every
part writes into the one `Plan` it is handed.
"""
from __future__ import annotations

from typing import Callable

from mcpp.cas.action import Action

from . import rule_edges
from ..core.errors import McppError
from ..manifest import globs
from ..modules.scanner import ModuleUnit
from ..package.layout import Layout
from ..package.model import Package, PackageGraph
from ..package.profiles import Profile
from ..package.sources import first_source, package_sources
from ..package.targets import targets_of
from ..package.testsuite import package_tests
from ..toolchain.compilers import Toolchain
from .compiles import Compiles
from .context import PlanContext
from .links import Links
from .model import ACTION_ENV, Artifact, ArtifactKind, Plan
from .module_graph import ModuleGraph
from .program_actions import ProgramActions
from .rule_targets import RuleTargets
from .units import TargetUnits, Unit, UnitMaker

__all__ = ["ACTION_ENV", "Artifact", "ArtifactKind", "Plan", "Planner", "targets_of"]


class Planner:
    """Plans one build into `layout` (its execroot, the directory every action runs under, must
    contain every package root and the target directory); `scan` maps an absolute source
    path (and, for a source only a preprocessing scan can answer, how to run one) to its module
    facts and `includes` to its include directives (both cached by the caller; `includes=None`
    stages every header a compile may read); `expand` expands the packages' source globs;
    `first_compile`, where given, is handed the compile of the first unit made, planned alone
    as soon as it is scanned (`_head_start`), for a build that starts it before the rest is
    planned (engine/exec/head_start.py)."""

    def __init__(self, graph: PackageGraph, toolchain: Toolchain, profile: Profile, *, layout: Layout,
                 scan: Callable[..., ModuleUnit], with_tests: bool = False,
                 includes: Callable[[str], object] | None = None, expand: globs.Expand = globs.expand,
                 trees: dict[str, tuple[str, ...]] | None = None,
                 first_compile: Callable[[Action], None] | None = None):
        self.ctx = PlanContext(graph, toolchain, profile, layout, {p: targets_of(p) for p in graph.order}, expand)
        self.with_tests = with_tests
        self.includes = includes
        self.plan = Plan(layout.execroot)
        self.unit_maker = UnitMaker(self.ctx, scan)
        self.compiles = Compiles(self.ctx, self.plan, None, includes)
        self.unit_maker.preprocess = self.compiles.scan_request
        self.programs = ProgramActions(self.ctx, self.plan, self.unit_maker)
        self.rule_targets = RuleTargets(self.ctx, self.plan, with_tests, trees)
        self.first_compile = first_compile
        if first_compile is not None:
            self.unit_maker.on_unit = self._head_start

    def build(self) -> Plan:
        graph, plan, programs = self.ctx.graph, self.plan, self.programs
        units_by_pkg: dict[Package, list[Unit]] = {}
        rule_units: list[Unit] = []  # the rules' `compile()` sets: linked by their targets alone
        if self.first_compile is not None and graph.order:
            self._head_start_early(graph.order[0])
        for pkg in graph.order:
            compiled = [s for s in package_sources(pkg, self.ctx.expand) if s.role != "device"]
            units_by_pkg[pkg] = self.unit_maker.make(pkg, compiled, "obj")
            if pkg.program is not None:
                units_by_pkg[pkg] += programs.units(pkg)
                programs.plan_actions(pkg)
                rule_units += self.rule_targets.units(pkg)
        per_pkg = {pkg: TargetUnits.of(self.ctx, self.unit_maker, pkg, units_by_pkg[pkg], self.with_tests,
                                       self._wanted()) for pkg in graph.order}
        test_units: dict[Package, list[Unit]] = {}
        if self.with_tests:
            for pkg in graph.members:
                test_units[pkg] = self.unit_maker.make(pkg, package_tests(pkg, self.ctx.expand), "test-obj")
        all_units = [u for tu in per_pkg.values() for u in tu.all_units()] \
            + [u for us in test_units.values() for u in us] + rule_units

        modules = ModuleGraph(self.ctx, all_units)
        compiles = self.compiles
        compiles.modules = modules
        for u in modules.std_units:
            compiles.compile_std(u)
        for u in all_units:
            compiles.compile(u)

        links = Links(self.ctx, plan, modules)
        for pkg in graph.order:
            tu = per_pkg[pkg]
            self.rule_targets.archives(pkg, links)
            links.package_artifacts(pkg, tu.library, programs.objects_of(pkg), tu.by_target, tu.pic,
                                    tu.shared_library)
            self.rule_targets.link(pkg, links)
        for pkg in graph.members:
            for u in test_units.get(pkg, []):
                links.test_binary(pkg, u, per_pkg[pkg].library, programs.objects_of(pkg))
            for t, own in per_pkg[pkg].tests:
                links.test_binary(pkg, own[0], per_pkg[pkg].library, programs.objects_of(pkg), target=t, own=own)
        programs.plan_after_link()  # they may read the package's binaries
        rule_edges.settle(plan)  # producer edges, duplicate outputs and cycles, once all are planned
        programs.check_inputs()
        return plan

    def _head_start_early(self, pkg: Package) -> None:
        """Before `pkg`'s sources are all listed (10,000 of them take tens of milliseconds), the
        head start of one found by a quick look (`first_source`), planned as `make` would plan
        it; where none is found, or it is not an ordinary compile, the first unit `make` makes
        is offered instead, as before."""
        if pkg.program is not None:
            return
        src = first_source(pkg)
        u = self.unit_maker.alone(pkg, src) if src is not None else None
        if u is not None:
            self.unit_maker.on_unit = None
            self._head_start(u)

    def _head_start(self, u: Unit) -> None:
        """Plan `u`'s compile alone, into a plan of its own, and hand it on when it is an
        ordinary one: not a module's (the module graph needs every unit), not of a generated
        source or of a package with a build program, writing no file for the engine to make
        first and waiting on no action. Whether the whole plan compiles `u` the same way is
        checked once it is made (`HeadStart.settle`)."""
        pkg = u.pkg
        if pkg is None or pkg.program is not None or u.produced_by or u.info.module or u.info.imports:
            self.unit_maker.on_unit = self._head_start  # the next unit may be one
            return
        alone = Plan(self.plan.execroot)
        try:  # planned once more with the others, which reports what is wrong with it
            Compiles(self.ctx, alone, ModuleGraph(self.ctx, [u]), self.includes, look_up_pools=True).compile(u)
        except McppError:
            return
        if len(alone.actions) == 1 and not alone.generated and not alone.prereqs.get(u.action_id):
            assert self.first_compile is not None
            self.first_compile(alone.actions[0])

    def _wanted(self) -> set[str]:
        """Execroot-relative files the build programs' actions read: a dependency's binary that
        one of them runs (`mcpp.bin(...)`) is built; its other binaries are not."""
        actions = self.plan.actions + [a for _, a in self.programs.pending_after_link()]
        return {p for a in actions for p in a.inputs}
