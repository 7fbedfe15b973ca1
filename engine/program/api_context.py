"""The toolchain and compile context of a build program, and per-output consumption
(docs/rules.md, "Toolchain, context and outputs").

A rule that drives a compiler (a CUDA host compile, a code generator that runs the C++
preprocessor) needs what the engine would pass to it: the compiler, the package's `-std`,
include directories and defines; a rule that runs a binary of the build needs its path; a rule
with templates beside its `.star` file needs the rule package's directory. All of it is part of
`ProgramContext`, so a change (another compiler, a new include directory of a dependency) runs
the program again.

`ContextApi` is a mixin of `McppApi`: it uses `self.ctx`, `self.result` and `self.action`.
"""
from __future__ import annotations

import os
import re
from dataclasses import asdict

from ..core.containment import inside
from ..package.features import feature_define
from ..package.model import Package
from ..package.program_result import ProgramResult
from ..package.sources import include_dirs
from ..package.targets import targets_of
from ..plan.compile_flags import std_flag
from ..plan.context import transitive_deps
from .api_errors import ProgramApiError, _need_str
from .context import BinRef, CompileContext, ProgramContext, RulePackageRef, ToolchainInfo

# Functions that return a struct: Starlark builds it (a Python callable returns only plain
# values), in a wrapper the prelude defines with the same (empty) signature, so a wrong call is
# still reported at the caller's line.
STRUCT_FUNCTIONS = ("toolchain", "package", "rule_package")

# Linux refuses one argv word longer than this (MAX_ARG_STRLEN): `write()` passes its content as one.
_MAX_WRITE = 128 * 1024 - 1


def struct_prelude() -> str:
    """Starlark definitions of the struct-returning members (`_mcpp_s_<name>`)."""
    return "".join(f"def _mcpp_s_{n}():\n    return struct(**_mcpp_{n}())\n" for n in STRUCT_FUNCTIONS)


PRELUDE_NAME = "<mcpp prelude>"
_FRAME = re.compile(r"^\s*\* (?P<file>.+?):(?P<line>\d+), in ")


def outside_prelude(text: str) -> str:
    """A Starlark error raised inside a struct wrapper of the prelude, moved to the line that
    called `mcpp.<name>()`: the wrapper is the engine's, the call is the author's. Wrong calls
    of these functions are named `mcpp.<name>` too."""
    # A wrong call names the function as the author wrote it.
    text = text.replace(f"call to {PRELUDE_NAME}._mcpp_s_", "call to mcpp.").replace("TypeError: ContextApi.",
                                                                                      "TypeError: mcpp.")
    lines = text.splitlines()
    arrow = next((i for i, line in enumerate(lines) if line.strip().startswith(f"--> {PRELUDE_NAME}:")), None)
    if arrow is None:
        return text
    frames = [(i, m) for i, line in enumerate(lines) if (m := _FRAME.match(line))]
    callers = [(i, m) for i, m in frames if m["file"] != PRELUDE_NAME]
    if not callers:
        return text
    _, caller = callers[-1]
    col = 1
    try:
        with open(caller["file"], encoding="utf-8") as f:
            source = f.read().splitlines()[int(caller["line"]) - 1]
        col = len(source) - len(source.lstrip()) + 1
    except (OSError, IndexError, UnicodeDecodeError):
        pass
    lines[arrow] = f" --> {caller['file']}:{caller['line']}:{col}"
    drop = {j for i, m in frames if m["file"] == PRELUDE_NAME for j in (i, i + 1)}
    return "\n".join(line for j, line in enumerate(lines) if j not in drop)


def member(name: str) -> str:
    """The Starlark name the prelude binds to `mcpp.<name>`."""
    return f"_mcpp_s_{name}" if name in STRUCT_FUNCTIONS else f"_mcpp_{name}"


def context_extras(pkg: Package, rule_modules: dict, toolchain, profile, bin_dir: str) -> dict:
    """The `ProgramContext` fields this module's functions answer from, for `pkg`.

    Programs run dependencies first, so a dependency's `mcpp.include_dir(...)` is already known
    and is part of what a dependent's `cxx_flags()` returns."""
    m = pkg.manifest
    flags = [*std_flag(m.standard, False), *profile.compile_flags(), *profile.cxxflags, *m.build.cxxflags]
    defines = [feature_define(f) for f in sorted(pkg.features)]
    for fname in sorted(pkg.features):
        defines += list(m.features[fname].defines)
    defines += list(m.build.defines)
    own = [os.path.normpath(os.path.join(m.root, d)) for d in m.build.include_dirs]
    conventional = os.path.join(m.root, "include")
    if os.path.isdir(conventional) and conventional not in own:
        own.append(conventional)
    deps = transitive_deps(pkg, False)
    dep_incs = [d for p in deps for d in include_dirs(p)]
    bins = [BinRef(p.name, t.name, os.path.join(bin_dir, t.name)) for p in [pkg] + deps
            for t in targets_of(p) if t.kind == "bin"]
    rule_pkgs = {r.package.root: r.package for r in rule_modules.values()}
    return dict(
        toolchain=ToolchainInfo(toolchain.cc.path, toolchain.cxx.path, toolchain.ar, toolchain.family,
                                toolchain.cxx.version, toolchain.cxx.target),
        compile_flags=CompileContext(tuple(flags), tuple(defines), tuple(own), tuple(dict.fromkeys(dep_incs)),
                                     tuple([*profile.compile_flags(), *profile.cflags, *m.build.cflags])),
        bins=tuple(bins),
        rule_packages=tuple(sorted((RulePackageRef(root, p.name, p.manifest.version or "", tuple(sorted(p.features)))
                                    for root, p in rule_pkgs.items()), key=lambda r: r.root)))


class ContextApi:
    """`toolchain`, `cxx_flags`, `bin`, `rule_dir`, `package`, `rule_package`, `object`, `write`."""

    ctx: ProgramContext  # McppApi's, which this mixin uses
    result: ProgramResult

    CONTEXT_FUNCTIONS = ("toolchain", "cxx_flags", "c_flags", "bin", "rule_dir", "package", "rule_package", "object",
                         "write")

    def function(self, name: str, path: str):
        """The callable behind `mcpp.<name>` in the `.star` file `path`: `rule_dir()` and
        `rule_package()` answer for the rule package that file belongs to, wherever it is called
        from (a rule module's function runs when the consumer's build.star calls it)."""
        if name == "rule_dir":
            def rule_dir():
                return self._rule_package_of(path, "rule_dir").root
            rule_dir.__qualname__ = "ContextApi.rule_dir"  # named so in a wrong call's TypeError
            return rule_dir
        if name == "probe":
            def probe(argv, inputs=(), tools=(), reads=()):
                owners = [r for r in self.ctx.rule_packages if path.startswith(r.root.rstrip("/") + "/")]
                rule_root = max(owners, key=lambda r: len(r.root)).root if owners else None
                return self._probe(argv, inputs, tools, reads, rule_root)
            return probe
        if name == "rule_package":
            def rule_package():
                r = self._rule_package_of(path, "rule_package")
                return {"name": r.name, "version": r.version, "features": list(r.features)}
            return rule_package
        return getattr(self, name)

    def toolchain(self) -> dict:
        return asdict(self.ctx.toolchain)

    def cxx_flags(self) -> list[str]:
        """What the engine passes to this package's C++ compiles, including what this program
        added so far (`cxxflag`, `define`, `include_dir`): call it after those."""
        c, r = self.ctx.compile_flags, self.result
        own = c.include_dirs
        incs = list(own) + [d for d in r.include_dirs if d not in own] + list(c.dependency_include_dirs)
        return [*c.flags, *r.cxxflags, *(f"-D{d}" for d in [*c.defines, *r.defines]),
                *(f"-I{d}" for d in dict.fromkeys(incs))]

    def c_flags(self) -> list[str]:
        """What the engine passes to this package's C compiles: `cxx_flags()` with the C flags
        (profile and `[build] cflags`, what `cflag` added) in place of the C++ ones."""
        c, r = self.ctx.compile_flags, self.result
        own = c.include_dirs
        incs = list(own) + [d for d in r.include_dirs if d not in own] + list(c.dependency_include_dirs)
        return [*c.c_flags, *r.cflags, *(f"-D{d}" for d in [*c.defines, *r.defines]),
                *(f"-I{d}" for d in dict.fromkeys(incs))]

    def bin(self, name: str) -> str:
        _need_str("bin", "name", name)
        found = [b.path for b in self.ctx.bins if b.target == name]
        if not found:
            have = ", ".join(f"`{b.target}` ({b.package})" for b in self.ctx.bins) or "none"
            raise ProgramApiError(f"bin(`{name}`): no bin target of package `{self.ctx.package}` or of its "
                                  f"dependencies has that name (bin targets: {have})")
        return found[0]

    def package(self) -> dict:
        return {"name": self.ctx.package, "version": self.ctx.version, "features": list(self.ctx.features)}

    def _rule_package_of(self, path: str, func: str) -> RulePackageRef:
        owners = [r for r in self.ctx.rule_packages if path.startswith(r.root.rstrip("/") + "/")]
        if not owners:
            raise ProgramApiError(f"{func}() is called from a file that is not part of a rule package; in a "
                                  f"package's own build program use manifest_dir() and package()")
        return max(owners, key=lambda r: len(r.root))

    def object(self, path: str) -> None:
        """An output of one of this program's actions joins the package's archive and links."""
        _need_str("object", "path", path)
        resolved = self._path(path)
        if not inside(resolved, self.ctx.out_dir):
            raise ProgramApiError(f"object `{path}` is outside out_dir() (`{self.ctx.out_dir}`)")
        self.result.objects.append(resolved)

    def write(self, path: str, content: str, executable: bool = False) -> None:
        """An action that writes `content` to `path` (under out_dir()); its output is read by
        later actions, or compiled with `generated()`."""
        _need_str("write", "path", path)
        if not isinstance(content, str):
            raise ProgramApiError(f"write(): `content` must be a string, got {type(content).__name__}")
        if not isinstance(executable, bool):
            raise ProgramApiError(f"write(): `executable` must be a bool, got {type(executable).__name__}")
        if "\0" in content:
            raise ProgramApiError("write(): `content` contains a NUL byte")
        if len(content.encode()) > _MAX_WRITE:
            raise ProgramApiError(f"write(`{path}`): content is {len(content.encode())} bytes; at most {_MAX_WRITE} "
                                  f"(write a larger file with an action of its own)")
        resolved = self._path(path)
        if not inside(resolved, self.ctx.out_dir) or resolved == os.path.normpath(self.ctx.out_dir):
            raise ProgramApiError(f"write(): `{path}` is outside out_dir() (`{self.ctx.out_dir}`)")
        rel = os.path.relpath(resolved, self.ctx.out_dir)
        script = 'printf "%s" "$1" > "$2"' + (' && chmod 755 "$2"' if executable else "")
        self.action(id=f"write {rel}", argv=["/bin/sh", "-c", script, "write", content, resolved], inputs=[],
                    outputs=[resolved], role="check", description=f"write {rel}")

