"""`mcpp.compile`, `mcpp.link`, `mcpp.binary`, `mcpp.library` and `mcpp.test`: what a rule
declares for `mcpp build`, `run`, `test` and `install` to act on (docs/rules.md, "Targets").

They record `RuleCompile`s and `RuleTarget`s into the program's result; the planner turns them
into the same compile, archive and link actions as the manifest's targets (engine/plan/
rule_targets.py), so a rule's compile is keyed, cached and sandboxed like any other. The paths
these functions return (objects, binaries, libraries) are where the planner puts them, so a
rule can hand one to a later call (`link(objects = compile(...))`, `test(binary = ...)`).

`TargetsApi` is a mixin of `McppApi`: it uses `self.ctx`, `self.result` and `self._path`.
"""
from __future__ import annotations

import os
import re
from typing import Callable

from ..core.containment import inside
from ..package.program_result import RuleCompile, RuleTarget
from ..package.sources import role_of
from ..package.program_result import ProgramResult
from .api_errors import ProgramApiError, _need_str
from .context import ProgramContext

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*$")
_COMPILED = ("c", "cxx")


_STARLARK_TYPES = {"str": "string", "NoneType": "None", "tuple": "tuple", "list": "list", "dict": "dict"}


def _type(value) -> str:
    """A value's type as Starlark names it."""
    return _STARLARK_TYPES.get(type(value).__name__, type(value).__name__)


def _strs(func: str, arg: str, value) -> list[str]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ProgramApiError(f"{func}(): `{arg}` must be a list of strings, got {_type(value)}")
    for v in value:
        if not isinstance(v, str):
            raise ProgramApiError(f"{func}(): `{arg}` must be a list of strings, got a {_type(v)} in it")
        if "\0" in v:
            raise ProgramApiError(f"{func}(): `{arg}` contains a NUL byte")
    return list(value)


class TargetsApi:
    """`compile`, `link`, `binary`, `library`, `test`."""

    TARGET_FUNCTIONS = ("compile", "link", "binary", "library", "test")

    # McppApi's, which this mixin uses
    ctx: ProgramContext
    result: ProgramResult
    _path: Callable[[str], str]
    _inside: Callable[[str, str], None]

    # -- where things land (the planner's Layout, engine/package/layout.py) ----------------------
    @property
    def _work(self) -> str:
        return os.path.dirname(os.path.dirname(self.ctx.out_dir))  # target/<profile>/.mcpp

    def _output(self, kind: str, name: str) -> str:
        top = os.path.dirname(self._work)  # target/<profile>
        return {"bin": os.path.join(top, name), "static": os.path.join(top, f"lib{name}.a"),
                "shared": os.path.join(top, f"lib{name}.so"),
                "test": os.path.join(self._work, "tests", self.ctx.package, name)}[kind]

    def _name(self, func: str, name) -> str:
        _need_str(func, "name", name)
        if not _NAME.match(name):
            raise ProgramApiError(f"{func}(): name `{name}` is not a target name (letters, digits, `_`, `.`, "
                                  f"`+`, `-`; not starting with `.`, `+` or `-`)")
        return name

    # -- compile ----------------------------------------------------------------------------------
    def compile(self, srcs, flags=(), includes=(), defines=(), cflags=(), cxxflags=(), name=None) -> list[str]:
        """Objects of `srcs`, compiled with the package's flags plus these (`flags` for every
        source, `cflags`/`cxxflags` for C or C++ ones alone); returns their paths. A source ending
        in `/` is an action's tree output: every C and C++ file in it is compiled, and its
        objects are named by one path ending in `/` that `link()` takes as all of them."""
        srcs = _strs("compile", "srcs", srcs)
        if not srcs:
            raise ProgramApiError("compile(): `srcs` is empty")
        cid = self._name("compile", name) if name is not None else f"compile-{len(self.result.compiles) + 1}"
        if any(c.id == cid for c in self.result.compiles):
            raise ProgramApiError(f"compile(): package `{self.ctx.package}` already compiles a set named `{cid}`")
        flags = _strs("compile", "flags", flags)
        resolved, objects = [], []
        for src in srcs:
            path = self._path(src)
            if src.endswith("/") and src.strip("/"):
                # a tree output: its files are compiled once its action ran (engine/plan/dynamic_trees.py)
                if not inside(path, self.ctx.out_dir) or path == os.path.normpath(self.ctx.out_dir):
                    raise ProgramApiError(f"compile(): `{src}` ends in `/`, so it is a tree output of an action, "
                                          f"and those are under out_dir() (`{self.ctx.out_dir}`)")
                shown = "gen/" + os.path.relpath(path, self.ctx.out_dir) + "/"
                resolved.append(path + "/")
                objects.append(os.path.join(self._work, "obj", f"{self.ctx.package}@{cid}", shown))
                continue
            role = role_of(path)
            if role not in _COMPILED:
                raise ProgramApiError(f"compile(): `{src}` is not a C or C++ source (.c, .cpp, .cc, .cxx)")
            if inside(path, self.ctx.out_dir):
                shown = "gen/" + os.path.relpath(path, self.ctx.out_dir)  # an action's output, checked when planned
            elif inside(path, self.ctx.manifest_dir):
                self._inside(path, f"compile(`{src}`)")
                if not os.path.isfile(path):
                    raise ProgramApiError(f"compile(): source `{src}` does not exist")
                shown = os.path.relpath(path, self.ctx.manifest_dir)
            else:
                raise ProgramApiError(f"compile(): `{src}` is neither a file of package `{self.ctx.package}` nor "
                                      f"under out_dir() (`{self.ctx.out_dir}`)")
            if path in resolved:
                raise ProgramApiError(f"compile(): `{src}` is listed twice")
            resolved.append(path)
            objects.append(os.path.join(self._work, "obj", f"{self.ctx.package}@{cid}", shown + ".o"))
        self.result.compiles.append(RuleCompile(
            id=cid, srcs=tuple(resolved), objects=tuple(objects),
            cflags=tuple(flags + _strs("compile", "cflags", cflags)),
            cxxflags=tuple(flags + _strs("compile", "cxxflags", cxxflags)),
            defines=tuple(_strs("compile", "defines", defines)),
            includes=tuple(self._path(d) for d in _strs("compile", "includes", includes))))
        return objects

    # -- link -------------------------------------------------------------------------------------
    def link(self, name, objects, kind="bin", libs=(), deps=()) -> str:
        """`objects` (from `compile()`, or outputs of the package's actions) linked into a binary
        (`bin`), an archive (`static`) or a shared library (`shared`); returns its path."""
        name = self._name("link", name)
        if kind not in ("bin", "static", "shared"):
            raise ProgramApiError(f"link(`{name}`): unknown kind `{kind}` (expected bin, static or shared)")
        objs = [self._object(f"link(`{name}`)", o) for o in _strs("link", "objects", objects)]
        return self._declare(RuleTarget(name=name, kind=kind, objects=tuple(objs),
                                        libs=tuple(_strs("link", "libs", libs)),
                                        deps=tuple(self._deps("link", deps))))

    def binary(self, name, srcs=(), deps=(), flags=(), includes=(), defines=(), libs=(), objects=(),
               testonly=False) -> str:
        name = self._name("binary", name)
        if not isinstance(testonly, bool):
            raise ProgramApiError(f"binary(`{name}`): `testonly` must be a bool, got {_type(testonly)}")
        self._free("bin", name, testonly)
        objs = self._sources_and_objects(f"binary(`{name}`)", f"bin-{name}", srcs, objects, flags, includes, defines)
        return self._declare(RuleTarget(name=name, kind="bin", objects=tuple(objs),
                                        libs=tuple(_strs("binary", "libs", libs)),
                                        deps=tuple(self._deps("binary", deps)), testonly=testonly))

    def library(self, name, srcs=(), kind="static", deps=(), flags=(), includes=(), defines=(), libs=(),
                objects=()) -> str:
        name = self._name("library", name)
        if kind not in ("static", "shared"):
            raise ProgramApiError(f"library(`{name}`): unknown kind `{kind}` (expected static or shared)")
        self._free(kind, name)
        objs = self._sources_and_objects(f"library(`{name}`)", f"lib-{name}", srcs, objects, flags, includes,
                                         defines)
        return self._declare(RuleTarget(name=name, kind=kind, objects=tuple(objs),
                                        libs=tuple(_strs("library", "libs", libs)),
                                        deps=tuple(self._deps("library", deps))))

    def test(self, name, srcs=None, binary=None, data=(), deps=(), flags=(), includes=(), defines=(),
             libs=()) -> str:
        """A test `mcpp test` runs: `srcs` linked into a test binary, or a rule `binary` (its name
        or the path `binary()` returned) run as it is; `data` files are its arguments."""
        name = self._name("test", name)
        if (srcs is None) == (binary is None):
            raise ProgramApiError(f"test(`{name}`): give exactly one of `srcs` and `binary`")
        self._free("test", name)
        files = []
        for d in _strs("test", "data", data):
            path = self._path(d)
            if not (inside(path, self.ctx.out_dir) or (inside(path, self.ctx.manifest_dir) and os.path.isfile(path))):
                raise ProgramApiError(f"test(`{name}`): data `{d}` is neither a file of package "
                                      f"`{self.ctx.package}` nor under out_dir()")
            files.append(path)
        if binary is not None:
            _need_str("test", "binary", binary)
            bins = {t.name: t for t in self.result.targets if t.kind == "bin"}
            found = bins.get(binary) or next((t for t in bins.values() if self._output(
                "test" if t.testonly else "bin", t.name) == binary), None)
            if found is None:
                have = ", ".join(sorted(bins)) or "none"
                raise ProgramApiError(f"test(`{name}`): `{binary}` is not a binary this package's rules declared "
                                      f"(declared: {have})")
            return self._declare(RuleTarget(name=name, kind="test", data=tuple(files), binary=found.name))
        objs = self.compile(srcs, flags=flags, includes=includes, defines=defines, name=f"test-{name}")
        return self._declare(RuleTarget(name=name, kind="test", objects=tuple(objs), data=tuple(files),
                                        libs=tuple(_strs("test", "libs", libs)),
                                        deps=tuple(self._deps("test", deps))))

    # -- helpers ----------------------------------------------------------------------------------
    def _sources_and_objects(self, where: str, cid: str, srcs, objects, flags, includes, defines) -> list[str]:
        """The objects a target links: its `srcs` compiled (a set named `cid`) and `objects` as given."""
        srcs = _strs(where.split("(")[0], "srcs", srcs)
        given = [self._object(where, o) for o in _strs(where.split("(")[0], "objects", objects)]
        if not srcs and not given:
            raise ProgramApiError(f"{where}: give `srcs` to compile or `objects` to link")
        made = self.compile(srcs, flags=flags, includes=includes, defines=defines, name=cid) if srcs else []
        return made + given

    def _free(self, kind: str, name: str, testonly: bool = False) -> None:
        """A target's name is unique among the package's rule targets that land beside it."""
        apart = kind == "test" or testonly  # a test's binary lands among the tests
        clash = next((o for o in self.result.targets if o.name == name and (o.kind == "test" or o.testonly) == apart),
                     None)
        if clash is not None:
            raise ProgramApiError(f"{kind} `{name}`: package `{self.ctx.package}` already declares a "
                                  f"{clash.kind} target with that name")

    def _declare(self, t: RuleTarget) -> str:
        self._free(t.kind, t.name, t.testonly)
        apart = t.kind == "test" or t.testonly
        self.result.targets.append(t)
        return self._output("test" if apart else t.kind, t.name)

    def _object(self, where: str, o: str) -> str:
        path = self._path(o) + ("/" if o.endswith("/") and o.strip("/") else "")
        known = {obj for c in self.result.compiles for obj in c.objects}
        if path not in known and not inside(path, self.ctx.out_dir):
            raise ProgramApiError(f"{where}: object `{o}` is neither from compile() nor under out_dir()")
        return path

    def _deps(self, func: str, deps) -> list[str]:
        out = _strs(func, "deps", deps)
        libs = {t.name for t in self.result.targets if t.kind in ("static", "shared")}
        for d in out:
            if d not in libs:
                have = ", ".join(sorted(libs)) or "none"
                raise ProgramApiError(f"{func}(): dep `{d}` is not a library this package's rules declared before "
                                      f"(declared: {have}); a dependency package's libraries are linked without "
                                      f"being named")
        return out
