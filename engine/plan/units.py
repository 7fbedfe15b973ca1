"""A translation unit of the plan: one source, what its module scan says, and where its object
(and, for a module interface, its BMI) goes."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable

from ..core.conventions import C_DRIVER_ROLES
from ..core.errors import McppError
from ..core.paths import PkgPath
from ..manifest.model import TargetSpec
from ..modules.scanner import ModuleUnit, NeedsPreprocessor
from ..package.model import Package
from ..package.sources import Source
from ..package.targets import own_library, owned_by_targets, owned_sources, targets_of
from .context import PlanContext

# What a source that is not a module and imports none scans as (and every C or assembler source,
# unscanned).
ORDINARY = ModuleUnit(None, False, (), False, ())


@dataclass
class Unit:
    """One translation unit to compile, with its package and source."""
    pkg: Package | None  # None: a module of the toolchain's standard library
    source: Source
    info: ModuleUnit
    obj: str
    action_id: str
    bmi: str | None = None
    produced_by: str | None = None  # a generated source: the rule action that writes it
    target: TargetSpec | None = None  # set when compiled with a target's own settings
    pic: bool = False  # position-independent, for a shared library
    # (header, producing action) the compile reads beyond its package's generated headers: those
    # under a rule `compile()`'s own include directories (rule_targets.py)
    extra_headers: tuple[tuple[str, str], ...] = ()
    # execroot-relative include directories of generated files (`-I`, after the target's own)
    extra_includes: tuple[str, ...] = ()

    def shown(self) -> str:
        """The source as an error message names it: relative to the working directory."""
        return os.path.relpath(os.path.join(self.pkg.root, self.source.path)) if self.pkg else self.source.path


class UnitMaker:
    """Makes the units of a package's sources; `scan` maps an absolute path to its module facts
    (the caller caches scans across builds)."""

    def __init__(self, ctx: PlanContext, scan: Callable[..., ModuleUnit]):
        self.ctx = ctx
        self.scan = scan
        # (package, source, dev) -> how to scan it with the preprocessor, or None (gcc): for a
        # source whose module directives sit inside `#if` (engine/modules/p1689.py)
        self.preprocess: Callable[[Package, Source, bool], object] | None = None
        self._memo: dict[str, Unit] = {}  # object path -> its unit
        # told of the next unit `make` makes, then unset (the planner's head start: planner.py)
        self.on_unit: Callable[[Unit], None] | None = None

    def make(self, pkg: Package, sources: list[Source], kind: str) -> list[Unit]:
        """`kind` is the object directory: `obj`, or `test-obj` for test sources."""
        out = []
        for src in sources:
            abs_path = os.path.join(pkg.root, src.path)
            info = self._scan(pkg, src, abs_path, kind == "test-obj") if src.role not in C_DRIVER_ROLES else ORDINARY
            out.append(self._package_unit(pkg, src, info, kind))
            if self.on_unit is not None:
                told, self.on_unit = self.on_unit, None
                told(out[-1])
        return out

    def alone(self, pkg: Package, src: Source) -> Unit | None:
        """`src`'s unit as `make(pkg, [src, ...], "obj")` makes it, with nothing recorded
        anywhere (`on_unit` is not told; a source whose scan needs a preprocessing action, or
        fails, gives None: `make` deals with it)."""
        try:
            info = self.scan(os.path.join(pkg.root, src.path))
        except (NeedsPreprocessor, McppError, OSError):
            return None
        return self._package_unit(pkg, src, info, "obj")

    def _package_unit(self, pkg: Package, src: Source, info: ModuleUnit, kind: str) -> Unit:
        """`src` compiled with its package's own settings, into `kind`'s object directory."""
        return Unit(pkg, src, info, f"{self.ctx.work}/{kind}/{pkg.name}/{src.path}.o", f"compile {pkg.name}:{src.path}")

    def for_target(self, pkg: Package, target: TargetSpec, package_units: list[Unit]) -> list[Unit]:
        """The units of the sources `target` alone links (its `main` and `sources`). Without
        settings of its own a source compiles once, as the package's unit; with them (defines,
        flags, include directories, dependencies) into objects of the target's own, so two
        binaries built from one source with different defines do not share an object."""
        by_path = {u.source.path: u for u in package_units if u.produced_by is None}
        out = []
        # A test target's sources always see the dev-dependencies, so they compile apart.
        apart = target.compiles_apart or target.kind == "test"
        for src in owned_sources(pkg, target, self.ctx.expand):
            if apart:
                obj = f"{self.ctx.work}/obj/{pkg.name}.{target.name}/{src.path}.o"
                out.append(self._unit(pkg, src, obj, f"compile {pkg.name}.{target.name}:{src.path}", target))
            elif src.path in by_path:
                out.append(by_path[src.path])
            else:
                out.append(self._unit(pkg, src, f"{self.ctx.work}/obj/{pkg.name}/{src.path}.o",
                                      f"compile {pkg.name}:{src.path}", None))
        return out

    def _scan(self, pkg: Package, src: Source, abs_path: str, dev: bool) -> ModuleUnit:
        try:
            return self.scan(abs_path)
        except NeedsPreprocessor as e:
            request = self.preprocess(pkg, src, dev) if self.preprocess else None
            if request is None:
                if self.ctx.tc.family == "clang":
                    e.notes.append(f"note: `clang-scan-deps` of `{self.ctx.tc.cxx.path}` was not found; it scans "
                                   "such a file with the preprocessor (apt-get install clang-tools-19)")
                raise
            return self.scan(abs_path, request)

    def pic_variant(self, u: Unit) -> Unit:
        """`u` compiled position-independent into `obj-pic/`: a shared library's objects are kept
        apart from the static library's, which stay as fast as non-PIC code can be. (Never for a
        module unit: its BMI is one file every importer reads, see `TargetUnits._make_pic`.)"""
        return Unit(u.pkg, u.source, u.info, u.obj.replace(f"{self.ctx.work}/obj/", f"{self.ctx.work}/obj-pic/", 1),
                    f"{u.action_id} (pic)", None, u.produced_by, u.target, True)

    def with_settings(self, u: Unit, target: TargetSpec) -> Unit:
        """The library unit `u` compiled with `target`'s settings, position-independent, into
        objects of the target's own (`obj-pic/<pkg>.<target>/`): a shared target's `cflags` and
        `defines` (`-fvisibility=hidden`) reach the library code linked into it, and only it."""
        pkg = u.pkg
        assert pkg is not None  # a library unit, never the standard library's
        lib_obj, lib_id = f"{self.ctx.work}/obj/{pkg.name}/", f"compile {pkg.name}:"
        obj = f"{self.ctx.work}/obj-pic/{pkg.name}.{target.name}/" + u.obj[len(lib_obj):] \
            if u.obj.startswith(lib_obj) else u.obj.replace(f"{self.ctx.work}/", f"{self.ctx.work}/obj-pic/"
                                                            f"{pkg.name}.{target.name}/", 1)
        action = f"compile {pkg.name}.{target.name}:" + u.action_id[len(lib_id):] \
            if u.action_id.startswith(lib_id) else f"{u.action_id} ({target.name})"
        return Unit(pkg, u.source, u.info, obj, action, None, u.produced_by, target, True)

    def _unit(self, pkg: Package, src: Source, obj: str, action_id: str, target: TargetSpec | None) -> Unit:
        """One unit, made once per object path (two targets without settings may share a source)."""
        memo = self._memo
        if obj not in memo:
            info = (self._scan(pkg, src, os.path.join(pkg.root, src.path), target is not None and target.kind == "test")
                    if src.role not in C_DRIVER_ROLES else ORDINARY)
            memo[obj] = Unit(pkg, src, info, obj, action_id, target=target)
        return memo[obj]


@dataclass
class TargetUnits:
    """How a package's units divide among its targets in one build: the library (every source
    no target claims), each bin and shared target's own units, the test targets', the
    library's position-independent copies for its shared targets (None when the library units
    are compiled position-independent themselves, or no shared target is built), and, for a
    shared target with compile settings of its own, the library's units compiled with them."""

    library: list[Unit]
    by_target: dict[str, list[Unit]] = field(default_factory=dict)
    tests: list[tuple[TargetSpec, list[Unit]]] = field(default_factory=list)
    pic: list[Unit] | None = None
    shared_library: dict[str, list[Unit]] = field(default_factory=dict)

    @classmethod
    def of(cls, ctx: PlanContext, maker: UnitMaker, pkg: Package, units: list[Unit], with_tests: bool,
           wanted: set[str]) -> "TargetUnits":
        owned = owned_by_targets(pkg, ctx.expand)
        out = cls([u for u in units if u.produced_by or u.source.path not in owned])
        member = any(pkg is m for m in ctx.graph.members)
        for t in targets_of(pkg):
            if t.kind == "bin" and not pkg.manifest.explicit_targets and not _among(t.main, units, pkg):
                continue  # `sources = []`: the package builds nothing (docs/manifest.md)
            if t.kind == "bin" and (member or f"{ctx.out}/{t.name}" in wanted):
                out.by_target[t.name] = maker.for_target(pkg, t, units)
            elif t.kind == "shared" or own_library(t):
                out.by_target[t.name] = maker.for_target(pkg, t, units)
            elif t.kind == "test" and with_tests and member:
                out.tests.append((t, maker.for_target(pkg, t, units)))
        shared = [t for t in targets_of(pkg) if t.kind == "shared"]
        if shared:
            out._make_pic(ctx, maker, pkg, shared)
        return out

    def _make_pic(self, ctx: PlanContext, maker: UnitMaker, pkg: Package, shared: list[TargetSpec]) -> None:
        targets = targets_of(pkg)
        dependency = any(pkg is d for p in ctx.graph.order for d in p.deps + p.dev_deps)
        static_used = dependency or not targets or any(t.kind == "lib" for t in targets) \
            or any(t.kind == "bin" and t.name in self.by_target for t in targets) or bool(self.tests) \
            or any(u.obj.startswith(f"{ctx.work}/test-obj/") for u in self.library)
        # A module interface makes one BMI that every importer reads: its units are compiled
        # once, position-independent, rather than kept apart.
        modular = any(u.info.module or u.info.imports for u in self.library)
        # A shared target with settings of its own compiles the library with them; the others
        # share one position-independent copy of it (or the library itself, compiled so).
        plain = [t for t in shared if not t.compiles_apart]
        if plain or modular:
            if static_used and not modular:
                self.pic = [maker.pic_variant(u) for u in self.library]
            else:
                for u in self.library:
                    u.pic = True
        for t in shared:
            own = self.by_target[t.name]
            if modular:
                for u in own:
                    u.pic = True
            else:
                self.by_target[t.name] = [u if u.pic else maker.pic_variant(u) for u in own]
            if t.compiles_apart:
                # A module unit's BMI is one file every importer reads: it keeps the library's compile.
                self.shared_library[t.name] = [u if u.info.module or u.info.imports else maker.with_settings(u, t)
                                               for u in self.library]

    def all_units(self) -> list[Unit]:
        """Every unit this package compiles in this build, each once."""
        units = self.library + (self.pic or []) + [u for us in self.by_target.values() for u in us] \
            + [u for _, us in self.tests for u in us] + [u for us in self.shared_library.values() for u in us]
        return list({u.action_id: u for u in units}.values())


def _among(main: PkgPath | None, units: list[Unit], pkg: Package) -> bool:
    """Whether the implied `src/main.cpp` (or `src/main.c`) is one of the package's sources. Only an explicit
    target's `main` may lie outside them; leaving the implied one out is a mistake to name,
    except with `sources = []`, which builds nothing."""
    if any(u.source.path == main for u in units):
        return True
    if pkg.manifest.build.sources == ():
        return False
    raise McppError(f"the main source `{main}` of target `{pkg.name}` is not among the package's sources; add it to "
                    f"`[build] sources` (or write `sources = []` to build nothing)",
                    pkg.manifest.position("build", "sources"))
