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
from ..core.errors import McppError
from ..core.paths import ExecPath
from ..manifest.model import OUT_PREFIX
from ..package.model import Package
from ..package.targets import libraries, library_closure, own_library, shared_names
from ..package.testsuite import test_dirs, test_name
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
        # (package, `lib` target with sources) -> (its archive, the archive action), once planned
        self.own_archives: dict[tuple[Package, str], tuple[ExecPath, str]] = {}
        # package -> (archive, action id) of the static libraries its rules declared (rule_targets.py),
        # linked by its dependents before its own archive
        self.rule_archives: dict[Package, list[tuple[str, str]]] = {}
        # (driver, linker selection flags) -> the programs it runs to link (engine/toolchain/linker.py)
        self.linkers: dict[tuple[str, tuple[str, ...]], tuple[str, ...]] = {}
        # (package root, target) -> its link inputs, resolved (`_link_files`)
        self._link_inputs: dict[tuple[str, str], list[tuple[str, str, str | None]]] = {}

    def package_artifacts(self, pkg: Package, units: list[Unit], rule_objects: list[tuple[str, str]],
                          target_units: dict[str, list[Unit]] | None = None,
                          pic_units: list[Unit] | None = None,
                          shared_units: dict[str, list[Unit]] | None = None) -> None:
        """`pkg`'s archive and its targets. `units` are the package library's units (no target's
        own sources); `target_units` the units each bin, test or shared target links on top of
        them; `pic_units` the library's units compiled position-independent for its shared
        targets (None: `units` already are); `shared_units` the library's units a shared target with
        settings of its own compiled with them. `rule_objects` are (object, producing action) of
        its build program's `role = "object"` actions: they join the archive like compiled units."""
        ctx = self.ctx
        target_units = target_units or {}
        targets = ctx.targets_of(pkg)
        lib_objs = [u.obj for u in units]
        lib_ids = [u.action_id for u in units]
        for obj, producer in rule_objects:
            lib_objs.append(obj)
            lib_ids.append(producer)
        is_lib = (any(t.kind == "lib" for t in targets) or not targets or self._is_dependency(pkg)
                  or (ctx.graph.archive_members and any(pkg is m for m in ctx.graph.members)))
        if lib_objs and is_lib:
            archive = ctx.rel(ctx.layout.archive(pkg.name, pkg.root))
            self.plan.add(Action(
                id=f"archive {pkg.name}", argv=tuple(cf.archive_argv(ctx.tc, archive, lib_objs)),
                outputs=(archive,), inputs=tuple(lib_objs), tools=(ctx.tc.ar,), env=ACTION_ENV,
                kind=ActionKind.ARCHIVE, description=f"{pkg.name}: lib{pkg.name}.a"), pkg.name, lib_ids)
            self.archives[pkg] = archive
            if any(t.kind == "lib" for t in targets) or not targets:
                self.plan.artifacts.append(Artifact(pkg.name, pkg.name, ArtifactKind.LIB, archive))
        for t in targets:  # the package's own libraries first: its other targets may link them
            if own_library(t) and t.name in target_units and target_units[t.name]:
                self._own_archive(pkg, t, target_units[t.name])
        for t in targets:
            if own_library(t) or (t.kind in ("bin", "shared") and t.name not in target_units):
                continue  # archived above, or not built in this build (a dependency's own examples)
            own = target_units.get(t.name, [])
            dep_archives, dep_ids = self._dep_archives(pkg, dev=False, extra=t.deps, own=True)
            ldflags = self._ldflags(pkg, dev=False, target=t)
            sib_archives, sib_ids, sib_flags, sib_inputs = self._sibling_inputs(pkg, t.libs)
            dep_archives, dep_ids, ldflags = sib_archives + dep_archives, sib_ids + dep_ids, ldflags + sib_flags
            if t.kind == "bin":
                out = ExecPath(f"{ctx.out}/{t.name}")
                self._link(pkg, f"link {pkg.name}:{t.name}", out, [u.obj for u in own] + lib_objs, dep_archives,
                           ldflags, False, [u.action_id for u in own] + lib_ids + dep_ids,
                           c_only=self._c_only(own + units), target=t, extra_inputs=sib_inputs)
                self.plan.artifacts.append(Artifact(pkg.name, t.name, ArtifactKind.BIN, out))
            elif t.kind == "shared":
                lib_units = (shared_units or {}).get(t.name) or (units if pic_units is None else pic_units)
                self._shared(pkg, t, own, lib_units, rule_objects, dep_archives, dep_ids, ldflags)
            elif t.kind == "lib" and t.name != pkg.name and lib_objs:
                self.plan.artifacts.append(Artifact(pkg.name, t.name, ArtifactKind.LIB, self.archives[pkg]))

    def _own_archive(self, pkg: Package, t, units: list[Unit]) -> None:
        """`lib<name>.a` of a `lib` target with `sources`: a library of the package's own."""
        ctx = self.ctx
        archive = ctx.rel(ctx.layout.archive(t.name, pkg.root))
        objs = [u.obj for u in units]
        action_id = f"archive {pkg.name}:{t.name}"
        self.plan.add(Action(
            id=action_id, argv=tuple(cf.archive_argv(ctx.tc, archive, objs)), outputs=(archive,),
            inputs=tuple(objs), tools=(ctx.tc.ar,), env=ACTION_ENV, kind=ActionKind.ARCHIVE,
            description=f"{pkg.name}: lib{t.name}.a"), pkg.name, [u.action_id for u in units])
        self.own_archives[(pkg, t.name)] = (archive, action_id)
        self.plan.artifacts.append(Artifact(pkg.name, t.name, ArtifactKind.LIB, archive))

    def _sibling_inputs(self, pkg: Package, names: tuple[str, ...],
                        test_out: str | None = None) -> tuple[list[str], list[str], list[str], list[str]]:
        """(archives, action ids, link flags, shared libraries read) of the package's own
        libraries a target names in `deps`, with theirs, each before what it depends on. The
        library named after the package is linked as objects already; a shared one is linked by
        its file name from the output directory, found at run time through an `$ORIGIN`-relative
        run path."""
        archives: list[str] = []
        ids: list[str] = []
        flags: list[str] = []
        inputs: list[str] = []
        shared = {t.name: t for t in self.ctx.targets_of(pkg) if t.kind == "shared"}
        for name in library_closure(pkg, names):
            if (pkg, name) in self.own_archives:
                archive, action_id = self.own_archives[(pkg, name)]
                archives.append(archive)
                ids.append(action_id)
            elif name in shared:
                out = self.ctx.out
                binary_dir = os.path.dirname(test_out) if test_out else out
                origin = os.path.relpath(out, binary_dir)
                flags += [f"-L{out}", f"-l:{shared_names(shared[name])[-1]}",
                          "-Wl,-rpath,$ORIGIN" + ("" if origin == "." else f"/{origin}")]
                ids.append(f"link {pkg.name}:{name}")
                inputs.append(f"{out}/{shared_names(shared[name])[-1]}")
        return archives, ids, flags, inputs

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
        in its bins) and its (dev-)dependencies. A test links the package's own libraries too
        (`lib` targets with `sources`: archives, so it takes only what it uses); a test target
        that names one of the package's shared libraries in `deps` links that library instead of
        the library's objects."""
        own = own if own is not None else [u]
        # `tests/unit/a.cpp` -> `unit/a`
        name = target.name if target is not None else test_name(u.source.path, test_dirs(pkg))
        out = self.ctx.rel(self.ctx.layout.test_binary(pkg.name, name))
        libs = target.libs if target is not None and target.libs else \
            tuple(t.name for t in self.ctx.targets_of(pkg) if own_library(t))
        sib_archives, sib_ids, sib_flags, sib_inputs = self._sibling_inputs(pkg, libs, out)
        if sib_inputs:  # a shared library of the package holds its code
            lib_units, rule_objects = [], ()
        objs = [x.obj for x in own] + [x.obj for x in lib_units] + [o for o, _ in rule_objects]
        ids = [x.action_id for x in own] + [x.action_id for x in lib_units] + [p for _, p in rule_objects]
        dep_archives, dep_ids = self._dep_archives(pkg, dev=True, own=True)
        self._link(pkg, f"link-test {pkg.name}:{name}", out, objs, sib_archives + dep_archives,
                   self._ldflags(pkg, True, target=target) + sib_flags, False, ids + sib_ids + dep_ids, dev=True,
                   c_only=self._c_only(own + lib_units), target=target, extra_inputs=sib_inputs)
        self.plan.artifacts.append(Artifact(pkg.name, name, ArtifactKind.TEST, out))

    @staticmethod
    def _c_only(units: list[Unit]) -> bool:
        """A program of C sources alone links with the C driver: the C++ driver would add libstdc++
        (and its libm, libgcc_s) to a binary that uses none of them."""
        return bool(units) and all(u.source.role in C_DRIVER_ROLES for u in units)

    def _is_dependency(self, pkg: Package) -> bool:
        return any(pkg is d for p in self.ctx.graph.order for d in p.deps + p.dev_deps)

    def _dep_archives(self, pkg: Package, dev: bool, extra: tuple[str, ...] = (),
                      own: bool = False) -> tuple[list[str], list[str]]:
        """(archive paths, archive action ids) of `pkg`'s dependencies (and the dev-dependencies
        named in `extra`, a target's `deps`), dependents first; with `own`, the static libraries
        `pkg`'s rules declared first."""
        deps = transitive_deps(pkg, dev) + target_deps(pkg, dev, extra)
        order = [p for p in reversed(self.ctx.graph.order) if any(p is d for d in deps)]
        archives: list[str] = []
        ids: list[str] = []
        for p in ([pkg] if own else []) + order:
            chosen = list(self.rule_archives.get(p, ()))  # a rule's static libraries before the package's
            if p is not pkg:
                chosen += self._chosen_archives(p, [pkg] + deps)
            for archive, action_id in chosen:
                if archive not in archives:
                    archives.append(archive)
                    ids.append(action_id)
        return archives, ids

    def _chosen_archives(self, dep: Package, linkers: list[Package]) -> list[tuple[str, str]]:
        """(archive, action id) of the libraries of `dep` a link takes: those its dependents
        among `linkers` name in `libs` (with the libraries they name in `deps`), or, for an entry
        without `libs`, the library named after the package (when it has no such library, all
        of its own libraries). A name that is none of its libraries is an error at `libs`."""
        names: list[str] = []
        for p in linkers:
            for spec, target in p.edges:
                if target is not dep:
                    continue
                if spec.libs is None:
                    names.append(dep.name)
                    continue
                known = libraries(dep)
                shared = {t.name for t in self.ctx.targets_of(dep) if t.kind == "shared"}
                for name in spec.libs:
                    if name not in known:
                        what = f"; `{name}` is a shared library, which `libs` does not link" if name in shared else ""
                        raise McppError(f"dependency `{spec.display}` has no library `{name}` (its libraries: "
                                        f"{', '.join(self._library_names(dep))}){what}", spec.libs_pos)
                names += spec.libs
        names = list(dict.fromkeys(names))
        if dep not in self.archives and names == [dep.name]:  # no library named after it: all of them
            names = [t.name for t in self.ctx.targets_of(dep) if own_library(t)]
        out: list[tuple[str, str]] = []
        for name in library_closure(dep, names):
            if (dep, name) in self.own_archives:
                out.append(self.own_archives[(dep, name)])
            elif libraries(dep).get(name, ...) is None and dep in self.archives:
                out.append((self.archives[dep], f"archive {dep.name}"))
        return out

    def _library_names(self, dep: Package) -> list[str]:
        """The names of `dep`'s libraries a dependent may choose: those that build an archive."""
        return [n for n, t in libraries(dep).items() if (t is None and dep in self.archives) or
                (t is not None and (dep, n) in self.own_archives)] or ["none"]

    def _ldflags(self, pkg: Package, dev: bool, target=None) -> list[str]:
        flags = list(pkg.manifest.build.ldflags)
        if target is not None:  # its own, after the package's; link inputs named execroot-relative
            flags += [self._relocated(pkg, f, target) for f in target.ldflags]
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

    def _relocated(self, pkg: Package, flag: str, target) -> str:
        """`-Wl,--version-script=zlib.map` names the file relative to the package (or, for a
        generated one, `$OUT/zlib.map`), as its author wrote it; a link runs in the execroot, so
        the name is rewritten to the staged path."""
        for rel, path, _ in self._link_files(pkg, target):
            for sep in ("=", ",", ""):
                if flag == rel if sep == "" else flag.endswith(sep + rel):
                    return flag[:len(flag) - len(rel)] + path
        return flag

    def _link_files(self, pkg: Package, target) -> list[tuple[str, str, str | None]]:
        """(as written, execroot path, producing action or None) of `target`'s `link_inputs`: a
        package file, or an output of the package's build program in this profile's `out_dir()`
        (`$OUT/zlib.map`, or `zlib.map` when the program declares it and the package has no
        such file), which the link then waits for."""
        memo = (pkg.root, target.name)
        if memo in self._link_inputs:
            return self._link_inputs[memo]
        ctx = self.ctx
        out: list[tuple[str, str, str | None]] = []
        for i, rel in enumerate(target.link_inputs):
            generated = rel.startswith(OUT_PREFIX)
            made = ctx.rel(os.path.join(ctx.layout.gen_dir(pkg.name), rel[len(OUT_PREFIX):] if generated else rel))
            if made in self.plan.made_by and (generated or not os.path.isfile(os.path.join(pkg.root, rel))):
                out.append((rel, made, self.plan.made_by[made]))
            elif generated:
                raise McppError(f"link input `{rel}` of target `{target.name}` is not an output of any action the "
                                f"build program of `{pkg.name}` declares (`$OUT` is its `mcpp.out_dir()`)",
                                pkg.manifest.position("targets", target.name, "link_inputs", i))
            elif os.path.isfile(os.path.join(pkg.root, rel)):
                out.append((rel, ctx.layout.package_exec_path(pkg.root, rel), None))
            else:
                raise McppError(f"link input `{rel}` of target `{target.name}` does not exist, and the build program "
                                f"of `{pkg.name}` declares no output `$OUT/{rel}`",
                                pkg.manifest.position("targets", target.name, "link_inputs", i))
        self._link_inputs[memo] = out
        return out

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
              target=None, extra_inputs: Sequence[str] = ()) -> None:
        ctx = self.ctx
        objs = objs + self.std_objects
        prereqs = prereqs + self.std_ids
        c_only = c_only and not self.std_objects and not any(self._has_cxx(a) for a in archives)
        argv = cf.link_argv(ctx.tc, ctx.profile, out, objs, archives, ldflags, shared, self.std_link)
        if c_only:
            argv[0] = ctx.tc.cc.path
        libs = self._program_link_inputs(pkg, dev) + list(extra_inputs)
        if target is not None:
            files = self._link_files(pkg, target)
            libs += [path for _, path, _ in files]
            prereqs = prereqs + [producer for _, _, producer in files if producer is not None]
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

    # What rule_targets.py plans its targets with: the same archives, flags and link as a manifest target's.
    dep_archives = _dep_archives
    ldflags = _ldflags
    link = _link

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

