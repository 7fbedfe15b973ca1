"""The compiles and targets a build program's rules declared (`mcpp.compile`, `link`, `binary`,
`library`, `test`; engine/program/api_targets.py), planned with the planner's own parts.

A `compile()` set becomes units compiled by `Compiles.compile` (the manifest's compile path:
the package's flags, its dependencies' include directories, the sandbox's header staging, the
include scan), with the set's flags as a target's own settings. A target becomes an archive or a
link by `Links` (the same argv, linker keying and dependency archives as a manifest target), and
an `Artifact`, which is what `mcpp run`, `mcpp test` and `mcpp install` act on. A static library
a rule declares is linked by the package's own binaries and by its dependents, as its archive is.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from mcpp.cas.action import Action, ActionKind

from . import compile_flags as cf
from ..core.containment import inside
from ..core.conventions import Role
from ..core.errors import McppError
from ..core.paths import ExecPath, PkgPath
from ..manifest.model import TargetSpec
from ..package.model import Package
from ..package.sources import Source, role_of
from .context import PlanContext
from .links import Links
from .model import ACTION_ENV, Artifact, ArtifactKind, Plan
from .rule_actions import action_id as rule_action_id
from .units import ORDINARY, Unit

if TYPE_CHECKING:  # a build program's: imported where a package has a build.star
    from ..package.program_result import RuleCompile, RuleTarget


class RuleTargets:
    def __init__(self, ctx: PlanContext, plan: Plan, with_tests: bool,
                 trees: dict[str, tuple[str, ...]] | None = None):
        self.ctx = ctx
        self.plan = plan
        self.with_tests = with_tests
        self.trees = trees or {}  # tree output (execroot-relative, `/`-ended) -> its files, once listed
        self._objects: dict[str, str] = {}  # execroot-relative object -> the action making it
        # the `/`-ended object directory of a compiled tree -> (object, compile id) of each of its sources
        self._tree_objects: dict[str, list[tuple[str, str]]] = {}

    def units(self, pkg: Package) -> list[Unit]:
        """The units of `pkg`'s `compile()` sets; a source is an object's when a shared library
        links it (then position-independent)."""
        program = pkg.program
        if program is None or not program.compiles:
            return []
        ctx = self.ctx
        made_by = {out: rule_action_id(pkg, ra) for ra in program.actions for out in ra.products}
        shared = {o for t in program.targets if t.kind == "shared" for o in t.objects}
        tests = {o for t in program.targets if t.kind == "test" or t.testonly for o in t.objects}
        built = {o for t in program.targets if self._built(pkg, t) for o in t.objects}
        out: list[Unit] = []
        gen_root = os.path.join(ctx.layout.work_dir, "gen")
        for c in program.compiles:
            generated_incs = tuple(ctx.rel(d) for d in c.includes if inside(d, gen_root))
            if program.targets and not any(o in built for o in c.objects) and all(o in tests for o in c.objects):
                continue  # only tests link it, and this build runs none
            settings = self._settings(pkg, c, test=any(o in tests for o in c.objects))
            extra = self._generated_headers(pkg, c, made_by) + self._tree_headers(pkg, c)
            for src, obj in zip(c.srcs, c.objects):
                if src.endswith("/"):
                    out += self._tree_units(pkg, c, src, obj, made_by, settings, obj in shared, extra,
                                            generated_incs)
                    continue
                producer = None
                if inside(src, ctx.layout.gen_dir(pkg.name)):
                    producer = made_by.get(src)
                    if producer is None:
                        raise McppError(f"package `{pkg.name}`: compile() source `{ctx.rel(src)}` is not an output "
                                        f"of any action its build program declares")
                rel_obj = ctx.rel(obj)
                u = Unit(pkg, Source(ctx.layout.package_path(pkg.root, src), _role(src)), ORDINARY, rel_obj,
                         f"compile {self._shown(pkg, c, obj)[:-2]}", produced_by=producer, target=settings, pic=obj in shared,
                         extra_headers=extra, extra_includes=generated_incs)
                self._objects[rel_obj] = u.action_id
                out.append(u)
        return out

    def _shown(self, pkg: Package, c: RuleCompile, obj: str) -> str:
        """`<package>@<set>:<source>.o`, an object as its compile's id names it."""
        base = os.path.join(self.ctx.layout.work_dir, "obj", f"{pkg.name}@{c.id}")
        return f"{pkg.name}@{c.id}:{os.path.relpath(obj, base)}" + ("/" if obj.endswith("/") else "")

    def _tree_units(self, pkg: Package, c: RuleCompile, tree: str, obj_dir: str, made_by: dict[str, str], settings: TargetSpec,
                    pic: bool, extra: tuple[tuple[str, str], ...], incs: tuple[str, ...]) -> list[Unit]:
        """The compiles of a tree output's C and C++ files, or none yet: before its generator
        ran, the tree is noted in `plan.dynamic` and the build plans again once it did."""
        ctx = self.ctx
        producer = made_by.get(tree)
        if producer is None:
            raise McppError(f"package `{pkg.name}`: compile() source `{ctx.rel(tree.rstrip('/'))}/` is not a tree "
                            f"output of any action its build program declares")
        rel_tree = ctx.rel(tree.rstrip("/")) + "/"
        listing = self.trees.get(rel_tree)
        rel_dir = ctx.rel(obj_dir.rstrip("/")) + "/"
        self._tree_objects[rel_dir] = []
        if listing is None:
            self.plan.dynamic.append(rel_tree)
            return []
        out = []
        for f in listing:
            if role_of(f) not in ("c", "cxx"):
                continue
            src = tree + f
            obj = rel_dir + f + ".o"
            u = Unit(pkg, Source(ctx.layout.package_path(pkg.root, src), _role(f)), ORDINARY, obj,
                     f"compile {self._shown(pkg, c, obj_dir)}{f}", produced_by=producer, target=settings, pic=pic,
                     extra_headers=extra, extra_includes=incs)
            self._objects[obj] = u.action_id
            self._tree_objects[rel_dir].append((obj, u.action_id))
            out.append(u)
        return out

    def _tree_headers(self, pkg: Package, c: RuleCompile) -> tuple[tuple[str, str], ...]:
        """(header, producing action) of the listed trees the set compiles or names in `includes`."""
        made_by = _made_by(pkg)
        out: list[tuple[str, str]] = []
        for tree in [s for s in c.srcs if s.endswith("/")] + [d.rstrip("/") + "/" for d in c.includes]:
            producer = made_by.get(tree)
            if producer is None:
                continue
            listing = self.trees.get(self.ctx.rel(tree.rstrip("/")) + "/", ())
            out += [(self.ctx.rel(tree + f), producer) for f in listing if role_of(f) == "header"]
        return tuple(dict.fromkeys(out))

    def _settings(self, pkg: Package, c: RuleCompile, test: bool) -> TargetSpec:
        """The set's flags as a target's own settings (`Compiles.compile` adds them to the
        package's); a test's set sees the dev-dependencies, as a test target does. Include
        directories of generated files are the units' `extra_includes`: their headers are the
        actions' outputs, never globbed."""
        gen_root = os.path.join(self.ctx.layout.work_dir, "gen")
        return TargetSpec(f"{pkg.name}@{c.id}", "test" if test else "lib", cflags=c.cflags, cxxflags=c.cxxflags,
                          defines=c.defines,
                          include_dirs=tuple(PkgPath(self.ctx.layout.package_path(pkg.root, d)) for d in c.includes
                                             if not inside(d, gen_root)))

    def _generated_headers(self, pkg: Package, c: RuleCompile, made_by: dict[str, str]) -> tuple[tuple[str, str], ...]:
        """(header, producing action) of the package's action outputs under the set's include
        directories: inputs of its compiles, which run after their producers."""
        dirs = [d.rstrip("/") + "/" for d in c.includes]
        return tuple((self.ctx.rel(out), producer) for out, producer in made_by.items()
                     if role_of(out) == "header" and any(out.startswith(d) for d in dirs))

    def archives(self, pkg: Package, links: Links) -> None:
        """`pkg`'s rule static libraries, before its manifest targets, which link them."""
        program = pkg.program
        ctx = self.ctx
        for t in program.targets if program is not None else ():
            if t.kind == "static":
                objs, ids = self._objects_of(pkg, t)
                out = ExecPath(ctx.rel(os.path.join(ctx.layout.out_dir, f"lib{t.name}.a")))
                action_id = f"archive {pkg.name}:{t.name}"
                self.plan.add(Action(id=action_id, argv=tuple(cf.archive_argv(ctx.tc, out, objs)), outputs=(out,),
                                     inputs=tuple(objs), tools=(ctx.tc.ar,), env=ACTION_ENV, kind=ActionKind.ARCHIVE,
                                     description=f"{pkg.name}: lib{t.name}.a"), pkg.name, ids)
                links.rule_archives.setdefault(pkg, []).insert(0, (out, action_id))
                self.plan.artifacts.append(Artifact(pkg.name, t.name, ArtifactKind.LIB, out))

    def link(self, pkg: Package, links: Links) -> None:
        """`pkg`'s rule binaries, shared libraries and tests, after its manifest targets (its
        archive is linked by them)."""
        program = pkg.program
        if program is None or not program.targets:
            return
        ctx = self.ctx
        # static rule library name -> (archive, action id)
        own = {action_id.split(":", 1)[1]: (out, action_id) for out, action_id in links.rule_archives.get(pkg, [])}
        for t in program.targets:
            if t.kind == "static" or not self._built(pkg, t):
                continue
            objs, ids = self._objects_of(pkg, t)
            if t.kind == "test" and t.binary is not None:
                runs = next(b for b in program.targets if b.kind == "bin" and b.name == t.binary)
                path = ExecPath(ctx.rel(ctx.layout.test_binary(pkg.name, runs.name) if runs.testonly
                                        else os.path.join(ctx.layout.out_dir, runs.name)))
                self.plan.artifacts.append(Artifact(pkg.name, t.name, ArtifactKind.TEST, path, args=t.data))
                continue
            dev = t.kind == "test" or t.testonly
            archives = [own[d][0] for d in t.deps]
            prereqs = [own[d][1] for d in t.deps]
            if pkg in links.archives:
                archives.append(links.archives[pkg])
                prereqs.append(f"archive {pkg.name}")
            dep_archives, dep_ids = links.dep_archives(pkg, dev)
            ldflags = links.ldflags(pkg, dev) + [lib if lib.startswith("-") else f"-l{lib}" for lib in t.libs]
            if t.kind == "bin":
                out = ExecPath(ctx.rel(ctx.layout.test_binary(pkg.name, t.name) if t.testonly
                                       else os.path.join(ctx.layout.out_dir, t.name)))
                kind = ArtifactKind.BIN
            elif t.kind == "shared":
                out = ExecPath(ctx.rel(os.path.join(ctx.layout.out_dir, f"lib{t.name}.so")))
                kind = ArtifactKind.SHARED
            else:
                out = ctx.rel(ctx.layout.test_binary(pkg.name, t.name))
                kind = ArtifactKind.TEST
            links.link(pkg, f"link {pkg.name}:{t.name}" if kind != ArtifactKind.TEST else
                       f"link-test {pkg.name}:{t.name}", out, objs, archives + dep_archives, ldflags,
                       kind == ArtifactKind.SHARED, ids + prereqs + dep_ids, dev=dev)
            if not t.testonly:
                self.plan.artifacts.append(Artifact(pkg.name, t.name, kind, out, args=t.data if dev else ()))

    def _built(self, pkg: Package, t: RuleTarget) -> bool:
        """Whether this build makes `t`: a test (or a `testonly` binary) only for `mcpp test` of a member."""
        if t.kind == "test" or t.testonly:
            return self.with_tests and any(pkg is m for m in self.ctx.graph.members)
        return True

    def _objects_of(self, pkg: Package, t: RuleTarget) -> tuple[list[str], list[str]]:
        """(execroot-relative objects, their producing actions) a target links."""
        made_by = _made_by(pkg)
        objs: list[str] = []
        ids: list[str] = []
        for o in t.objects:
            if o.endswith("/"):  # every object of a compiled tree
                for obj, compile_id in self._tree_objects.get(self.ctx.rel(o.rstrip("/")) + "/", ()):
                    objs.append(obj)
                    ids.append(compile_id)
                continue
            rel = self.ctx.rel(o)
            producer = self._objects.get(rel) or made_by.get(o)
            if producer is None:
                raise McppError(f"package `{pkg.name}`, {t.kind} `{t.name}`: object `{rel}` is not made by any "
                                f"compile() or action of its build program")
            objs.append(rel)
            ids.append(producer)
        return objs, ids


def _made_by(pkg: Package) -> dict[str, str]:
    """Each output of `pkg`'s program's actions -> the id of the action making it."""
    actions = pkg.program.actions if pkg.program is not None else []
    return {out: rule_action_id(pkg, ra) for ra in actions for out in ra.products}


def _role(path: str) -> Role:
    """The role of a source `compile()` accepted (C or C++, checked when it was declared)."""
    role = role_of(path)
    if role is None:
        raise McppError(f"`{path}` is not a C or C++ source")
    return role
