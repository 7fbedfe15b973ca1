"""Compile actions: one per unit, with its flags, the BMIs it imports, and the headers it may read.

A compile declares as `may_read` only the pool headers its `#include` lines can reach (see
include_scan.py), so a sandbox stages a few headers rather than every header of every
dependency. A header a build program generates into an include directory does not exist yet
when the plan is made: every compile that could include it runs after the action that writes it
and may read it (it is staged with the pool), but, as with a source header, only the generated
headers its depfile names enter its key, so an edit of one generated header recompiles only the
units that include it.
"""
from __future__ import annotations

import os
from typing import Callable

from mcpp.cas.action import Action, ActionKind
from mcpp.sandbox import EXECROOT_PLACEHOLDER

from . import compile_flags as cf
from ..core.containment import inside
from ..core.conventions import Role
from ..core.errors import ManifestError
from ..manifest import globs
from ..modules.p1689 import PreprocessScan, scan_deps_tool
from ..package.features import feature_define
from ..package.model import Package
from ..package.sources import Source
from ..package.sources import header_pool, include_dirs
from ..package.targets import target_headers
from ..package.testsuite import test_headers
from .context import PlanContext, transitive_deps
from .include_scan import reachable
from .pool_lookup import PoolLookup, Unsure
from .model import ACTION_ENV, Plan
from .module_graph import ModuleGraph
from .rule_actions import action_id as rule_action_id
from .std_module import LIBCXX_FLAG, libcxx_modules
from .units import Unit


class Compiles:
    """Plans the compiles of one build into `plan`. `includes` maps an absolute path to its
    include directives (cached by the caller), or is None to stage every pool header. `modules`
    may be set after construction: the units it is made of are scanned with `scan_request`."""

    def __init__(self, ctx: PlanContext, plan: Plan, modules: ModuleGraph | None,
                 includes: Callable[[str], object] | None, look_up_pools: bool = False):
        self.ctx = ctx
        self.plan = plan
        self.modules = modules
        self.includes = includes
        # A compile planned alone (the planner's head start): the pool is asked path by path
        # (pool_lookup.py) where that answers, not walked
        self.look_up_pools = look_up_pools
        # a package's headers (and, keyed (package, "tests"), its tests' headers), execroot-relative
        self._pools: dict[object, tuple[str, ...]] = {}
        # The headers a compile of (package, dev) may read, and their index by absolute path: made
        # once per package and shared by its compiles, never once per compile (a pool per compile
        # costs units x headers, which grows with the square of a project's size).
        self._pool_memo: dict[tuple[Package, bool], tuple[str, ...]] = {}
        self._pool_index: dict[tuple[Package, bool], dict[str, str]] = {}
        # A target's own headers, and their union with its package's pool, by (id(package), id(target)):
        # both live as long as the plan's graph, and a target's settings are not hashable.
        self._target_memo: dict[tuple[int, int], tuple[str, ...]] = {}
        self._target_pool_memo: dict[tuple[tuple[int, int], bool], tuple[str, ...]] = {}
        self._directive_memo: dict[str, object] = {}  # a header is scanned once per build
        self._gen_header_memo: dict[tuple[Package, bool], list[tuple[str, str]]] = {}
        # may_read with the generated headers, by (id(may_read), id(generated headers))
        self._gen_union_memo: dict[tuple[int, int],
                                   tuple[tuple[str, ...], list[tuple[str, str]], tuple[str, ...]]] = {}
        self._flags_memo: dict[tuple[Package, str, bool], tuple[list[str], list[str], list[str]]] = {}
        # what each header reaches, per pool (package, dev) and search path (include_scan.py)
        self._closures: dict[tuple, dict[str, set[str] | None]] = {}
        # per search path: its absolute directories, and the paths each directive may name there
        self._searched: dict[tuple[str, ...], tuple[list[str], dict]] = {}
        self._candidates: dict[tuple[str, ...], dict] = {}

    # -- a unit of a package -------------------------------------------------------------------
    def compile(self, u: Unit) -> None:
        if u.pkg is None:
            return self.compile_std(u)
        if u.source.role in (Role.ASM, Role.ASM_CPP):
            return self.compile_asm(u)
        ctx, tc = self.ctx, self.ctx.tc
        pkg = u.pkg
        src = ctx.layout.package_exec_path(pkg.root, u.source.path)
        is_test = u.obj.startswith(f"{ctx.work}/test-obj/")  # a source of a test directory
        t = u.target  # a target's own settings add to the package's, for its sources alone
        is_test = is_test or (t is not None and (t.kind == "test" or bool(t.deps)))
        user, defines, incs = self.flags_for(pkg, u.source.role, dev=is_test)
        if pkg.manifest.build.source_flags:
            self.add_source_flags(pkg, u.source, user, defines)
        if t is not None:
            user += list(t.cflags if u.source.role == "c" else t.cxxflags)
            defines += list(t.defines)
            incs = [ctx.layout.package_exec_path(pkg.root, d) for d in t.include_dirs] + list(u.extra_includes) + incs
        needed = self.modules.closure(u)
        uses_modules = bool(needed or u.info.module or u.info.imports)
        gen_headers = self.generated_headers(pkg, is_test)  # one list per package: with_generated's memo
        if u.extra_headers:  # a generated tree's headers (dynamic_trees.py)
            gen_headers = gen_headers + list(u.extra_headers)
        inputs = [src] + [n.bmi for n in needed] + [h for h, _ in u.extra_headers]
        outputs = [u.obj]
        mapper = None
        if uses_modules and tc.family == "gcc":
            mapper = u.obj[:-2] + ".map"
            entries = [(n.info.module, n.bmi) for n in needed]
            if u.bmi:
                entries.append((u.info.module, u.bmi))
            self.plan.generated[mapper] = cf.gcc_mapper_text(entries)
            inputs.append(mapper)
        if u.bmi:
            outputs.append(u.bmi)
        module = cf.module_flags(tc, mapper, u.bmi if uses_modules else None,
                                 [(n.info.module, n.bmi) for n in needed]) if uses_modules else []
        role = u.source.role
        if u.bmi and tc.family == "clang":
            module += cf.CLANG_EMBED_SOURCES
            role = "module"  # a `.cc` interface or an implementation partition writes a BMI too
        pic = u.pic
        depfile = u.obj[:-2] + ".d"
        argv = cf.compile_argv(tc, ctx.profile, source=src, obj=u.obj, depfile=depfile,
                               role=role, standard=pkg.manifest.standard, user_flags=user,
                               defines=defines, include_dirs=incs, module=module, pic=pic)
        if self.modules.libcxx and u.source.role != "c":
            argv.insert(1, LIBCXX_FLAG)
        compiler = argv[0]
        may_read = self.may_read(pkg, is_test) if u.produced_by else self.headers_for(src, incs, user, pkg, is_test)
        if t is not None:
            may_read = self.with_target_headers(may_read, pkg, t, is_test)
        if gen_headers:
            may_read = self.with_generated(may_read, gen_headers)
        action = Action(
            id=u.action_id, argv=tuple(argv), outputs=tuple(outputs + [depfile]), inputs=tuple(inputs),
            may_read=may_read,
            tools=(compiler,), env=ACTION_ENV, depfile=depfile, kind=ActionKind.COMPILE,
            description=f"{pkg.name}: {u.source.path}")
        self.plan.add(action, pkg.name, [n.action_id for n in needed] + ([u.produced_by] if u.produced_by else [])
                      + [producer for _, producer in gen_headers])
        self.plan.compile_commands.append({
            "directory": ctx.execroot, "file": os.path.join(pkg.root, u.source.path),
            "arguments": [a.replace(EXECROOT_PLACEHOLDER, ctx.execroot) for a in argv],
            "output": os.path.join(ctx.execroot, u.obj)})

    def scan_request(self, pkg: Package, src: Source, dev: bool) -> PreprocessScan | None:
        """How to scan `src` with the preprocessor: its compile's flags (the same defines,
        include directories and standard, so the scan takes the branches the compile will),
        run by the toolchain's clang-scan-deps in the execroot; None where there is none."""
        ctx, tc = self.ctx, self.ctx.tc
        tool = scan_deps_tool(tc.cxx.path) if tc.family == "clang" else None
        if tool is None:
            return None
        user, defines, incs = self.flags_for(pkg, src.role, dev)
        if pkg.manifest.build.source_flags:
            self.add_source_flags(pkg, src, user, defines)
        obj = f"{ctx.work}/scan/{pkg.name}/{src.path}.o"  # named in the P1689 answer, never written
        source = ctx.layout.package_exec_path(pkg.root, src.path)
        argv = cf.compile_argv(tc, ctx.profile, source=source, obj=obj,
                               depfile=obj[:-2] + ".d", role=src.role, standard=pkg.manifest.standard,
                               user_flags=user, defines=defines, include_dirs=incs, module=[], pic=False)
        argv = argv[:argv.index("-MD")]  # the scan writes a depfile of its own
        argv = [a.replace(EXECROOT_PLACEHOLDER, ctx.execroot) for a in argv]
        return PreprocessScan(tool, tc.identity, tuple(argv), ctx.execroot)

    def compile_asm(self, u: Unit) -> None:
        """An assembler source: `.S` with the package's defines and include directories (it may
        `#include` the package's headers, which the sandbox stages as for a C compile), `.s` as
        written, with nothing to read but itself."""
        ctx, pkg = self.ctx, u.pkg
        src = ctx.layout.package_exec_path(pkg.root, u.source.path)
        is_test = u.obj.startswith(f"{ctx.work}/test-obj/")  # a source of a test directory
        t = u.target  # a target's own defines and include directories add to the package's
        is_test = is_test or (t is not None and (t.kind == "test" or bool(t.deps)))
        preprocessed = u.source.role == Role.ASM_CPP
        depfile = u.obj[:-2] + ".d" if preprocessed else None
        _, defines, incs = self.flags_for(pkg, Role.C, dev=is_test)
        if pkg is not None and pkg.manifest.build.source_flags:  # an assembler source takes an entry's defines
            self.add_source_flags(pkg, u.source, [], defines)
        if t is not None:
            defines += list(t.defines)
            incs = [ctx.layout.package_exec_path(pkg.root, d) for d in t.include_dirs] + incs
        gen_headers = self.generated_headers(pkg, is_test) if preprocessed else []
        argv = cf.asm_argv(ctx.tc, ctx.profile, source=src, obj=u.obj, depfile=depfile,
                           defines=defines, include_dirs=incs)
        may_read = self.headers_for(src, incs, [], pkg, is_test) if preprocessed else ()
        if preprocessed and t is not None:
            may_read = self.with_target_headers(may_read, pkg, t, is_test)
        if gen_headers:
            may_read = self.with_generated(may_read, gen_headers)
        self.plan.add(Action(
            id=u.action_id, argv=tuple(argv), outputs=(u.obj,) + ((depfile,) if depfile else ()),
            inputs=(src,),
            may_read=may_read,
            tools=(argv[0],), env=ACTION_ENV, depfile=depfile, kind=ActionKind.COMPILE,
            description=f"{pkg.name}: {u.source.path}"),
            pkg.name, ([u.produced_by] if u.produced_by else []) + [producer for _, producer in gen_headers])
        self.plan.compile_commands.append({
            "directory": ctx.execroot, "file": os.path.join(pkg.root, u.source.path),
            "arguments": [a.replace(EXECROOT_PLACEHOLDER, ctx.execroot) for a in argv],
            "output": os.path.join(ctx.execroot, u.obj)})

    def flags_for(self, pkg: Package, role: str, dev: bool) -> tuple[list[str], list[str], list[str]]:
        """(user flags, defines, execroot-relative include directories) of a compile of `pkg`:
        the same for each of its sources, so made once (fresh lists each call: callers add)."""
        made = self._flags_memo.get((pkg, role, dev))
        if made is None:
            made = self._flags_memo[(pkg, role, dev)] = self._flags(pkg, role, dev)
        return list(made[0]), list(made[1]), list(made[2])

    @staticmethod
    def add_source_flags(pkg: Package, src: Source, user: list[str], defines: list[str]) -> None:
        """A `[[build.sources]]` entry's flags, for the sources its glob selects: its `cflags`
        to a C compile, `cxxflags` to the others, `defines` to all (added to `user`, `defines`)."""
        for entry in pkg.manifest.build.source_flags:
            if globs.match(entry.glob, src.path):
                user += entry.cflags if src.role == "c" else entry.cxxflags
                defines += entry.defines

    def _flags(self, pkg: Package, role: str, dev: bool) -> tuple[list[str], list[str], list[str]]:
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
        for p in [pkg] + transitive_deps(pkg, dev):
            declared = {os.path.normpath(os.path.join(p.root, d)) for d in p.manifest.build.include_dirs}
            for d in include_dirs(p):
                if inside(d, self.ctx.execroot):
                    incs.append(self.ctx.rel(d))
                elif d in declared:  # a manifest's directory above the build: no sandboxed compile sees it
                    raise self._outside_include(pkg, os.path.relpath(d, self.ctx.execroot), dev)
                else:
                    # A build program's directory outside the build (an installed payload's, which the
                    # sandbox mounts where it lies) is named absolute and read as system headers are:
                    # keyed through the depfile.
                    incs.append(d)
        # system libraries' compile flags (pkg-config's `-I`, `-D`) reach the package and its dependents
        for p in [pkg] + transitive_deps(pkg, dev):
            user += [f for f in p.system.cflags + (p.dev_system.cflags if dev and p is pkg else ()) if f not in user]
        return user, defines, list(dict.fromkeys(incs))

    def _outside_include(self, pkg: Package, rel: str, dev: bool) -> ManifestError:
        """An include directory above the build's root (the execroot: the common directory of
        every package and `target/`) is nothing a sandboxed compile can see, nor anything its key
        could cover: refused at the `include_dirs` entry that names it."""
        absolute = os.path.normpath(os.path.join(self.ctx.execroot, rel))
        for p in [pkg] + transitive_deps(pkg, dev):
            for i, d in enumerate(p.manifest.build.include_dirs):
                if os.path.normpath(os.path.join(p.root, d)) == absolute:
                    return ManifestError(
                        f"include directory `{d}` (`{absolute}`) is outside the build's root `{self.ctx.execroot}`: "
                        f"a compile sees only the packages of the build (and the system's headers), under the "
                        f"sandbox as without it", p.manifest.position("build", "include_dirs", i),
                        ["help: keep the headers inside the package (`include/`), or make their directory a "
                         "package of its own with `include_dirs` and depend on it by path"])
        return ManifestError(f"include directory `{absolute}` of `{pkg.name}` is outside the build's root "
                             f"`{self.ctx.execroot}`")

    # -- headers -------------------------------------------------------------------------------
    def may_read(self, pkg: Package, dev: bool) -> tuple[str, ...]:
        """Execroot-relative headers of `pkg` and its dependencies (computed once per package)."""
        pool = self._pool_memo.get((pkg, dev))
        if pool is not None:
            return pool
        out: list[str] = []
        for p in [pkg] + transitive_deps(pkg, dev):
            if p not in self._pools:
                self._pools[p] = tuple(self.ctx.rel(h) for h in header_pool(p, self.ctx.expand)
                                       if inside(h, self.ctx.execroot))  # what is staged, not mounted
            out.extend(self._pools[p])
        if dev:  # a test may include the headers beside it (its framework, the suite's helpers)
            if (pkg, "tests") not in self._pools:
                self._pools[(pkg, "tests")] = tuple(self.ctx.rel(h) for h in test_headers(pkg))
            out.extend(self._pools[(pkg, "tests")])
        pool = self._pool_memo[(pkg, dev)] = tuple(dict.fromkeys(out))
        return pool

    def with_target_headers(self, may_read: tuple[str, ...], pkg: Package, target, dev: bool) -> tuple[str, ...]:
        """`may_read` plus the headers of a target's own sources. The target's headers (a glob
        over its directories) are found once per target, and the union with the whole pool once
        per (package, target): per compile either would grow with units x headers."""
        key = (id(pkg), id(target))
        own = self._target_memo.get(key)
        if own is None:
            own = self._target_memo[key] = tuple(self.ctx.rel(h) for h in target_headers(pkg, target, self.ctx.expand))
        if may_read is not self._pool_memo.get((pkg, dev)):
            return tuple(dict.fromkeys(may_read + own))  # a scanned subset: small
        whole = self._target_pool_memo.get((key, dev))
        if whole is None:
            whole = self._target_pool_memo[(key, dev)] = tuple(dict.fromkeys(may_read + own))
        return whole

    def headers_for(self, src: str, incs: list[str], user: list[str], pkg: Package,
                    dev: bool) -> tuple[str, ...]:
        """The pool headers this compile can reach (include_scan.py), else the whole pool."""
        forced = any(f.startswith("-include") for f in user)
        execroot = self.ctx.execroot
        search = list(incs) + [f[2:] for f in user if f.startswith("-I") and len(f) > 2]
        if self.look_up_pools and self.includes is not None and not dev and not forced:
            looked_up = self._looked_up(src, search, pkg)
            if looked_up is not None:
                return looked_up
        pool = self.may_read(pkg, dev)
        if self.includes is None or not pool or forced:
            return pool  # a forced include (`-include x.h`) is not in any source: stage everything
        index = self._pool_index.get((pkg, dev))
        if index is None:
            index = self._pool_index[(pkg, dev)] = {os.path.join(execroot, h): h for h in pool}
        searched = self._searched.get(tuple(search))
        if searched is None:  # the same directories for each compile of a package: joined once
            dirs = [os.path.join(execroot, d) for d in search]
            searched = self._searched[tuple(search)] = (dirs, self._candidates.setdefault(tuple(dirs), {}))
        dirs, candidates = searched
        closures = self._closures.setdefault((pkg, dev, tuple(dirs)), {})
        found = reachable(os.path.join(execroot, src), dirs, index, self._directives, closures, candidates)
        return pool if found is None else tuple(sorted(found))

    def _looked_up(self, src: str, search: list[str], pkg: Package) -> tuple[str, ...] | None:
        """`headers_for` without the pool's walk (`look_up_pools`); None where the scan or the
        lookup cannot bound them (the walk then decides, as for any other compile)."""
        execroot = self.ctx.execroot
        try:
            pool = PoolLookup(self.ctx, pkg)
            if pool.empty:
                return ()
            found = reachable(os.path.join(execroot, src), [os.path.join(execroot, d) for d in search],
                              pool, self._directives)
        except (Unsure, OSError):  # OSError: a file the scan cannot read, which the walk's answer names
            return None
        return None if found is None else tuple(sorted(found))

    def _directives(self, path: str):
        if path not in self._directive_memo:
            self._directive_memo[path] = self.includes(path)
        return self._directive_memo[path]

    def with_generated(self, may_read: tuple[str, ...], gen_headers: list[tuple[str, str]]) -> tuple[str, ...]:
        """`may_read` plus the generated headers: staged for the compile, keyed only when its
        depfile names them. The union is made once per distinct `may_read` (the whole pool is
        one tuple shared by a package's compiles)."""
        key = (id(may_read), id(gen_headers))
        memo = self._gen_union_memo.get(key)
        # both identities checked: an id is reused once its object is freed
        if memo is None or memo[0] is not may_read or memo[1] is not gen_headers:
            union = tuple(dict.fromkeys(may_read + tuple(h for h, _ in gen_headers)))
            memo = self._gen_union_memo[key] = (may_read, gen_headers, union)
        return memo[2]

    def generated_headers(self, pkg: Package, dev: bool) -> list[tuple[str, str]]:
        """(header, id of the rule action writing it) for each output of a rule action inside an
        include directory of `pkg` or a dependency (a header generated into `out_dir()` and
        exposed with `include_dir()`)."""
        key = (pkg, dev)
        if key not in self._gen_header_memo:
            found: list[tuple[str, str]] = []
            for p in [pkg] + transitive_deps(pkg, dev):
                if p.program is None or not p.program.include_dirs:
                    continue
                dirs = [d.rstrip("/") + "/" for d in include_dirs(p)]
                for ra in p.program.actions:
                    for out in ra.products:
                        if any(out.startswith(d) for d in dirs):  # a tree output keeps its `/`: staged whole
                            found.append((self.ctx.rel(out) + ("/" if out.endswith("/") else ""),
                                          rule_action_id(p, ra)))
            self._gen_header_memo[key] = found
        return self._gen_header_memo[key]

    # -- a standard library module -------------------------------------------------------------
    def compile_std(self, u: Unit) -> None:
        """libc++'s `std` or `std.compat` module, compiled from the source libc++ ships."""
        ctx = self.ctx
        needed = self.modules.closure(u)
        std_src = libcxx_modules(ctx.tc.cxx.path, ctx.tc.flags)[u.info.module]
        module = cf.module_flags(ctx.tc, None, u.bmi, [(n.info.module, n.bmi) for n in needed])
        depfile = u.obj[:-2] + ".d"
        members = ctx.graph.members
        standard = members[0].manifest.standard if members else "c++20"
        argv = cf.compile_argv(ctx.tc, ctx.profile, source=std_src.source, obj=u.obj, depfile=depfile,
                               role="module", standard=standard,
                               user_flags=[LIBCXX_FLAG, "-Wno-reserved-module-identifier"],
                               defines=[], include_dirs=[], module=module, pic=False)
        argv[1:1] = [f"-isystem{d}" for d in std_src.include_dirs]
        self.plan.add(Action(
            id=u.action_id, argv=tuple(argv), outputs=(u.obj, u.bmi, depfile),
            inputs=tuple(n.bmi for n in needed), tools=(argv[0], std_src.source), env=ACTION_ENV,
            depfile=depfile, kind=ActionKind.COMPILE, description=f"std: {u.info.module}"),
            "std", [n.action_id for n in needed])
