"""A translation unit of the plan: one source, what its module scan says, and where its object
(and, for a module interface, its BMI) goes."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

from ..conventions import C_DRIVER_ROLES
from ..package.model import Package
from ..modules.scanner import ModuleUnit
from .context import PlanContext
from ..package.sources import Source

# What a source that is not a module and imports none scans as (and every C or assembler source,
# unscanned).
ORDINARY = ModuleUnit(None, False, (), False, ())


@dataclass
class Unit:
    pkg: Package | None  # None: a module of the toolchain's standard library
    source: Source
    info: ModuleUnit
    obj: str
    action_id: str
    bmi: str | None = None
    produced_by: str | None = None  # a generated source: the rule action that writes it

    def shown(self) -> str:
        """The source as an error message names it: relative to the working directory."""
        return os.path.relpath(os.path.join(self.pkg.root, self.source.path)) if self.pkg else self.source.path


class UnitMaker:
    """Makes the units of a package's sources; `scan` maps an absolute path to its module facts
    (the caller caches scans across builds)."""

    def __init__(self, ctx: PlanContext, scan: Callable[[str], ModuleUnit]):
        self.ctx = ctx
        self.scan = scan

    def make(self, pkg: Package, sources: list[Source], kind: str) -> list[Unit]:
        """`kind` is the object directory: `obj`, or `test-obj` for test sources."""
        out = []
        for src in sources:
            abs_path = os.path.join(pkg.root, src.path)
            info = self.scan(abs_path) if src.role not in C_DRIVER_ROLES else ORDINARY
            obj = f"{self.ctx.out}/{kind}/{pkg.name}/{src.path}.o"
            out.append(Unit(pkg, src, info, obj, f"compile {pkg.name}:{src.path}"))
        return out

