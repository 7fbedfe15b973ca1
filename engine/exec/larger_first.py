"""The order in which the scheduler considers a plan's actions: larger compiles first.

The scheduler starts ready actions in the order it is given (engine/exec/schedule.py). Taking
the plan's order, a clean build's largest compile (a `main` that calls every unit, a generated
table) may be the last one started, and it then runs alone, with a core idle, before the link
that waits for it. Started among the first, it overlaps the small ones. This is the classic
longest-first rule, with the source's size standing for the compile's time: the size the stat
cache recorded when planning read the source (no system call). Actions that are not compiles
(code generators, build programs' actions, links) keep the plan's order, ahead of the compiles:
what they make is often what compiles wait for.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

from mcpp.cas.action import Action, ActionKind

if TYPE_CHECKING:
    from ..plan.model import Plan


def larger_first(actions: Sequence[Action], size_of: Callable[[str], int]) -> list[Action]:
    """`actions` reordered: every action that is not a compile in plan order, then the compiles
    by the size of their source (`size_of(execroot-relative path)`, 0 when unknown), largest
    first; ties keep the plan's order."""
    def rank(a: Action) -> tuple[int, int]:
        if a.kind is ActionKind.COMPILE and a.inputs:
            return 1, -size_of(a.inputs[0])
        return 0, 0

    return sorted(actions, key=rank)


def by_size(plan: Plan, size_of: Callable[[str], int | None]) -> list[Action]:
    """`larger_first` of the plan's actions, made once per plan and kept on it (`Plan.by_size`).
    A server makes it while idle, after the build that planned it (engine/server/warm.py), so a
    build given that plan does not sort every action again before its first compile: ~20 ms at
    10,000 units in a child forked for the request, where each action's first touch copies a
    page. The sizes are those of that moment: an edit's few bytes seldom move a compile's rank,
    and the order is only the scheduler's preference among the actions ready to start. A size
    not known (None: the server's stat cache holds no entry for that source) sorts as 0, and
    that order is not kept: the build given the plan sorts by the sizes it knows."""
    if plan.by_size is not None and len(plan.by_size) == len(plan.actions):
        return plan.by_size
    unknown = False

    def known(rel: str) -> int:
        nonlocal unknown
        size = size_of(rel)
        if size is None:
            unknown = True
            return 0
        return size

    order = larger_first(plan.actions, known)
    if not unknown:
        plan.by_size = order
    return order
