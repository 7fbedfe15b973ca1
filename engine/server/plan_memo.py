"""A build's plan, reused from the server's memory when nothing it was made from changed.

Planning reads: the package graph (manifests folded for the build's context, with each build
program's result attached), the toolchain, the profile, the directory listings the source globs
walk, and, per source and header, what the module and include scanners found in it. A server
holds the plan of the previous build of the same request (`warm.py`) and learns from its
watcher what changed since that build began. Here, in the build child, the plan is taken again
only when:

- the watcher saw no change to the shape of any package tree (no file created, deleted, renamed
  or re-moded: a glob could see it), only rewritten contents;
- the graph, toolchain identity, profile and target directory are equal to the ones the plan was
  made from (compared by value: the graph is loaded and its programs evaluated on every build);
- every rewritten file the scanners read scans to the same module facts and include directives
  (an edit inside a function body keeps the plan; an edit of an `#include` line does not).

In process (no server) nothing is given and `plan` simply plans.
"""
from __future__ import annotations

import os
import pickle
from dataclasses import dataclass, field
from typing import Callable

from ..unchanged import Knowledge, Unchanged


@dataclass
class Entry:
    """A plan and what it was made from."""
    plan: object
    context: bytes  # pickled (graph, toolchain identity, profile, target dir, ...)
    roots: list[str]  # the package roots: what the server's watcher must cover
    scanned: dict[str, object] = field(default_factory=dict)  # path -> (how it was scanned, module facts)
    included: dict[str, object] = field(default_factory=dict)  # path -> include directives


@dataclass
class Given:
    entry: Entry
    changed: set[str]  # files whose contents were rewritten since `entry`'s build began
    knowledge: Knowledge | None = None  # what the previous build of this request ended with
    globs: dict | None = None  # its source glob expansions (engine/manifest/globs.py)
    watched: frozenset = frozenset()  # the roots the watcher covered since that build began
    # the knowledge's files the server proved after that build, and those of them an event may
    # have touched since (known_watch.py); None: none proven
    proven: tuple[dict[str, str], set[str]] | None = None
    sandbox: tuple | None = None  # the sandbox settings that build used (engine/sandbox_warm_up.py)


# Set by the server in its own memory just before it forks a build child; the child reads them.
active = False  # in a server's build child: plans are remembered
given: Given | None = None
# Set in the child by the build's planning: the new entry, pickled at once (the build that follows
# must not be able to change what is remembered), or REUSED; the server collects it after the exit.
REUSED = b"reused"
produced: bytes | None = None
# Set in the child at the end of its build: how to make what it learned (engine/unchanged.py),
# called once the client has its answer; handed to the next build of the same request when that
# one reuses the plan.
learned: Callable[[], Knowledge] | None = None
# Handed back instead of the knowledge when it is the one the build was given (a no-op's).
SAME = b"same"
# Set in the child by the build: the sandbox settings it used, so that the next build of the same
# request can start that sandbox before it has read its command line (engine/sandbox_warm_up.py);
# None for a sandbox with no worker to start.
sandbox: tuple | None = None


def likely_work() -> bool:
    """In a build child: whether the build will probably run an action, because the watcher saw
    a file change since the last build of the same request, or there is no such build to go
    by. False outside a server (no watcher to ask)."""
    return active and (given is None or bool(given.changed))


def unchanged(execroot: str) -> Unchanged | None:
    """In a build child whose plan was the given one: what the previous build left, else None."""
    if produced == REUSED and given is not None and given.knowledge is not None:
        return Unchanged(given.knowledge, _touched(execroot), given.proven)
    return None


def _touched(execroot: str) -> set[str]:
    """The files the watcher saw rewritten since the given plan's build began, as actions name
    them: execroot-relative, and absolute (system headers are named so)."""
    out: set[str] = set()
    for path in given.changed if given is not None else ():
        out.update((os.path.relpath(path, execroot), path))
    return out


def edited_first(actions: list, execroot: str, discovered: Callable[[str], tuple]) -> list[str]:
    """The ids of `actions` in plan order, except that in a build child whose plan was given,
    the actions reading a file the watcher saw rewritten come first: the scheduler checks
    actions in this order and starts the first stale one at once, so an edit's compile does not
    wait behind the checks of the units before it."""
    ids = [a.id for a in actions]
    if produced != REUSED or given is None or not given.changed:
        return ids
    changed = _touched(execroot)
    # A source's edit names its compile among the declared inputs (a few per action); only an
    # edited header needs the discovered ones, a hundred system headers per compile (5 ms at
    # 1,000 units, before the edited compile can start).
    readers = [a for a in actions if not changed.isdisjoint(a.inputs)]
    seen: set[str] = set()
    for a in readers:
        seen.update(changed.intersection(a.inputs))
    if all(path in seen or os.path.relpath(path, execroot) in seen for path in given.changed):
        first = [a.id for a in readers]
    else:
        first = [a.id for a in actions
                 if not changed.isdisjoint(a.inputs) or not changed.isdisjoint(discovered(a.id))]
    if not first:
        return ids
    ahead = set(first)
    return first + [i for i in ids if i not in ahead]


def plan(make: Callable[[Callable, Callable | None], object], scan: Callable, includes: Callable | None,
         graph, context: tuple, top: bool = True) -> object:
    """`make(scan, includes)` or the given plan, when it provably equals what `make` would return.
    `context` is everything besides `graph` planning reads; `top` is False for a host tool's
    build inside the build, which is neither remembered nor given."""
    global produced
    if not active or not top:
        return make(scan, includes)
    try:
        context = (graph, *context)
        key = pickle.dumps(context, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - something in the graph does not pickle: plan every time
        return make(scan, includes)
    if given is not None and given.entry.context == key and _scans_hold(given, scan, includes):
        produced = REUSED
        return given.entry.plan
    scanned: dict[str, object] = {}
    included: dict[str, object] = {}

    def recording_scan(path: str, *how):
        # `how`: for a file only a preprocessing scan can answer, how to run one (the unit's
        # flags); the same call answers again whether the file still scans the same
        result = scan(path, *how)
        scanned[path] = (how, result)
        return result

    def recording_includes(path: str):
        included[path] = result = includes(path)
        return result

    result = make(recording_scan, recording_includes if includes is not None else None)
    try:
        produced = pickle.dumps(Entry(result, key, [p.root for p in graph.order], scanned, included), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - a plan that does not pickle is planned again next time
        produced = None
    return result


def _scans_hold(g: Given, scan: Callable, includes: Callable | None) -> bool:
    entry = g.entry
    for path in g.changed:
        try:
            if path in entry.scanned:
                how, facts = entry.scanned[path]
                if scan(path, *how) != facts:
                    return False
            if path in entry.included and (includes is None or includes(path) != entry.included[path]):
                return False
        except Exception:  # noqa: BLE001 - the file no longer scans: plan again, which reports it
            return False
    return True
