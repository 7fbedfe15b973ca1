"""Archives, links and test binaries: what a package's targets become once its units compile.

A package that dependents link (a library, or any dependency) gets one archive of its objects;
dependents link that archive, dependents before dependencies, so a single pass of the linker
resolves every symbol. A package that is only a binary links its objects directly: an archive
would drop objects whose only effect is a static initializer.
"""
from __future__ import annotations

import os
from typing import Sequence

from mcpp.cas.action import Action, ActionKind

from . import compile_flags as cf
from ..core.conventions import ASM_CPP_EXTS, ASM_EXTS, C_DRIVER_ROLES, C_EXTS
from ..core.paths import ExecPath, PkgPath
from ..package.model import Package
from ..package.targets import shared_names
from ..package.testsuite import test_name
from ..toolchain.linker import action_path, link_programs, selection_flags
from .context import PlanContext, target_deps, transitive_deps
from .model import ACTION_ENV, Artifact, ArtifactKind, Plan
from .module_graph import ModuleGraph
from .std_module import LIBCXX_FLAG
from .units import Unit

# The objects of C and assembler sources (`x.c.o`, `x.S.o`): a link of only these needs no C++ runtime.
C_DRIVER_OBJECTS = tuple(e + ".o" for e in C_EXTS + ASM_EXTS + ASM_CPP_EXTS)


class Links:
    def __init__(self, ctx: PlanContext, plan: Plan, modules: ModuleGraph):
        self.ctx = ctx
        self.plan = plan
        self.std_objects = modules.std_objects  # every link takes the standard library modules
        self.std_ids = modules.std_ids
        self.std_link = [LIBCXX_FLAG] if modules.libcxx else []
        self.archives: dict[Package, ExecPath] = {}  # package -> its archive, once planned
        # (driver, linker selection flags) -> the programs it runs to link (engine/toolchain/linker.py)
        self.linkers: dict[tuple[str, tuple[str, ...]], tuple[str, ...]] = {}

    def package_artifacts(self, pkg: Package, units: list[Unit], rule_objects: list[tuple[str, str]],
                          target_units: dict[str, list[Unit]] | None = None,
                          pic_units: list[Unit] | None = None) -> None:
        """`pkg`'s archive and its targets. `units` are the package library's units (no target's
        own sources); `target_units` the units each bin, test or shared target links on top of
        them; `pic_units` the library's units compiled position-independent for its shared
        targets (None: `units` already are). `rule_objects` are (object, producing action) of
        its build program's `role = "object"` actions: they join the archive like compiled units."""
        ctx = self.ctx
        target_units = target_units or {}
        targets = ctx.targets_of(pkg)
        lib_objs = [u.obj for u in units]
        lib_ids = [u.action_id for u in units]
        for obj, producer in rule_objects:
            lib_objs.append(obj)
            lib_ids.append(producer)
        is_lib = any(t.kind == "lib" for t in targets) or not targets or self._is_dependency(pkg)
        if lib_objs and is_lib:
            archive = ctx.rel(ctx.layout.archive(pkg.name, pkg.root))
            self.plan.add(Action(
                id=f"archive {pkg.name}", argv=tuple(cf.archive_argv(ctx.tc, archive, lib_objs)),
                outputs=(archive,), inputs=tuple(lib_objs), tools=(ctx.tc.ar,), env=ACTION_ENV,
                kind=ActionKind.ARCHIVE, description=f"{pkg.name}: lib{pkg.name}.a"), pkg.name, lib_ids)
            self.archives[pkg] = archive
            if any(t.kind == "lib" for t in targets) or not targets:
                self.plan.artifacts.append(Artifact(pkg.name, pkg.name, ArtifactKind.LIB, archive))
        for t in targets:
            if t.kind in ("bin", "shared") and t.name not in target_units:
                continue  # not built in this build (a dependency's own examples)
            own = target_units.get(t.name, [])
            dep_archives, dep_ids = self._dep_archives(pkg, dev=False, extra=t.deps)
            ldflags = self._ldflags(pkg, dev=False, target=t)
            if t.kind == "bin":
                out = ExecPath(f"{ctx.out}/{t.name}")
                self._link(pkg, f"link {pkg.name}:{t.name}", out, [u.obj for u in own] + lib_objs, dep_archives,
                           ldflags, False, [u.action_id for u in own] + lib_ids + dep_ids,
                           c_only=self._c_only(own + units), target=t)
                self.plan.artifacts.append(Artifact(pkg.name, t.name, ArtifactKind.BIN, out))
            elif t.kind == "shared":
                self._shared(pkg, t, own, units if pic_units is None else pic_units, rule_objects, dep_archives,
                             dep_ids, ldflags)
            elif t.kind == "lib" and t.name != pkg.name and lib_objs:
                self.plan.artifacts.append(Artifact(pkg.name, t.name, ArtifactKind.LIB, self.archives[pkg]))

    def _shared(self, pkg: Package, t, own: list[Unit], lib_units: list[Unit], rule_objects, dep_archives,
                dep_ids, ldflags: list[str]) -> None:
        """`lib<name>.so`, or with `version` the real file `lib<name>.so.<version>` whose SONAME
        (`soname`, else `lib<name>.so.<major>`) the loader looks for, and the links a consumer
        and the loader follow (`libz.so -> libz.so.1 -> libz.so.1.3.1`), made after the build."""
        units = own + lib_units
        objs = [u.obj for u in units] + [o for o, _ in rule_objects]
        ids = [u.action_id for u in units] + [p for _, p in rule_objects]
        names = shared_names(t)
        out = ExecPath(f"{self.ctx.out}/{names[-1]}")
        flags = list(ldflags)
        if t.soname or t.version:
            flags.append(f"-Wl,-soname,{t.soname or names[1]}")
        self._link(pkg, f"link {pkg.name}:{t.name}", out, objs, dep_archives, flags, True, ids + dep_ids,
                   c_only=self._c_only(units), target=t)
        aliases = tuple((f"{self.ctx.out}/{n}", names[i + 1]) for i, n in enumerate(names[:-1]))
        self.plan.artifacts.append(Artifact(pkg.name, t.name, ArtifactKind.SHARED, out, aliases))

    def test_binary(self, pkg: Package, u: Unit, lib_units: list[Unit], rule_objects: Sequence[tuple[str, str]] = (),
                    target=None, own: list[Unit] | None = None) -> None:
        """A test source of `pkg` (or a `kind = "test"` target, `own` being its units) linked with
        the package's library objects (its build program's `role = "object"` outputs included, as
        in its bins) and its (dev-)dependencies."""
        own = own if own is not None else [u]
        objs = [x.obj for x in own] + [x.obj for x in lib_units] + [o for o, _ in rule_objects]
        ids = [x.action_id for x in own] + [x.action_id for x in lib_units] + [p for _, p in rule_objects]
        dep_archives, dep_ids = self._dep_archives(pkg, dev=True)
        name = target.name if target is not None else test_name(u.source.path)  # `tests/unit/a.cpp` -> `unit/a`
        out = self.ctx.rel(self.ctx.layout.test_binary(pkg.name, name))
        self._link(pkg, f"link-test {pkg.name}:{name}", out, objs, dep_archives,
                   self._ldflags(pkg, True, target=target), False, ids + dep_ids, dev=True,
                   c_only=self._c_only(own + lib_units), target=target)
        self.plan.artifacts.append(Artifact(pkg.name, name, ArtifactKind.TEST, out))

    @staticmethod
    def _c_only(units: list[Unit]) -> bool:
        """A program of C sources alone links with the C driver: the C++ driver would add libstdc++
        (and its libm, libgcc_s) to a binary that uses none of them."""
        return bool(units) and all(u.source.role in C_DRIVER_ROLES for u in units)

    def _is_dependency(self, pkg: Package) -> bool:
        return any(pkg is d for p in self.ctx.graph.order for d in p.deps + p.dev_deps)

    def _dep_archives(self, pkg: Package, dev: bool, extra: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
        """(archive paths, archive action ids) of `pkg`'s dependencies (and the dev-dependencies
        named in `extra`, a target's `deps`), dependents first."""
        deps = transitive_deps(pkg, dev) + target_deps(pkg, dev, extra)
        order = [p for p in reversed(self.ctx.graph.order) if any(p is d for d in deps)]
        planned = [p for p in order if p in self.archives]
        return [self.archives[p] for p in planned], [f"archive {p.name}" for p in planned]

    def _ldflags(self, pkg: Package, dev: bool, target=None) -> list[str]:
        flags = list(pkg.manifest.build.ldflags)
        if target is not None:  # its own, after the package's; link inputs named execroot-relative
            flags += [self._relocated(pkg, f, target.link_inputs) for f in target.ldflags]
        for p in transitive_deps(pkg, dev) + target_deps(pkg, dev, target.deps if target else ()):
            flags += [f for f in p.manifest.build.ldflags if f not in flags]
        for p in [pkg] + transitive_deps(pkg, dev):  # a program's libraries reach every link above it
            if p.program is not None:
                search = [f"-L{self._link_dir(d)}" for d in p.program.link_search]
                flags += [f for f in search + [f"-l{lib}" for lib in p.program.link_libs] if f not in flags]
        # system libraries last: a static library's `-l` must follow the archives that use it
        for p in [pkg] + transitive_deps(pkg, dev):
            flags += [f for f in p.system.libs + (p.dev_system.libs if dev and p is pkg else ()) if f not in flags]
        return flags

    def _relocated(self, pkg: Package, flag: str, link_inputs: tuple[PkgPath, ...]) -> str:
        """`-Wl,--version-script=zlib.map` names the file relative to the package, as its author
        wrote it; a link runs in the execroot, so the name is rewritten to the staged path."""
        for rel in link_inputs:
            for sep in ("=", ",", ""):
                if flag == rel if sep == "" else flag.endswith(sep + rel):
                    return flag[:len(flag) - len(rel)] + self.ctx.layout.package_exec_path(pkg.root, rel)
        return flag

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
              ldflags: list[str], shared: bool, prereqs: list[str], dev: bool = False, c_only: bool = False,
              target=None) -> None:
        ctx = self.ctx
        objs = objs + self.std_objects
        prereqs = prereqs + self.std_ids
        c_only = c_only and not self.std_objects and not any(self._has_cxx(a) for a in archives)
        argv = cf.link_argv(ctx.tc, ctx.profile, out, objs, archives, ldflags, shared, self.std_link)
        if c_only:
            argv[0] = ctx.tc.cc.path
        libs = self._program_link_inputs(pkg, dev)
        if target is not None:
            libs += [ctx.layout.package_exec_path(pkg.root, f) for f in target.link_inputs]
        # The linker writes every file it read (crt objects, libraries `-l` found, linker
        # scripts, the libraries a `libc.so` script names): those outside the build are keyed
        # as a compile's system headers are, through the depfile's two-level lookup.
        under = ctx.work if out.startswith(ctx.work + "/") else ctx.out
        depfile = f"{ctx.work}/link-deps/{os.path.relpath(out, under)}.d"
        argv.append(f"-Wl,--dependency-file={depfile}")
        self.plan.add(Action(
            id=action_id, argv=tuple(argv), outputs=(out, depfile), inputs=tuple(objs + archives + libs),
            tools=(argv[0],) + self._linker(argv), env=ACTION_ENV, depfile=depfile, kind=ActionKind.LINK,
            description=f"{pkg.name}: {os.path.basename(out)}"), pkg.name, prereqs)

    def _linker(self, argv: list[str]) -> tuple[str, ...]:
        """The programs the driver `argv[0]` runs to link (its linker, gcc's collect2): tools of
        the link, so their bytes are in its key. Looked up once per driver and selection."""
        selection = selection_flags(argv)
        memo = (argv[0], selection)
        if memo not in self.linkers:
            tc = self.ctx.tc
            driver = tc.cc if argv[0] == tc.cc.path else tc.cxx
            self.linkers[memo] = link_programs(tc, driver, selection, action_path(ACTION_ENV))
        return self.linkers[memo]

    def _has_cxx(self, archive: str) -> bool:
        """Whether a dependency's archive holds C++ objects (then the C++ driver links)."""
        action = next((a for a in self.plan.actions if archive in a.outputs), None)
        return action is None or any(not i.endswith(C_DRIVER_OBJECTS) for i in action.inputs)

