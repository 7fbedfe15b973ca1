"""What a package's build program declared, planned: its actions, the sources it chose or
generated, and the objects it adds to the package's archive.

A rule action's role decides where it sits in the plan: `object` outputs join the package's
archive, `source` outputs (and `generated()` files) are compiled with the package, and
`artifact` actions run after the package's links, since they may read its binaries. One
action often makes a header and a source (or an object) together, so consumption is per
output: headers are never compiled or linked (they are reached through `#include`), and
`object()`/`generated()` name single outputs of an action of any role.
"""
from __future__ import annotations

import os

from mcpp.cas.action import Action

from ..core import containment
from ..core.errors import McppError
from ..core.paths import PkgPath
from ..modules.scanner import ModuleUnit, scan_source
from ..package.model import Package
from ..package.sources import Source, role_of
from .context import PlanContext
from .model import ACTION_ENV, Plan
from .rule_actions import action_id as rule_action_id, to_plan_action
from .rule_edges import declared_position
from .units import ORDINARY, Unit, UnitMaker


class ProgramActions:
    def __init__(self, ctx: PlanContext, plan: Plan, units: UnitMaker):
        self.ctx = ctx
        self.plan = plan
        self.unit_maker = units
        self._objects: dict[Package, list[tuple[str, str]]] = {}  # package -> (object, producing action id)
        self._after_link: list[tuple[Package, Action]] = []  # `artifact` actions, planned last

    def objects_of(self, pkg: Package) -> list[tuple[str, str]]:
        """(execroot-relative object, producing action id) of `pkg`'s `role = "object"` actions."""
        return self._objects.get(pkg, [])

    def plan_actions(self, pkg: Package) -> None:
        """Plan `pkg`'s rule actions; `artifact` ones wait for `plan_after_link`."""
        for ra in pkg.program.actions:
            action = to_plan_action(pkg, ra, self.ctx.layout, ACTION_ENV)
            if ra.where:
                self.plan.declared_at[action.id] = (ra.where, ra.via)
            if ra.role == "artifact":
                self._after_link.append((pkg, action))
                continue
            if ra.role == "object":
                # Headers are included and sources named by `generated()` compiled; the rest is linked.
                linked = [o for o in ra.products if role_of(o) != "header" and o not in pkg.program.generated]
                for o in linked:
                    if role_of(o) in ("c", "cxx", "module"):
                        raise McppError(f"package `{pkg.name}`, action `{ra.id}`: output `{self.ctx.rel(o)}` is a "
                                        f"source, and `role = \"object\"` links its outputs; compile it with "
                                        f"`mcpp.generated(...)` (or declare the action with `role = \"source\"`)")
                objs = self._objects.setdefault(pkg, [])
                objs += [(self.ctx.rel(o), action.id) for o in linked]
            self.plan.add(action, pkg.name, self.plan.producers(action))
        made_by = {out: rule_action_id(pkg, ra) for ra in pkg.program.actions for out in ra.products}
        for path in dict.fromkeys(getattr(pkg.program, "objects", ())):
            producer = made_by.get(path)
            if producer is None:
                raise McppError(f"package `{pkg.name}`: object `{self.ctx.rel(path)}` is not an output of any "
                                f"action its build program declares")
            if role_of(path) in ("c", "cxx", "module", "header"):
                raise McppError(f"package `{pkg.name}`: `object(\"{self.ctx.rel(path)}\")` names a source or "
                                f"header; an object is what a compiler or archiver made (compile a source with "
                                f"`mcpp.generated(...)`)")
            objs = self._objects.setdefault(pkg, [])
            if (self.ctx.rel(path), producer) not in objs:
                objs.append((self.ctx.rel(path), producer))

    def pending_after_link(self) -> list[tuple[Package, Action]]:
        """The `artifact` actions `plan_after_link` will plan."""
        return list(self._after_link)

    def plan_after_link(self) -> None:
        """The `artifact` actions, each after every link of its package."""
        if not self._after_link:
            return
        links: dict[str, list[str]] = {}  # one pass over the plan, not one per artifact action
        for a in self.plan.actions:
            if a.kind == "link":
                links.setdefault(self.plan.package_of[a.id], []).append(a.id)
        for pkg, action in self._after_link:
            self.plan.add(action, pkg.name, self.plan.producers(action) + links.get(pkg.name, []))

    def check_inputs(self) -> None:
        """A rule action's input must exist or be made by an action of this build."""
        for a in self.plan.actions:
            if a.kind != "rule":
                continue
            for rel in a.inputs:
                if rel not in self.plan.made_by and not os.path.exists(os.path.join(self.ctx.execroot, rel)):
                    pkg = self.plan.package_of[a.id]
                    pos, notes = declared_position(self.plan, a.id)
                    raise McppError(f"package `{pkg}`, action `{a.id.split(':', 1)[1]}`: input `{rel}` does not "
                                    f"exist and no action of this build makes it", pos, notes)
                if rel not in self.plan.made_by:  # read by the engine to stage it: must stay in the build
                    containment.check(os.path.join(self.ctx.execroot, rel), self.ctx.execroot,
                                      what="the build's root",
                                      shown=f"package `{self.plan.package_of[a.id]}`, action "
                                            f"`{a.id.split(':', 1)[1]}`: input `{rel}`")

    def units(self, pkg: Package) -> list[Unit]:
        """Sources a program chose (`source()`) and generated ones (`generated()`, and the outputs
        of its `role = "source"` actions), compiled with the package."""
        ctx = self.ctx
        program = pkg.program
        units = self.unit_maker.make(pkg, [self._chosen(pkg, rel) for rel in program.sources], "obj")
        made_by = {out: rule_action_id(pkg, ra) for ra in program.actions for out in ra.products}
        generated = list(program.generated)
        # A header beside the sources a `source` action makes is read through `#include`.
        generated += [out for ra in program.actions if ra.role == "source" for out in ra.products
                      if role_of(out) != "header"]
        gen_root = ctx.layout.gen_dir(pkg.name)
        for path in dict.fromkeys(generated):
            producer = made_by.get(path)
            if producer is None:
                raise McppError(f"package `{pkg.name}`: generated source `{ctx.rel(path)}` is not an output of "
                                f"any action its build program declares")
            role = role_of(path)
            info = ORDINARY
            if role == "module":
                info = self._written_module(pkg, path, producer)
            elif role not in ("c", "cxx"):
                raise McppError(f"package `{pkg.name}`: generated source `{ctx.rel(path)}` is not a C or C++ "
                                f"source (a generated file joins the compile set by its extension: .c, .cpp, .cc, .cxx)")
            shown = "gen/" + os.path.relpath(path, gen_root)
            units.append(Unit(pkg, Source(ctx.layout.package_path(pkg.root, path), role), info,
                              f"{ctx.work}/obj/{pkg.name}/{shown}.o", f"compile {pkg.name}:{shown}",
                              produced_by=producer))
        return units

    def _written_module(self, pkg: Package, path: str, producer: str) -> ModuleUnit:
        """A generated module interface must be planned (its name and imports ordered) before it
        exists, so only one whose text the program already gave, with `mcpp.write()`, can be
        one: that text is scanned here."""
        written = [ra for ra in pkg.program.actions
                   if rule_action_id(pkg, ra) == producer and ra.id.startswith("write ") and len(ra.argv) > 4]
        if not written:
            raise McppError(f"package `{pkg.name}`: generated module interface `{self.ctx.rel(path)}` is not written "
                            f"with `mcpp.write()`; a module's name and imports are needed before the build runs")
        return scan_source(written[0].argv[4], path)

    def _chosen(self, pkg: Package, rel: str) -> Source:
        role = role_of(rel)
        if role not in ("c", "cxx", "module"):
            raise McppError(f"package `{pkg.name}`: `source(\"{rel}\")` is not a C, C++ or module source")
        if not os.path.isfile(os.path.join(pkg.root, rel)):
            raise McppError(f"package `{pkg.name}`: `source(\"{rel}\")` does not exist")
        return Source(PkgPath(rel), role)
