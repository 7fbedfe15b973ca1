"""Archives, links and test binaries: what a package's targets become once its units compile.

A package that dependents link (a library, or any dependency) gets one archive of its objects;
dependents link that archive, dependents before dependencies, so a single pass of the linker
resolves every symbol. A package that is only a binary links its objects directly: an archive
would drop objects whose only effect is a static initializer.
"""
from __future__ import annotations

import os

from mcpp.cas.action import Action, ActionKind

from ..errors import McppError
from ..package.model import Package
from ..package.testsuite import test_name
from . import compile_flags as cf
from .context import PlanContext, transitive_deps
from .model import ACTION_ENV, Artifact, ArtifactKind, Plan
from .module_graph import ModuleGraph
from .std_module import LIBCXX_FLAG
from .units import Unit


class Links:
    def __init__(self, ctx: PlanContext, plan: Plan, modules: ModuleGraph):
        self.ctx = ctx
        self.plan = plan
        self.std_objects = modules.std_objects  # every link takes the standard library modules
        self.std_ids = modules.std_ids
        self.std_link = [LIBCXX_FLAG] if modules.libcxx else []
        self.archives: dict[Package, str] = {}  # package -> its archive, once planned

    def package_artifacts(self, pkg: Package, units: list[Unit], rule_objects: list[tuple[str, str]]) -> None:
        """`pkg`'s archive and its targets. `rule_objects` are (object, producing action) of its
        build program's `role = "object"` actions: they join the archive like compiled units."""
        ctx = self.ctx
        targets = ctx.targets_of(pkg)
        mains = {t.main for t in targets if t.kind == "bin"}
        lib_units = [u for u in units if u.source.path not in mains]
        lib_objs = [u.obj for u in lib_units]
        lib_ids = [u.action_id for u in lib_units]
        for obj, producer in rule_objects:
            lib_objs.append(obj)
            lib_ids.append(producer)
        is_lib = any(t.kind == "lib" for t in targets) or not targets or self._is_dependency(pkg)
        if lib_objs and is_lib:
            archive = f"{ctx.out}/lib/lib{pkg.name}.a"
            self.plan.add(Action(
                id=f"archive {pkg.name}", argv=tuple(cf.archive_argv(ctx.tc, archive, lib_objs)),
                outputs=(archive,), inputs=tuple(lib_objs), tools=(ctx.tc.ar,), env=ACTION_ENV,
                kind=ActionKind.ARCHIVE, description=f"{pkg.name}: lib{pkg.name}.a"), pkg.name, lib_ids)
            self.archives[pkg] = archive
            if any(t.kind == "lib" for t in targets) or not targets:
                self.plan.artifacts.append(Artifact(pkg.name, pkg.name, ArtifactKind.LIB, archive))
        dep_archives, dep_ids = self._dep_archives(pkg, dev=False)
        ldflags = self._ldflags(pkg, dev=False)
        for t in targets:
            if t.kind == "bin":
                main_unit = next((u for u in units if u.source.path == t.main), None)
                if main_unit is None:
                    if pkg.manifest.build.sources == () and not pkg.manifest.explicit_targets:
                        continue  # `sources = []`: the package builds nothing (docs/manifest.md)
                    raise McppError(f"the main source `{t.main}` of target `{t.name}` is not among the package's "
                                    f"sources; add it to `[build] sources` (or write `sources = []` to build "
                                    f"nothing)", pkg.manifest.position("build", "sources"))
                out = f"{ctx.out}/{t.name}"
                objs = [main_unit.obj] + lib_objs
                self._link(pkg, f"link {pkg.name}:{t.name}", out, objs, dep_archives, ldflags, False,
                           [main_unit.action_id] + lib_ids + dep_ids)
                self.plan.artifacts.append(Artifact(pkg.name, t.name, ArtifactKind.BIN, out))
            elif t.kind == "shared":
                out = f"{ctx.out}/lib{t.name}.so"
                self._link(pkg, f"link {pkg.name}:{t.name}", out, lib_objs, dep_archives, ldflags, True,
                           lib_ids + dep_ids)
                self.plan.artifacts.append(Artifact(pkg.name, t.name, ArtifactKind.SHARED, out))
            elif t.kind == "lib" and t.name != pkg.name and lib_objs:
                self.plan.artifacts.append(Artifact(pkg.name, t.name, ArtifactKind.LIB, self.archives[pkg]))

    def test_binary(self, pkg: Package, u: Unit, lib_units: list[Unit]) -> None:
        """A test source of `pkg` linked with the package's library objects and its (dev-)dependencies."""
        mains = {t.main for t in self.ctx.targets_of(pkg) if t.kind == "bin"}
        objs = [u.obj] + [x.obj for x in lib_units if x.source.path not in mains]
        ids = [u.action_id] + [x.action_id for x in lib_units if x.source.path not in mains]
        dep_archives, dep_ids = self._dep_archives(pkg, dev=True)
        name = test_name(u.source.path)  # `tests/unit/a.cpp` -> `unit/a`
        out = f"{self.ctx.out}/tests/{pkg.name}/{name}"
        self._link(pkg, f"link-test {pkg.name}:{name}", out, objs, dep_archives, self._ldflags(pkg, True),
                   False, ids + dep_ids, dev=True)
        self.plan.artifacts.append(Artifact(pkg.name, name, ArtifactKind.TEST, out))

    def _is_dependency(self, pkg: Package) -> bool:
        return any(pkg is d for p in self.ctx.graph.order for d in p.deps + p.dev_deps)

    def _dep_archives(self, pkg: Package, dev: bool) -> tuple[list[str], list[str]]:
        """(archive paths, archive action ids) of `pkg`'s dependencies, dependents first."""
        deps = transitive_deps(pkg, dev)
        order = [p for p in reversed(self.ctx.graph.order) if any(p is d for d in deps)]
        planned = [p for p in order if p in self.archives]
        return [self.archives[p] for p in planned], [f"archive {p.name}" for p in planned]

    def _ldflags(self, pkg: Package, dev: bool) -> list[str]:
        flags = list(pkg.manifest.build.ldflags)
        for p in transitive_deps(pkg, dev):
            flags += [f for f in p.manifest.build.ldflags if f not in flags]
        for p in [pkg] + transitive_deps(pkg, dev):  # a program's libraries reach every link above it
            if p.program is not None:
                search = [f"-L{self._link_dir(d)}" for d in p.program.link_search]
                flags += [f for f in search + [f"-l{lib}" for lib in p.program.link_libs] if f not in flags]
        return flags

    def _link_dir(self, d: str) -> str:
        """A package's own library directory is staged and named relative to the execroot (where
        links run); a system one stays absolute."""
        rel = self.ctx.rel(d)
        return d if rel == ".." or rel.startswith("../") else rel

    def _program_link_inputs(self, pkg: Package, dev: bool) -> list[str]:
        """The files of the packages' own `link_search` directories: inputs of the link."""
        out: list[str] = []
        for p in [pkg] + transitive_deps(pkg, dev):
            for d in (p.program.link_search if p.program is not None else ()):
                if self._link_dir(d) != d and os.path.isdir(d):
                    out += [self.ctx.rel(os.path.join(d, n)) for n in sorted(os.listdir(d))
                            if os.path.isfile(os.path.join(d, n))]
        return out

    def _link(self, pkg: Package, action_id: str, out: str, objs: list[str], archives: list[str],
              ldflags: list[str], shared: bool, prereqs: list[str], dev: bool = False) -> None:
        ctx = self.ctx
        objs = objs + self.std_objects
        prereqs = prereqs + self.std_ids
        argv = cf.link_argv(ctx.tc, ctx.profile, out, objs, archives, ldflags, shared, self.std_link)
        libs = self._program_link_inputs(pkg, dev)
        self.plan.add(Action(
            id=action_id, argv=tuple(argv), outputs=(out,), inputs=tuple(objs + archives + libs),
            tools=(ctx.tc.cxx.path,), env=ACTION_ENV, kind=ActionKind.LINK,
            description=f"{pkg.name}: {os.path.basename(out)}"), pkg.name, prereqs)
