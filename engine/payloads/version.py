"""Payload versions and the requirements a declaration states on them.

A payload declaration's version is one of three things, and they play different parts when two
declarations of one package meet (arbitrate.py):

- `""`: any version; the declaration says "I need this package" and abstains on which release;
- a bare version (`2.0.0`): a *selection*, an exact pin;
- an operator form (`>=2026.1`, `^1.2`, `~1.2.3`, `<3`, or a comma combination): a *requirement*
  every chosen release must satisfy.

Versions are compared as tuples of numbers of any length (payload releases are often dated,
`2026.9.6.4`, or have four parts), so the three-number Cargo parser of dependency entries is
not reused here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

_NUMBERS = re.compile(r"^\d+(?:\.\d+)*$")
_COMPARATOR = re.compile(r"^(?P<op>>=|<=|>|<|==?|\^|~)\s*(?P<ver>\d+(?:\.\d+)*)$")


def key(version: str) -> tuple[int, ...]:
    """A sortable key: the leading numbers of `version` (`13.0.88` -> (13, 0, 88))."""
    m = re.match(r"^(\d+(?:\.\d+)*)", version.strip())
    return tuple(int(x) for x in m.group(1).split(".")) if m else ()


def _pad(a: tuple[int, ...], n: int) -> tuple[int, ...]:
    return a + (0,) * (n - len(a))


def compare(a: str, b: str) -> int:
    ka, kb = key(a), key(b)
    n = max(len(ka), len(kb))
    ka, kb = _pad(ka, n), _pad(kb, n)
    return (ka > kb) - (ka < kb)


@dataclass(frozen=True)
class Requirement:
    text: str  # as written; "" for any
    kind: str  # "any" | "pin" | "range"
    tests: tuple[Callable[[tuple[int, ...]], bool], ...] = ()

    def allows(self, version: str) -> bool:
        if self.kind == "any":
            return True
        if self.kind == "pin":
            return compare(version, self.text) == 0
        v = key(version)
        return bool(v) and all(t(v) for t in self.tests)


def parse(text: str) -> Requirement | str:
    """The requirement `text` states, or the reason it is not one."""
    text = text.strip()
    if text in ("", "*"):
        return Requirement(text, "any")
    if _NUMBERS.match(text):
        return Requirement(text, "pin")
    tests = []
    for part in (p.strip() for p in text.split(",")):
        m = _COMPARATOR.match(part)
        if m is None:
            return (f"`{part}` is not a payload version (write an exact version `2.0.0`, or a requirement "
                    f"`>=2026.1`, `^1.2`, `~1.2.3`, `>=1.0, <2`)")
        tests.append(_comparator(m["op"], m["ver"]))
    return Requirement(text, "range", tuple(tests))


def _comparator(op: str, ver: str) -> Callable[[tuple[int, ...]], bool]:
    low = tuple(int(x) for x in ver.split("."))
    given = len(low)

    def cmp(v: tuple[int, ...]) -> int:
        n = max(len(v), given)
        a, b = _pad(v, n), _pad(low, n)
        return (a > b) - (a < b)

    if op in ("=", "=="):
        return lambda v: _pad(v, given)[:given] == low
    if op == ">=":
        return lambda v: cmp(v) >= 0
    if op == ">":
        return lambda v: cmp(v) > 0
    if op == "<=":
        return lambda v: cmp(v) <= 0
    if op == "<":
        return lambda v: cmp(v) < 0
    if op == "~":  # as Cargo: `~1.2.3` and `~1.2` keep 1.2, `~1` keeps the major
        fixed = min(given, 2)
        return lambda v: cmp(v) >= 0 and _pad(v, fixed)[:fixed] == low[:fixed]
    # `^`: the leftmost non-zero number written may not change
    fixed = next((i + 1 for i, x in enumerate(low) if x != 0), given)
    return lambda v: cmp(v) >= 0 and _pad(v, fixed)[:fixed] == low[:fixed]


def highest(versions: list[str], requirement: Requirement) -> str | None:
    """The highest of `versions` that `requirement` allows."""
    ok = [v for v in versions if requirement.allows(v)]
    return max(ok, key=lambda v: _pad(key(v), 8)) if ok else None
