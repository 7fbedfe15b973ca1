"""Which headers of the pool a compile can reach, so a sandbox stages only those.

A compile may read any header of its package and its dependencies (the *pool*), and the
sandboxes used to stage the whole pool into every action: with a hundred headers that is a
hundred links made and removed per compile, most of the sandbox's cost. This scanner follows
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
from typing import Callable

_DIRECTIVE = re.compile(rb'^[ \t]*#[ \t]*(include_next|include|import)\b[ \t]*(.)', re.M)
_NAMED = re.compile(rb'^[ \t]*#[ \t]*(?:include_next|include|import)\b[ \t]*([<"])([^>"\n]+)[>"]', re.M)

Directives = tuple[tuple[str, str], ...]  # ('"' or '<', name)


def parse_includes(data: bytes) -> Directives | None:
    """The include directives of one file, or None when they cannot all be named statically."""
    if b"__has_include" in data:
        return None
    for m in _DIRECTIVE.finditer(data):
        if m.group(2) not in (b'"', b"<"):
            return None  # a computed include
    return tuple((m.group(1).decode(), m.group(2).decode("utf-8", "replace")) for m in _NAMED.finditer(data))


def reachable(source: str, include_dirs: list[str], pool: dict[str, str],
              directives_of: Callable[[str], Directives | None]) -> set[str] | None:
    """Pool entries (values of `pool`, keyed by absolute path) that `source` can include,
    transitively; None when the scan cannot bound them."""
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
            dirs = ([here] if kind == '"' else []) + include_dirs
            for d in dirs:
                candidate = os.path.normpath(os.path.join(d, name))
                rel = pool.get(candidate)
                if rel is not None and rel not in found:
                    found.add(rel)
                    todo.append(candidate)
    return found
