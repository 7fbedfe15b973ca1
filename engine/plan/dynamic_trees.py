"""Sources known only after their generator runs: a tree output (`dir/`) named in a rule's
`mcpp.compile(...)` (docs/rules.md, "Outputs known only after the generator runs").

A plan made before the tree exists lists it in `Plan.dynamic` and compiles none of its files.
The build then runs the actions that make those trees (and what they need), lists each tree
as the generator left it, and plans again with the listing (`Planner(trees=...)`): every C or
C++ file in it becomes a compile, every header an input of the compiles that may include it.
Each compile is keyed by its file's content like any source, and the listing is made again by
every build after the generator ran, so a changed tree (a file added, renamed or removed)
changes the compiles and the link. A build without such a tree does none of this.
"""
from __future__ import annotations

import os

from .model import Plan


def producers(plan: Plan) -> list[str]:
    """The ids of the actions that make `plan.dynamic`'s trees and everything they need, in plan order."""
    wanted: set[str] = set()
    todo = [plan.made_by[t] for t in plan.dynamic if t in plan.made_by]
    while todo:
        i = todo.pop()
        if i not in wanted:
            wanted.add(i)
            todo.extend(plan.prereqs.get(i, ()))
    return [a.id for a in plan.actions if a.id in wanted]


def subset(plan: Plan, ids: list[str]) -> Plan:
    """A plan of the actions `ids` alone (their prerequisites must be among them)."""
    keep = set(ids)
    out = Plan(plan.execroot, generated=plan.generated)
    for a in plan.actions:
        if a.id in keep:
            out.add(a, plan.package_of[a.id], list(plan.prereqs.get(a.id, ())))
    return out


def list_trees(plan: Plan) -> dict[str, tuple[str, ...]]:
    """Each of `plan.dynamic`'s trees (execroot-relative, `/`-ended) -> the relative paths of its
    regular files, sorted, as the generator left them."""
    out: dict[str, tuple[str, ...]] = {}
    for tree in plan.dynamic:
        root = os.path.join(plan.execroot, tree)
        files = []
        for d, dirs, names in os.walk(root):
            dirs.sort()
            files += [os.path.relpath(os.path.join(d, n), root) for n in names
                      if os.path.isfile(os.path.join(d, n)) and not os.path.islink(os.path.join(d, n))]
        out[tree] = tuple(sorted(files))
    return out
