"""Which headers of the pool a compile can reach, so a sandbox stages only those.

A compile may read any header of its package and its dependencies (the *pool*); staging the
whole pool into every action would make and remove a hundred links per compile for a hundred
headers, most of the sandbox's cost. This scanner follows
`#include` lines (as Bazel's include scanning does) to a superset of what the preprocessor can
open: every directive counts whatever `#if` surrounds it, and a name is looked up in every
directory the compiler could search, not just the first hit.

Where a superset cannot be proven, it answers None and the caller stages the whole pool: an
include whose name comes from a macro (`#include HEADER`) or a `__has_include` test (staging
less would change which branch the code takes, not just fail).
"""
from __future__ import annotations

import os
import re
from typing import Callable, Protocol

# A directive and what follows it, found from its `#`: a pattern that starts with a literal is
# searched for that byte, where `^[ \t]*#` under re.M is tried at every offset (a 480 KB source,
# 10,000 light units' main.cpp, took ~13 ms; a first build's first compile waited for it). That
# only blanks precede the `#` on its line is checked per match (`parse_includes`).
_DIRECTIVE = re.compile(rb'#[ \t]*(include_next|include|import)\b[ \t]*(.)')
_NAMED = re.compile(rb'#[ \t]*(?:include_next|include|import)\b[ \t]*([<"])([^>"\n]+)[>"]')

Directives = tuple[tuple[str, str], ...]  # ('"' or '<', name)


class Pool(Protocol):
    """The pool by absolute path: an index of the walked pool, or a lookup (pool_lookup.py)."""
    def get(self, path: str, /) -> str | None: ...


def parse_includes(data: bytes) -> Directives | None:
    """The include directives of one file, or None when they cannot all be named statically."""
    if b"__has_include" in data:
        return None
    out = []
    for m in _DIRECTIVE.finditer(data):
        at = m.start()
        if data[data.rfind(b"\n", 0, at) + 1:at].strip(b" \t"):
            continue  # not the first thing on its line: no directive
        if m.group(2) not in (b'"', b"<"):
            return None  # a computed include
        named = _NAMED.match(data, at)
        if named is not None:
            out.append((named.group(1).decode(), named.group(2).decode("utf-8", "replace")))
    return tuple(out)


def reachable(source: str, include_dirs: list[str], pool: Pool,
              directives_of: Callable[[str], Directives | None],
              closures: dict | None = None, candidates: dict | None = None) -> set[str] | None:
    """Pool entries (values of `pool`, keyed by absolute path) that `source` can include,
    transitively; None when the scan cannot bound them.

    `closures` (one dict per pool and search path): what each header reaches, kept for the
    next source. Three hundred sources that include the same few headers then walk those
    headers once, not three hundred times. `candidates` (one dict per search path): the paths
    each directive may name (`_candidates`), kept for the next file with the same directive."""
    if candidates is None:
        candidates = {}
    if closures is not None:
        return _reachable_via(source, include_dirs, pool, directives_of, closures, candidates)
    found: set[str] = set()
    seen: set[str] = set()
    todo = [source]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        directives = directives_of(path)
        if directives is None:
            return None
        here = os.path.dirname(path)
        for kind, name in directives:
            for candidate in _candidates(kind, name, here, include_dirs, candidates):
                rel = pool.get(candidate)
                if rel is not None and rel not in found:
                    found.add(rel)
                    todo.append(candidate)
    return found


def _candidates(kind: str, name: str, here: str, include_dirs: list[str], memo: dict) -> tuple[str, ...]:
    """The paths `#include` `name` may open from a file in `here`: the file's own directory
    first for a quoted name, then each directory searched (made once per directive and
    directory: hundreds of sources name the same headers)."""
    key = (here, name) if kind == '"' else name
    paths = memo.get(key)
    if paths is None:
        dirs = ([here] if kind == '"' else []) + include_dirs
        paths = memo[key] = tuple(os.path.normpath(os.path.join(d, name)) for d in dirs)
    return paths


def _reachable_via(source: str, include_dirs: list[str], pool: Pool,
                   directives_of: Callable[[str], Directives | None], closures: dict,
                   candidates: dict) -> set[str] | None:
    # reach(source) = the pool headers it names directly, and everything each of them reaches
    directives = directives_of(source)
    if directives is None:
        return None
    here = os.path.dirname(source)
    found: set[str] = set()
    for kind, name in directives:
        for candidate in _candidates(kind, name, here, include_dirs, candidates):
            rel = pool.get(candidate)
            if rel is None or rel in found:
                continue
            found.add(rel)
            if candidate not in closures:
                closures[candidate] = reachable(candidate, include_dirs, pool, directives_of, None, candidates)
            more = closures[candidate]
            if more is None:
                return None
            found |= more
    return found
