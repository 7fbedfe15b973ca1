"""The plan's producer edges, settled once every action is planned.

A build program's actions are planned before the engine's compiles and links (their `source`
outputs are compiled, their `object` outputs linked), so when one is added the producer of an
input it reads may not be planned yet: a rule action reading the `.o` of a compile of its own
package got no edge and failed at run time with "does not exist". Which action writes which
file, and in what order they run, are plan-time facts, so this pass, run when the plan is
complete, decides them all and refuses a plan that cannot be ordered:

- one file written by two actions (the second would silently overwrite the first's result);
- a rule action that reads the output of an action that (transitively) needs it: a cycle.

Both name the actions involved, at the lines of the build program (or rule `.star` file) that
declared them.
"""
from __future__ import annotations

from mcpp.cas.action import ActionKind

from ..core.errors import McppError, Position, display_path


def settle(plan) -> None:
    """Refuse duplicate outputs, give every rule action an edge to the producer of each input,
    then refuse cycles. Mutates `plan.prereqs` and `plan.made_by`."""
    writer: dict[str, str] = {}
    for a in plan.actions:
        for out in a.outputs:
            other = writer.setdefault(out, a.id)
            if other != a.id:
                pos, notes = declared_position(plan, a.id)
                if other in plan.declared_at:
                    notes = [declared_note(plan, other), *notes]
                if pos is None:
                    pos, notes = declared_position(plan, other)
                raise McppError(f"{describe(plan, other)} and {describe(plan, a.id)} both declare the output "
                                f"`{out}`; each file of the build is written by one action", pos, notes)
    plan.made_by.update(writer)
    for a in plan.actions:
        if a.kind != ActionKind.RULE:
            continue
        producers = [writer[i] for i in a.inputs if i in writer]
        if a.id in producers:
            raise McppError(f"{describe(plan, a.id)} reads its own output "
                            f"`{next(i for i in a.inputs if writer.get(i) == a.id)}`", *declared_position(plan, a.id))
        plan.prereqs[a.id] = tuple(dict.fromkeys(plan.prereqs.get(a.id, ()) + tuple(producers)))
    cycle = find_cycle(plan.prereqs)
    if cycle:
        path = " -> ".join(describe(plan, i) for i in cycle + [cycle[0]])
        first = next((i for i in cycle if i in plan.declared_at), cycle[0])
        pos, notes = declared_position(plan, first)
        notes = notes + [declared_note(plan, i) for i in cycle if i != first and i in plan.declared_at]
        raise McppError(f"actions depend on each other in a cycle: {path}", pos,
                        notes=notes + ["note: an action runs after the actions that write its inputs; "
                                       "one of these must not read what the other writes"])


def declared_position(plan, action_id: str) -> tuple[Position | None, list[str]]:
    """Where a build program declared the action (None for the engine's own), and the lines
    that called that one, as notes."""
    found = plan.declared_at.get(action_id)
    if found is None:
        return None, []
    where, via = found
    path, _, rest = where.rpartition(":")  # `file:line:col`
    path, _, line = path.rpartition(":")
    try:
        pos = Position(display_path(path), int(line), int(rest))
    except ValueError:
        return Position(where), []
    return pos, [f"note: called from {shown(v)}" for v in via]


def shown(where: str) -> str:
    """`/abs/file.star:3[:5]` as the user reads it: the file relative to the working directory
    when below it (the declaration is recorded with an absolute path)."""
    head, _, tail = where.partition(".star:")
    return f"{display_path(head + '.star')}:{tail}" if tail else display_path(where)


def declared_where(plan, action_id: str) -> str | None:
    """`build.star:4:1` for a build program's action, None for the engine's own."""
    found = plan.declared_at.get(action_id)
    return shown(found[0]) if found else None


def declared_note(plan, action_id: str) -> str:
    """`note: action `b` of package `p` is declared at rules.star:3:5 (called from build.star:7)`."""
    where, via = plan.declared_at[action_id]
    return f"note: {describe(plan, action_id)} is declared at {shown(where)}" + (f" (called from {shown(via[0])})"
                                                                                 if via else "")


def describe(plan, action_id: str) -> str:
    """`action `gen` of package `p`` for a build program's action, else the engine's id."""
    if action_id.startswith("rule ") and ":" in action_id:
        return f"action `{action_id.split(':', 1)[1]}` of package `{plan.package_of.get(action_id, '?')}`"
    return f"`{action_id}`"


def find_cycle(prereqs: dict[str, tuple[str, ...]]) -> list[str]:
    """One cycle of the graph (its nodes in dependency order), or [] when it is acyclic.
    Iterative, so a deep chain of actions cannot exhaust Python's stack."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in prereqs:
        if state.get(start):
            continue
        path: list[str] = []
        stack = [(start, iter(prereqs.get(start, ())))]
        state[start] = 1
        path.append(start)
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                path.pop()
                state[node] = 2
            elif state.get(nxt) == 1:
                return path[path.index(nxt):]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append((nxt, iter(prereqs.get(nxt, ()))))
    return []
