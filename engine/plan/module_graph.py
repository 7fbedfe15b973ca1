"""Which source exports which C++ module, and what each unit must see compiled first.

Every exported module (an interface or an interface partition) gets one BMI path, and so does
an implementation partition (`module m:secret;`, imported inside `m` as `import :secret;`):
it exports nothing, but its importers need its BMI all the same. The graph is
checked as a whole before any compile is planned: a module imported but exported by no source,
`import std;` without libc++, two sources exporting one name, and a cycle among interfaces
(which no compile order can satisfy) are each an error naming the sources or modules involved.
"""
from __future__ import annotations

from ..core.conventions import Role
from ..core.errors import McppError, Position, ScanError
from ..core.paths import PkgPath
from ..modules.scanner import ModuleUnit
from ..package.sources import Source
from .context import PlanContext
from .std_module import STD_MODULES, libcxx_modules
from .units import Unit


def imports_of(u: Unit) -> list[str]:
    """The modules `u` imports, including the interface an implementation unit implicitly imports."""
    imports = list(u.info.imports)
    if u.info.module and not u.info.exported and ":" not in u.info.module:
        imports.insert(0, u.info.module)
    return imports


class ModuleGraph:
    """The module table of one build. `libcxx` says whether clang's libc++ `std` module is built
    (some unit imports `std` or `std.compat`), and `std_units` are those modules' units."""

    def __init__(self, ctx: PlanContext, units: list[Unit]):
        self.ctx = ctx
        tc = ctx.tc
        self.libcxx = tc.family == "clang" and any(n in STD_MODULES for u in units for n in u.info.imports)
        self.table: dict[str, Unit] = {}
        self.std_units: list[Unit] = []
        ext = ".gcm" if tc.family == "gcc" else ".pcm"
        for u in units:
            if u.info.module and (u.info.exported or ":" in u.info.module):
                other = self.table.get(u.info.module)
                if other is not None:
                    raise McppError(f"module `{u.info.module}` is declared by two sources: "
                                    f"`{other.shown()}` and `{u.shown()}`")
                u.bmi = f"{ctx.work}/bmi/{u.info.module.replace(':', '-')}{ext}"
                self.table[u.info.module] = u
        if self.libcxx:
            self._add_std_units(units)
        self._check_imports(units)
        self._check_cycles()

    @property
    def std_objects(self) -> list[str]:
        """Objects of the standard library modules: every link of the build takes them."""
        return [u.obj for u in self._std_in_table()]

    @property
    def std_ids(self) -> list[str]:
        return [u.action_id for u in self._std_in_table()]

    def _std_in_table(self) -> list[Unit]:
        return [self.table[n] for n in STD_MODULES if n in self.table]

    def closure(self, u: Unit) -> list[Unit]:
        """Every module unit `u` needs a BMI of, transitively, in a stable order."""
        table = self.table
        seen: dict[str, Unit] = {}
        todo = [n for n in imports_of(u) if n in table and table[n] is not u]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen[name] = table[name]
            todo.extend(n for n in imports_of(table[name]) if n in table and table[n] is not u)
        return [seen[n] for n in sorted(seen)]

    def _add_std_units(self, units: list[Unit]) -> None:
        """Add the libc++ `std` (and `std.compat`, when imported) module interfaces."""
        wanted = {n for u in units for n in u.info.imports if n in STD_MODULES}
        if "std.compat" in wanted:
            wanted.add("std")
        sources = libcxx_modules(self.ctx.tc.cxx.path, self.ctx.tc.flags)
        out = self.ctx.work
        for name in sorted(wanted):
            if name not in sources:
                raise McppError(f"libc++ does not provide the `{name}` module")
            imports = ("std",) if name == "std.compat" else ()
            # A unit of no package: its source's "package-relative" path is the .cppm's absolute one,
            # which every join with a root leaves as it is.
            u = Unit(None, Source(PkgPath(sources[name].source), Role.MODULE),
                     ModuleUnit(name, True, imports, True, tuple(0 for _ in imports)),
                     f"{out}/std/{name}.o", f"compile std:{name}", f"{out}/bmi/{name}.pcm")
            self.table[name] = u
            self.std_units.append(u)

    def _check_imports(self, units: list[Unit]) -> None:
        clang = self.ctx.tc.family == "clang"
        for u in units:
            imports = imports_of(u)
            for i, name in enumerate(imports):
                if name in self.table:
                    self._check_standard(u, name, imports, i)
                    continue
                if name in STD_MODULES and not clang:
                    continue
                line = u.info.import_lines[i - (len(imports) - len(u.info.imports))] \
                    if name in u.info.imports else None
                raise ScanError(f"module `{name}` is imported but no source of `{u.pkg.name}` or its dependencies exports it",
                                Position(u.shown(), line))
            if any(n in STD_MODULES for n in u.info.imports) and not clang:
                raise ScanError("`import std;` needs clang-19 with libc++ (set `[toolchain] default = \"clang-19\"` "
                                "or pass `--toolchain clang-19`); gcc 12 has no standard library module",
                                Position(u.shown(), u.info.import_lines[u.info.imports.index(
                                    next(n for n in u.info.imports if n in STD_MODULES))]))

    def _check_standard(self, u: Unit, name: str, imports, i: int) -> None:
        """A module's BMI is built with its own package's `standard`; gcc and clang refuse to read
        one written for another dialect (gcc: "language dialect differs", clang: "configuration
        mismatch"), so an import across packages of two standards is refused here, naming both."""
        provider = self.table[name].pkg
        if u.pkg is None or provider is None or provider is u.pkg:
            return
        mine, theirs = u.pkg.manifest.standard, provider.manifest.standard
        if mine == theirs:
            return
        line = u.info.import_lines[i - (len(imports) - len(u.info.imports))] if name in u.info.imports else None
        raise ScanError(
            f"`{u.pkg.name}` ({mine}) imports module `{name}` of `{provider.name}` ({theirs}): a module is compiled "
            f"once, with its package's standard, and a compiler reads it only at that standard",
            Position(u.shown(), line),
            [f"{u.pkg.manifest.position('package', 'standard')}: note: `{u.pkg.name}` has standard = \"{mine}\"",
             f"{provider.manifest.position('package', 'standard')}: note: `{provider.name}` has standard = "
             f"\"{theirs}\"",
             "help: give both packages the same `standard` in [package] (the default is c++23)"])

    def _check_cycles(self) -> None:
        """A cycle among module interfaces can never be compiled: name it."""
        table = self.table
        state: dict[str, int] = {}  # 1: on the current path, 2: done
        stack: list[str] = []

        def visit(name: str) -> None:
            state[name] = 1
            stack.append(name)
            for dep in imports_of(table[name]):
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
