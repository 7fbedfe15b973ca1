"""Version requirements of dependency entries (`version = ">=0.3"`), spelled as Cargo spells them.

A path dependency's `version` is a promise about the package found at the path: checking it
against that package's `[package] version` catches a checkout that moved on (or back) under the
consumer, instead of building against whatever happens to be there.

Grammar: comparators separated by commas, all of which must hold. A comparator is an operator
(`>=`, `>`, `<=`, `<`, `=`, `^`, `~`) and a version of one to three numbers, or `*`. No operator
means `^`, as in Cargo: `0.3` accepts 0.3.x, `1.2` accepts 1.x from 1.2.
"""
from __future__ import annotations

import re
from typing import Callable

from ..core.lazy_re import lazy_compile

_COMPARATOR = lazy_compile(r"^(?P<op>>=|<=|>|<|==?|\^|~)?\s*(?P<ver>\d+(?:\.\d+){0,2})$")

Version = tuple[int, int, int]


def parse(text: str) -> list[Callable[[Version], bool]] | str:
    """The comparators of `text`, or the reason it is not a requirement."""
    out: list[Callable[[Version], bool]] = []
    for part in (p.strip() for p in text.split(",")):
        if part == "*":
            out.append(lambda v: True)
            continue
        m = _COMPARATOR.match(part)
        if m is None:
            return (f"`{part}` is not a version requirement (write e.g. `0.3`, `^1.2`, `~1.2.3`, `>=0.3, <0.5`, "
                    f"`=1.0.0` or `*`)")
        out.append(_comparator(m["op"] or "^", m["ver"]))
    return out


def _comparator(op: str, ver: str) -> Callable[[Version], bool]:
    parts = [int(x) for x in ver.split(".")]
    given = len(parts)
    low: Version = tuple(parts + [0] * (3 - given))  # type: ignore[assignment]
    if op in ("=", "=="):
        # `=1.2` pins the numbers written, any later ones free.
        return lambda v: v[:given] == low[:given]
    if op == ">=":
        return lambda v: v >= low
    if op == ">":
        return lambda v: v[:given] > low[:given]
    if op == "<=":
        return lambda v: v[:given] <= low[:given]
    if op == "<":
        return lambda v: v < low
    if op == "~":
        high = (low[0] + 1, 0, 0) if given == 1 else (low[0], low[1] + 1, 0)
        return lambda v: low <= v < high
    # `^`: the leftmost non-zero number written may not change.
    if low[0] > 0 or given == 1:
        high = (low[0] + 1, 0, 0)
    elif low[1] > 0 or given == 2:
        high = (0, low[1] + 1, 0)
    else:
        high = (0, 0, low[2] + 1)
    return lambda v: low <= v < high


def version_of(text: str) -> Version | None:
    """`1.2.3` (pre-release and build parts ignored), or None when it is not numeric."""
    m = re.match(r"^(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:[-+].*)?$", text.strip())
    if m is None:
        return None
    return tuple(int(g or 0) for g in m.groups())  # type: ignore[return-value]


def satisfies(version: str, requirement: str) -> bool:
    """Whether `version` meets `requirement` (both already validated)."""
    comparators = parse(requirement)
    v = version_of(version)
    return not isinstance(comparators, str) and v is not None and all(c(v) for c in comparators)
