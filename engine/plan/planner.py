"""From a package graph to a graph of actions: compile every source, order module interfaces,
archive libraries, link binaries (and test binaries for `mcpp test`).

The planner decides *what* runs; it never runs anything. Its output is a `Plan`: actions with
execroot-relative paths, the prerequisites of each, the small files the engine must write before
an action runs (gcc module mappers), and the artifacts users care about.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable

from mcpp.cas.action import Action
from mcpp.sandbox import EXECROOT_PLACEHOLDER

from ..errors import McppError, Position, ScanError
from ..graph import Package, PackageGraph, feature_define
from ..manifest.model import TargetSpec
from ..modules.scanner import ModuleUnit
from ..profiles import Profile
from ..toolchain import Toolchain
from . import compile_flags as cf
from .rule_actions import action_id as rule_action_id, to_plan_action
from .sources import Source, header_pool, include_dirs, package_sources, role_of
from .include_scan import reachable
from .std_module import LIBCXX_FLAG, STD_MODULES, libcxx_modules

# A fixed environment for every action: the result must not depend on the user's shell.
# SOURCE_DATE_EPOCH pins the build time gcc writes into module CMIs (and __DATE__/__TIME__).
ACTION_ENV = (("LC_ALL", "C"), ("PATH", "/usr/local/bin:/usr/bin:/bin"), ("SOURCE_DATE_EPOCH", "0"))


@dataclass
class Artifact:
    package: str
    name: str
    kind: str  # bin, lib, shared, test
    path: str  # execroot-relative


@dataclass
class Plan:
    execroot: str
    actions: list[Action] = field(default_factory=list)
    prereqs: dict[str, tuple[str, ...]] = field(default_factory=dict)  # action id -> action ids
    package_of: dict[str, str] = field(default_factory=dict)  # action id -> package name
    generated: dict[str, bytes] = field(default_factory=dict)  # execroot path -> bytes to write
    artifacts: list[Artifact] = field(default_factory=list)
    compile_commands: list[dict] = field(default_factory=list)
    made_by: dict[str, str] = field(default_factory=dict)  # execroot path -> id of the action writing it

    def add(self, action: Action, package: str, prereqs: list[str]) -> None:
        self.actions.append(action)
        self.prereqs[action.id] = tuple(dict.fromkeys(prereqs))
        self.package_of[action.id] = package
        for out in action.outputs:
            self.made_by[out] = action.id


@dataclass
class _Unit:
    pkg: Package | None  # None: a module of the toolchain's standard library
    source: Source
    info: ModuleUnit
    obj: str
    action_id: str
    bmi: str | None = None
    produced_by: str | None = None  # a generated source: the rule action that writes it


def targets_of(pkg: Package) -> list[TargetSpec]:
    """The package's targets: `[targets.*]` as written, else `src/main.cpp` as a binary named
    after the package."""
    m = pkg.manifest
    if m.explicit_targets:
        return list(m.targets)
    targets = []
    if os.path.isfile(os.path.join(m.root, "src", "main.cpp")):
        targets.append(TargetSpec(m.name, "bin", "src/main.cpp"))
    return targets


def common_root(paths: list[str]) -> str:
    return os.path.commonpath(paths)


class Planner:
    def __init__(self, graph: PackageGraph, toolchain: Toolchain, profile: Profile, *,
                 scan: Callable[[str], ModuleUnit], with_tests: bool = False,
                 includes: Callable[[str], object] | None = None):
        self.graph = graph
        self.tc = toolchain
        self.profile = profile
        self.scan = scan  # absolute path -> ModuleUnit (cached by the caller)
        self.includes = includes  # absolute path -> include directives or None (cached), or None
        self.with_tests = with_tests
        roots = [p.root for p in graph.order] + [graph.workspace_root, graph.target_dir]
        self.execroot = common_root(roots)
        self.out_abs = os.path.join(graph.target_dir, profile.name)
        self.out = self.rel(self.out_abs)
        self.plan = Plan(self.execroot)
        self._pools: dict[int, tuple[str, ...]] = {}
        self._pool_index: dict[tuple[str, ...], dict[str, str]] = {}
        self._directive_memo: dict[str, object] = {}  # a header is scanned once per build
        self._gen_header_memo: dict[tuple[int, bool], list[tuple[str, str]]] = {}

    def rel(self, path: str) -> str:
        return os.path.relpath(path, self.execroot)

    # -- entry point ---------------------------------------------------------------------------
    def build(self) -> Plan:
        units_by_pkg: dict[int, list[_Unit]] = {}
        self._rule_objects: dict[int, list[tuple[str, str]]] = {}
        artifact_rules = []
        for pkg in self.graph.order:
            compiled = [s for s in package_sources(pkg) if s.role != "device"]
            units_by_pkg[id(pkg)] = self._units(pkg, compiled, "obj")
            if pkg.program is not None:
                units_by_pkg[id(pkg)] += self._program_units(pkg)
                artifact_rules += self._rule_actions(pkg)
        test_units: dict[int, list[_Unit]] = {}
        if self.with_tests:
            for pkg in self.graph.members:
                test_units[id(pkg)] = self._units(pkg, self._test_sources(pkg), "test-obj")
        all_units = [u for us in units_by_pkg.values() for u in us] + [u for us in test_units.values() for u in us]
        self.libcxx = self.tc.family == "clang" and any(n in STD_MODULES for u in all_units for n in u.info.imports)
        modules = self._module_table(all_units)
        for u in all_units:
            self._compile(u, modules)
        std_objs = [modules[n] for n in STD_MODULES if n in modules]
        self.std_objects = [u.obj for u in std_objs]
        self.std_ids = [u.action_id for u in std_objs]
        archives: dict[int, str] = {}
        for pkg in self.graph.order:
            self._package_artifacts(pkg, units_by_pkg[id(pkg)], archives)
        for pkg in self.graph.members:
            for u in test_units.get(id(pkg), []):
                self._test_binary(pkg, u, units_by_pkg[id(pkg)], archives)
        for pkg, action in artifact_rules:  # after the link: they may read the package's binaries
            links = [a.id for a in self.plan.actions if self.plan.package_of[a.id] == pkg.name and a.kind == "link"]
            self.plan.add(action, pkg.name, self._producers(action) + links)
        self._check_rule_inputs()
        return self.plan

    def _check_rule_inputs(self) -> None:
        """A rule action's input must exist or be made by an action of this build."""
        for a in self.plan.actions:
            if a.kind != "rule":
                continue
            for rel in a.inputs:
                if rel not in self.plan.made_by and not os.path.exists(os.path.join(self.execroot, rel)):
                    pkg = self.plan.package_of[a.id]
                    raise McppError(f"package `{pkg}`, action `{a.id.split(':', 1)[1]}`: input `{rel}` does not "
                                    f"exist and no action of this build makes it")

    # -- what build programs declared ------------------------------------------------------------
    def _rule_actions(self, pkg: Package) -> list:
        """Plan `pkg`'s rule actions; `artifact` ones are returned to be planned after the link."""
        later = []
        for ra in pkg.program.actions:
            action = to_plan_action(pkg, ra, self.execroot, ACTION_ENV)
            if ra.role == "artifact":
                later.append((pkg, action))
                continue
            if ra.role == "object":
                objs = self._rule_objects.setdefault(id(pkg), [])
                objs += [(self.rel(o), action.id) for o in ra.products]
            self.plan.add(action, pkg.name, self._producers(action))
        return later

    def _producers(self, action: Action) -> list[str]:
        """The plan's actions (so far) that write one of `action`'s inputs."""
        return [self.plan.made_by[i] for i in action.inputs if i in self.plan.made_by]

    def _program_units(self, pkg: Package) -> list[_Unit]:
        """Sources a program chose (`source()`) and generated ones (`generated()`, and the outputs
        of its `role = "source"` actions), compiled with the package."""
        program = pkg.program
        units = self._units(pkg, [self._chosen(pkg, rel) for rel in program.sources], "obj")
        made_by = {out: rule_action_id(pkg, ra) for ra in program.actions for out in ra.products}
        generated = list(program.generated)
        generated += [out for ra in program.actions if ra.role == "source" for out in ra.products]
        gen_root = os.path.join(self.out_abs, "gen", pkg.name)
        for path in dict.fromkeys(generated):
            producer = made_by.get(path)
            if producer is None:
                raise McppError(f"package `{pkg.name}`: generated source `{self.rel(path)}` is not an output of "
                                f"any action its build program declares")
            role = role_of(path)
            if role not in ("c", "cxx"):
                raise McppError(f"package `{pkg.name}`: generated source `{self.rel(path)}` is not a C or C++ "
                                f"source (a generated file joins the compile set by its extension: .c, .cpp, .cc, .cxx)")
            shown = "gen/" + os.path.relpath(path, gen_root)
            u = _Unit(pkg, Source(os.path.relpath(path, pkg.root), role),
                      ModuleUnit(None, False, (), False, ()), f"{self.out}/obj/{pkg.name}/{shown}.o",
                      f"compile {pkg.name}:{shown}", produced_by=producer)
            units.append(u)
        return units

    def _chosen(self, pkg: Package, rel: str) -> Source:
        role = role_of(rel)
        if role not in ("c", "cxx", "module"):
            raise McppError(f"package `{pkg.name}`: `source(\"{rel}\")` is not a C, C++ or module source")
        if not os.path.isfile(os.path.join(pkg.root, rel)):
            raise McppError(f"package `{pkg.name}`: `source(\"{rel}\")` does not exist")
        return Source(rel, role)

    # -- sources and module scanning ---------------------------------------------------------------
    def _test_sources(self, pkg: Package) -> list[Source]:
        tests_dir = os.path.join(pkg.root, "tests")
        if not os.path.isdir(tests_dir):
            return []
        names = sorted(n for n in os.listdir(tests_dir) if n.endswith((".cpp", ".cc", ".cxx")))
        return [Source(f"tests/{n}", "cxx") for n in names]

    def _units(self, pkg: Package, sources: list[Source], kind: str) -> list[_Unit]:
        units = []
        for src in sources:
            abs_path = os.path.join(pkg.root, src.path)
            info = self.scan(abs_path) if src.role != "c" else ModuleUnit(None, False, (), False, ())
            obj = f"{self.out}/{kind}/{pkg.name}/{src.path}.o"
            units.append(_Unit(pkg, src, info, obj, f"compile {pkg.name}:{src.path}"))
        return units

    def _module_table(self, units: list[_Unit]) -> dict[str, _Unit]:
        table: dict[str, _Unit] = {}
        ext = ".gcm" if self.tc.family == "gcc" else ".pcm"
        for u in units:
            if u.info.module and u.info.exported:
                other = table.get(u.info.module)
                if other is not None:
                    raise McppError(
                        f"module `{u.info.module}` is declared by two sources: "
                        f"`{self._shown(other)}` and `{self._shown(u)}`")
                u.bmi = f"{self.out}/bmi/{u.info.module.replace(':', '-')}{ext}"
                table[u.info.module] = u
        if self.libcxx:
            self._std_units(units, table)
        self._check_imports(units, table)
        return table

    def _std_units(self, units: list[_Unit], table: dict[str, _Unit]) -> None:
        """Add the libc++ `std` (and `std.compat`, when imported) module interfaces."""
        wanted = {n for u in units for n in u.info.imports if n in STD_MODULES}
        if "std.compat" in wanted:
            wanted.add("std")
        sources = libcxx_modules(self.tc.cxx.path)
        for name in sorted(wanted):
            if name not in sources:
                raise McppError(f"libc++ does not provide the `{name}` module")
            imports = ("std",) if name == "std.compat" else ()
            u = _Unit(None, Source(sources[name].source, "module"),
                      ModuleUnit(name, True, imports, True, tuple(0 for _ in imports)),
                      f"{self.out}/std/{name}.o", f"compile std:{name}", f"{self.out}/bmi/{name}.pcm")
            table[name] = u
            self._compile(u, table)

    def _shown(self, u: _Unit) -> str:
        return os.path.relpath(os.path.join(u.pkg.root, u.source.path)) if u.pkg else u.source.path

    def _imports_of(self, u: _Unit) -> list[str]:
        imports = list(u.info.imports)
        if u.info.module and not u.info.exported and ":" not in u.info.module:
            imports.insert(0, u.info.module)  # an implementation unit implicitly imports its interface
        return imports

    def _check_imports(self, units: list[_Unit], table: dict[str, _Unit]) -> None:
        for u in units:
            for i, name in enumerate(self._imports_of(u)):
                if name in table or (name in STD_MODULES and self.tc.family != "clang"):
                    continue
                line = u.info.import_lines[i - (len(self._imports_of(u)) - len(u.info.imports))] \
                    if name in u.info.imports else None
                raise ScanError(f"module `{name}` is imported but no source of `{u.pkg.name}` or its dependencies exports it",
                                Position(self._shown(u), line))
            if any(n in STD_MODULES for n in u.info.imports) and self.tc.family != "clang":
                raise ScanError("`import std;` needs clang-19 with libc++ (set `[toolchain] default = \"clang-19\"` "
                                "or pass `--toolchain clang-19`); gcc 12 has no standard library module",
                                Position(self._shown(u), u.info.import_lines[u.info.imports.index(
                                    next(n for n in u.info.imports if n in STD_MODULES))]))
        # A cycle among module interfaces can never be compiled: name it.
        state: dict[str, int] = {}
        stack: list[str] = []

        def visit(name: str) -> None:
            state[name] = 1
            stack.append(name)
            for dep in self._imports_of(table[name]):
                if dep not in table or dep == name:
                    continue
                if state.get(dep) == 1:
                    cycle = stack[stack.index(dep):] + [dep]
                    raise McppError(f"module cycle: {' -> '.join(cycle)}")
                if dep not in state:
                    visit(dep)
            stack.pop()
            state[name] = 2

        for name in sorted(table):
            if name not in state:
                visit(name)

    def _closure(self, u: _Unit, table: dict[str, _Unit]) -> list[_Unit]:
        """Every module unit `u` needs a BMI of, transitively, in a stable order."""
        seen: dict[str, _Unit] = {}
        todo = [n for n in self._imports_of(u) if n in table and table[n] is not u]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen[name] = table[name]
            todo.extend(n for n in self._imports_of(table[name]) if n in table and table[n] is not u)
        return [seen[n] for n in sorted(seen)]

    # -- compile actions -----------------------------------------------------------------------
    def _flags_for(self, pkg: Package, role: str, dev: bool) -> tuple[list[str], list[str], list[str]]:
        m = pkg.manifest
        user = list(m.build.cflags if role == "c" else m.build.cxxflags)
        defines = [feature_define(f) for f in sorted(pkg.features)]
        for fname in sorted(pkg.features):
            defines += list(m.features[fname].defines)
        defines += list(m.build.defines)
        incs: list[str] = []
        if pkg.program is not None:  # what the package's build program added, for itself
            user += pkg.program.cflags if role == "c" else pkg.program.cxxflags
            defines += pkg.program.defines
        for p in [pkg] + self._transitive_deps(pkg, dev):
            incs += [self.rel(d) for d in include_dirs(p)]
        return user, defines, list(dict.fromkeys(incs))

    def _may_read(self, pkg: Package, dev: bool) -> tuple[str, ...]:
        """Execroot-relative headers of `pkg` and its dependencies (computed once per package)."""
        out: list[str] = []
        for p in [pkg] + self._transitive_deps(pkg, dev):
            if id(p) not in self._pools:
                self._pools[id(p)] = tuple(self.rel(h) for h in header_pool(p))
            out.extend(self._pools[id(p)])
        return tuple(dict.fromkeys(out))

    def _headers_for(self, src: str, incs: list[str], user: list[str], pkg: Package,
                     dev: bool) -> tuple[str, ...]:
        """The pool headers this compile can reach (include_scan.py), else the whole pool."""
        pool = self._may_read(pkg, dev)
        if self.includes is None or not pool or any(f.startswith("-include") for f in user):
            return pool  # a forced include (`-include x.h`) is not in any source: stage everything
        search = list(incs) + [f[2:] for f in user if f.startswith("-I") and len(f) > 2]
        index = self._pool_index.get(pool)
        if index is None:
            index = self._pool_index[pool] = {os.path.join(self.execroot, h): h for h in pool}
        found = reachable(os.path.join(self.execroot, src), [os.path.join(self.execroot, d) for d in search],
                          index, self._directives)
        return pool if found is None else tuple(sorted(found))

    def _directives(self, path: str):
        if path not in self._directive_memo:
            self._directive_memo[path] = self.includes(path)
        return self._directive_memo[path]

    def _transitive_deps(self, pkg: Package, dev: bool) -> list[Package]:
        out: dict[int, Package] = {}
        todo = list(pkg.deps) + (list(pkg.dev_deps) if dev else [])
        while todo:
            p = todo.pop(0)
            if id(p) not in out:
                out[id(p)] = p
                todo.extend(p.deps)
        return list(out.values())

    def _compile(self, u: _Unit, table: dict[str, _Unit]) -> None:
        if u.pkg is None:
            return self._compile_std(u, table)
        pkg = u.pkg
        src = self.rel(os.path.join(pkg.root, u.source.path))
        is_test = u.source.path.startswith("tests/") and u.obj.startswith(f"{self.out}/test-obj/")
        user, defines, incs = self._flags_for(pkg, u.source.role, dev=is_test)
        needed = self._closure(u, table)
        uses_modules = bool(needed or u.info.module or u.info.imports)
        gen_headers = self._generated_headers(pkg, is_test)
        inputs = [src] + [n.bmi for n in needed] + [h for h, _ in gen_headers]
        outputs = [u.obj]
        mapper = None
        if uses_modules and self.tc.family == "gcc":
            mapper = u.obj[:-2] + ".map"
            entries = [(n.info.module, n.bmi) for n in needed]
            if u.bmi:
                entries.append((u.info.module, u.bmi))
            self.plan.generated[mapper] = cf.gcc_mapper_text(entries)
            inputs.append(mapper)
        if u.bmi:
            outputs.append(u.bmi)
        module = cf.module_flags(self.tc, mapper, u.bmi if uses_modules else None,
                                 [(n.info.module, n.bmi) for n in needed]) if uses_modules else []
        pic = any(t.kind == "shared" for t in self.targets_of(pkg))
        depfile = u.obj[:-2] + ".d"
        argv = cf.compile_argv(self.tc, self.profile, source=src, obj=u.obj, depfile=depfile,
                               role=u.source.role, standard=pkg.manifest.standard, user_flags=user,
                               defines=defines, include_dirs=incs, module=module, pic=pic)
        if self.libcxx and u.source.role != "c":
            argv.insert(1, LIBCXX_FLAG)
        compiler = argv[0]
        action = Action(
            id=u.action_id, argv=tuple(argv), outputs=tuple(outputs + [depfile]), inputs=tuple(inputs),
            may_read=self._may_read(pkg, is_test) if u.produced_by else self._headers_for(src, incs, user, pkg, is_test),
            tools=(compiler,), env=ACTION_ENV, depfile=depfile, kind="compile",
            description=f"{pkg.name}: {u.source.path}")
        self.plan.add(action, pkg.name, [n.action_id for n in needed] + ([u.produced_by] if u.produced_by else [])
                      + [producer for _, producer in gen_headers])
        self.plan.compile_commands.append({
            "directory": self.execroot, "file": os.path.join(pkg.root, u.source.path),
            "arguments": [a.replace(EXECROOT_PLACEHOLDER, self.execroot) for a in argv],
            "output": os.path.join(self.execroot, u.obj)})

    def _generated_headers(self, pkg: Package, dev: bool) -> list[tuple[str, str]]:
        """Outputs of rule actions inside an include directory of `pkg` or a dependency (a
        header generated into `out_dir()` and exposed with `include_dir()`): they do not exist
        when the plan is made, so every compile of `pkg` declares them, after their actions."""
        key = (id(pkg), dev)
        if key not in self._gen_header_memo:
            found: list[tuple[str, str]] = []
            for p in [pkg] + self._transitive_deps(pkg, dev):
                if p.program is None or not p.program.include_dirs:
                    continue
                dirs = [d.rstrip("/") + "/" for d in include_dirs(p)]
                for ra in p.program.actions:
                    for out in ra.products:
                        if any(out.startswith(d) for d in dirs):
                            found.append((self.rel(out), rule_action_id(p, ra)))
            self._gen_header_memo[key] = found
        return self._gen_header_memo[key]

    def _compile_std(self, u: _Unit, table: dict[str, _Unit]) -> None:
        needed = self._closure(u, table)
        std_src = libcxx_modules(self.tc.cxx.path)[u.info.module]
        module = cf.module_flags(self.tc, None, u.bmi, [(n.info.module, n.bmi) for n in needed])
        depfile = u.obj[:-2] + ".d"
        standard = self.graph.members[0].manifest.standard if self.graph.members else "c++20"
        argv = cf.compile_argv(self.tc, self.profile, source=std_src.source, obj=u.obj, depfile=depfile,
                               role="module", standard=standard,
                               user_flags=[LIBCXX_FLAG, "-Wno-reserved-module-identifier"],
                               defines=[], include_dirs=[], module=module, pic=False)
        argv[1:1] = [f"-isystem{d}" for d in std_src.include_dirs]
        self.plan.add(Action(
            id=u.action_id, argv=tuple(argv), outputs=(u.obj, u.bmi, depfile),
            inputs=tuple(n.bmi for n in needed), tools=(argv[0], std_src.source), env=ACTION_ENV,
            depfile=depfile, kind="compile", description=f"std: {u.info.module}"),
            "std", [n.action_id for n in needed])

    # -- libraries and binaries ------------------------------------------------------------------
    def targets_of(self, pkg: Package) -> list[TargetSpec]:
        return targets_of(pkg)

    def _package_artifacts(self, pkg: Package, units: list[_Unit], archives: dict[int, str]) -> None:
        targets = self.targets_of(pkg)
        mains = {t.main for t in targets if t.kind == "bin"}
        lib_units = [u for u in units if u.source.path not in mains]
        lib_objs = [u.obj for u in lib_units]
        lib_ids = [u.action_id for u in lib_units]
        for obj, producer in self._rule_objects.get(id(pkg), ()):  # `role = "object"` outputs
            lib_objs.append(obj)
            lib_ids.append(producer)
        # Dependents link a package through its archive; a package that is only a binary links
        # its objects directly (an archive would drop objects with only static initializers).
        is_lib = any(t.kind == "lib" for t in targets) or not targets or self._is_dependency(pkg)
        if lib_objs and is_lib:
            archive = f"{self.out}/lib/lib{pkg.name}.a"
            self.plan.add(Action(
                id=f"archive {pkg.name}", argv=tuple(cf.archive_argv(self.tc, archive, lib_objs)),
                outputs=(archive,), inputs=tuple(lib_objs), tools=(self.tc.ar,), env=ACTION_ENV,
                kind="archive", description=f"{pkg.name}: lib{pkg.name}.a"), pkg.name, lib_ids)
            archives[id(pkg)] = archive
            if any(t.kind == "lib" for t in targets) or not targets:
                self.plan.artifacts.append(Artifact(pkg.name, pkg.name, "lib", archive))
        dep_archives, dep_ids = self._dep_archives(pkg, archives, dev=False)
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
                out = f"{self.out}/{t.name}"
                objs = [main_unit.obj] + lib_objs
                self._link(pkg, f"link {pkg.name}:{t.name}", out, objs, dep_archives, ldflags, False,
                           [main_unit.action_id] + lib_ids + dep_ids)
                self.plan.artifacts.append(Artifact(pkg.name, t.name, "bin", out))
            elif t.kind == "shared":
                out = f"{self.out}/lib{t.name}.so"
                self._link(pkg, f"link {pkg.name}:{t.name}", out, lib_objs, dep_archives, ldflags, True,
                           lib_ids + dep_ids)
                self.plan.artifacts.append(Artifact(pkg.name, t.name, "shared", out))
            elif t.kind == "lib" and t.name != pkg.name and lib_objs:
                self.plan.artifacts.append(Artifact(pkg.name, t.name, "lib", archives[id(pkg)]))

    def _is_dependency(self, pkg: Package) -> bool:
        return any(pkg is d for p in self.graph.order for d in p.deps + p.dev_deps)

    def _dep_archives(self, pkg: Package, archives: dict[int, str], dev: bool) -> tuple[list[str], list[str]]:
        deps = self._transitive_deps(pkg, dev)
        # Dependents before their dependencies, so a single pass of the linker resolves symbols.
        order = [p for p in reversed(self.graph.order) if any(p is d for d in deps)]
        paths = [archives[id(p)] for p in order if id(p) in archives]
        return paths, [f"archive {p.name}" for p in order if id(p) in archives]

    def _ldflags(self, pkg: Package, dev: bool) -> list[str]:
        flags = list(pkg.manifest.build.ldflags)
        for p in self._transitive_deps(pkg, dev):
            flags += [f for f in p.manifest.build.ldflags if f not in flags]
        for p in [pkg] + self._transitive_deps(pkg, dev):  # a program's libraries reach every link above it
            if p.program is not None:
                search = [f"-L{self._link_dir(d)}" for d in p.program.link_search]
                flags += [f for f in search + [f"-l{lib}" for lib in p.program.link_libs] if f not in flags]
        return flags

    def _link_dir(self, d: str) -> str:
        """A package's own library directory is staged and named relative to the execroot (where
        links run); a system one stays absolute."""
        rel = self.rel(d)
        return d if rel == ".." or rel.startswith("../") else rel

    def _program_link_inputs(self, pkg: Package, dev: bool) -> list[str]:
        """The files of the packages' own `link_search` directories: inputs of the link."""
        out: list[str] = []
        for p in [pkg] + self._transitive_deps(pkg, dev):
            for d in (p.program.link_search if p.program is not None else ()):
                if self._link_dir(d) != d and os.path.isdir(d):
                    out += [self.rel(os.path.join(d, n)) for n in sorted(os.listdir(d))
                            if os.path.isfile(os.path.join(d, n))]
        return out

    def _link(self, pkg: Package, action_id: str, out: str, objs: list[str], archives: list[str],
              ldflags: list[str], shared: bool, prereqs: list[str], kind: str = "link", dev: bool = False) -> None:
        objs = objs + self.std_objects
        prereqs = prereqs + self.std_ids
        argv = cf.link_argv(self.tc, self.profile, out, objs, archives, ldflags, shared, self._std_link())
        libs = self._program_link_inputs(pkg, dev)
        self.plan.add(Action(
            id=action_id, argv=tuple(argv), outputs=(out,), inputs=tuple(objs + archives + libs),
            tools=(self.tc.cxx.path,), env=ACTION_ENV, kind=kind,
            description=f"{pkg.name}: {os.path.basename(out)}"), pkg.name, prereqs)

    def _std_link(self) -> list[str]:
        return [LIBCXX_FLAG] if self.libcxx else []

    def _test_binary(self, pkg: Package, u: _Unit, lib_units: list[_Unit], archives: dict[int, str]) -> None:
        mains = {t.main for t in self.targets_of(pkg) if t.kind == "bin"}
        objs = [u.obj] + [x.obj for x in lib_units if x.source.path not in mains]
        ids = [u.action_id] + [x.action_id for x in lib_units if x.source.path not in mains]
        dep_archives, dep_ids = self._dep_archives(pkg, archives, dev=True)
        name = os.path.splitext(os.path.basename(u.source.path))[0]
        out = f"{self.out}/tests/{pkg.name}/{name}"
        self._link(pkg, f"link-test {pkg.name}:{name}", out, objs, dep_archives, self._ldflags(pkg, True),
                   False, ids + dep_ids, kind="link", dev=True)
        self.plan.artifacts.append(Artifact(pkg.name, name, "test", out))
