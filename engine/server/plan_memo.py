"""A build's plan, reused from the server's memory when nothing it was made from changed.

Planning reads: the package graph (manifests folded for the build's context, with each build
program's result attached), the toolchain, the profile, the directory listings the source globs
walk, and, per source and header, what the module and include scanners found in it. A server
holds the plan of the previous build of the same request (`warm.py`) and learns from its
watcher what changed since that build began. Here, in the build child (`PlanMemo`, held by the
child's `BuildMemory`, child_memory.py), the plan is taken again only when:

- the watcher saw no change to the shape of any package tree (no file created, deleted, renamed
  or re-moded: a glob could see it), only rewritten contents;
- the graph, toolchain identity, profile and target directory are equal to the ones the plan was
  made from (compared by value: the graph is loaded and its programs evaluated on every build);
- every rewritten file the scanners read scans to the same module facts and include directives
  (an edit inside a function body keeps the plan; an edit of an `#include` line does not).

In process (no server) nothing is given and the build simply plans (engine/build/memory.py).
"""
from __future__ import annotations

import json
import os
import pickle
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Mapping

from ..state.unchanged import Knowledge, Unchanged


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
    """What a server gives a build child of the last build of the same request (warm.py)."""
    entry: Entry
    changed: set[str]  # files whose contents were rewritten since `entry`'s build began
    knowledge: Knowledge | None = None  # what the previous build of this request ended with
    globs: dict | None = None  # its source glob expansions (engine/manifest/globs.py)
    watched: frozenset = frozenset()  # the roots the watcher covered since that build began
    # the knowledge's files the server proved after that build, and those of them an event may
    # have touched since (known_watch.py); None: none proven
    proven: tuple[dict[str, str], set[str]] | None = None
    sandbox: tuple | None = None  # the sandbox settings that build used (engine/exec/sandbox_warm_up.py)


# What a build child hands back for its plan when it took the given one, and for its knowledge
# when that is the one it was given (a no-op's): the server holds both already.
REUSED = b"reused"
SAME = b"same"
_NONE_MADE: Mapping[str, str] = MappingProxyType({})


def same_request(request: dict) -> str:
    """A request's key, word for word (engine/cli/request_key.py reads the command line's options)."""
    return json.dumps([request["argv"], request["cwd"], sorted(request["env"].items()), request["umask"]], default=repr)


def likely_work(given: Given | None) -> bool:
    """Whether a build given `given` will probably run an action, because the watcher saw a file
    change since the last build of the same request, or there is no such build to go by."""
    return given is None or bool(given.changed)


class PlanMemo:
    """A build child's plan memory: what the server gave it (`given`; None: no earlier build of
    the same request to go by) and what its planning produced: the new entry, pickled at once
    (the build that follows must not be able to change what is remembered), or REUSED.
    `deferred`: made and pickled when first asked for instead, the context's key too
    (server/bequest.py: an in-process build, given nothing, whose first compile must wait
    neither for the pickling nor for the compilers' answers that reading the context waits
    for; a plan's actions are frozen, and the build sets only its `compile_commands_json`, an
    encoding of what the plan holds)."""

    def __init__(self, given: Given | None, deferred: bool = False) -> None:
        self.given = given
        self.deferred = deferred
        self._produced: bytes | None = None
        # `deferred`: (plan, graph, context, roots, scanned, included), not yet pickled
        self._entry: tuple | None = None

    @property
    def produced(self) -> bytes | None:
        made, self._entry = self._entry, None
        if made is not None:
            result, graph, context, roots, scanned, included = made
            try:
                key = pickle.dumps((graph, *context()), protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # noqa: BLE001 - a context that does not pickle (or answer): nothing kept
                return None
            self._produced = _pickled(Entry(result, key, roots, scanned, included))
        return self._produced

    @produced.setter
    def produced(self, value: bytes | None) -> None:
        self._entry, self._produced = None, value

    def likely_work(self) -> bool:
        return likely_work(self.given)

    def unchanged(self, execroot: str) -> Unchanged | None:
        """When the plan was the given one: what the previous build left, else None."""
        given = self.given
        if self._produced == REUSED and given is not None and given.knowledge is not None:
            return Unchanged(given.knowledge, _touched(given, execroot), given.proven)
        return None

    def edited_first(self, actions: list, execroot: str, discovered: Callable[[str], tuple],
                     made: Mapping[str, str] = _NONE_MADE) -> list[str]:
        """The ids of `actions` in plan order, except that when the plan was given, the actions
        reading a file the watcher saw rewritten come first: the scheduler checks actions in
        this order and starts the first stale one at once, so an edit's compile does not wait
        behind the checks of the units before it. `made`: the plan's outputs (execroot path ->
        the action that writes it, `Plan.made_by`)."""
        ids = [a.id for a in actions]
        given = self.given
        if self._produced != REUSED or given is None or not given.changed:
            return ids
        changed = _touched(given, execroot)
        # A source's edit names its compile among the declared inputs (a few per action); only an
        # edited header needs the discovered ones, a hundred system headers per compile.
        readers = [a for a in actions if not changed.isdisjoint(a.inputs)]
        seen: set[str] = set()
        for a in readers:
            seen.update(changed.intersection(a.inputs))
        # The plan's own outputs are no edit (the last build wrote them: the watcher names them
        # when their events came after that build's hand-off): an action that reads one names it
        # among its declared inputs, and no search of the discovered ones (thirty thousand at
        # 10,000 units, ~25 ms before an edit's compile starts) would find more.
        if all(path in seen or (rel := os.path.relpath(path, execroot)) in seen or rel in made
               for path in given.changed):
            first = [a.id for a in readers]
        else:
            first = [a.id for a in actions
                     if not changed.isdisjoint(a.inputs) or not changed.isdisjoint(discovered(a.id))]
        if not first:
            return ids
        ahead = set(first)
        return first + [i for i in ids if i not in ahead]

    def plan(self, make: Callable[[Callable, Callable | None], object], scan: Callable,
             includes: Callable | None, graph, context: Callable[[], tuple]) -> object:
        """`make(scan, includes)` or the given plan, when it provably equals what `make` would
        return. `context()` is everything besides `graph` planning reads."""
        key = b""
        if not self.deferred:
            read = (graph, *context())  # outside the `try`: a compiler that fails to answer is the build's error
            try:
                key = pickle.dumps(read, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # noqa: BLE001 - something in the graph does not pickle: plan every time
                return make(scan, includes)
            given = self.given
            if given is not None and given.entry.context == key and _scans_hold(given, scan, includes):
                self._produced = REUSED
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
        roots = [p.root for p in graph.order]
        if self.deferred:
            self._entry = (result, graph, context, roots, scanned, included)
        else:
            self._produced = _pickled(Entry(result, key, roots, scanned, included))
        return result


def _pickled(entry: Entry) -> bytes | None:
    try:
        return pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - a plan that does not pickle is planned again next time
        return None


def _touched(given: Given, execroot: str) -> set[str]:
    """The files the watcher saw rewritten since the given plan's build began, as actions name
    them: execroot-relative, and absolute (system headers are named so)."""
    out: set[str] = set()
    for path in given.changed:
        out.update((os.path.relpath(path, execroot), path))
    return out


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
