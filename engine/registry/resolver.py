"""Choosing one version of each index package for the whole graph (SPEC-004 §4.5: one version
per package per build).

Each package gets the highest version that meets every requirement written on it, by the
workspace's manifests and by the chosen versions of other packages; a version kept by the lock
(`preferred`) wins whenever it still meets them all, so a new release never moves a locked
build. Choosing a version can add requirements (its own dependencies) and so change another
choice: the choice is repeated until nothing changes. A package no version satisfies is refused
naming every requirer, what it asks and the versions the index has. A yanked release is chosen
only where the lock already holds it.

A conflict whose requirers include a chosen release of the index is not final: that release is
set aside and the choice made again (the requirer's next lower version may ask for less), depth
first, within `MAX_ATTEMPTS`; only when every such retreat fails is the first conflict reported.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..manifest import version_req
from .errors import RegistryError
from .requirements import Requirement

# Rounds of re-choosing before giving up: each round either settles or moves some choice, and a
# real graph settles in a few.
MAX_ROUNDS = 100
# Resolutions tried, set-aside releases included, before the first conflict found is reported.
MAX_ATTEMPTS = 200

Package = tuple[str, str]


@dataclass(frozen=True)
class Candidate:
    version: str
    yanked: bool = False


class Universe(Protocol):
    def versions(self, package: Package) -> list[Candidate]:
        """Every release of `package` the index has (reads the index)."""

    def requirements(self, package: Package, version: str) -> tuple[Requirement, ...]:
        """What that release's manifest requires of the index (fetches the release)."""


def version_order(version: str) -> tuple:
    """Versions sorted by their numbers (one that has none first), then by their text."""
    return version_req.version_of(version) or (-1, -1, -1), version


def _meets(version: str, reqs: list[Requirement]) -> bool:
    return all(version_req.satisfies(version, r.requirement) for r in reqs)


class _Conflict(Exception):
    def __init__(self, error: RegistryError, reqs: list[Requirement]):
        super().__init__(error.message)
        self.error, self.reqs = error, reqs


def resolve(roots: list[Requirement], universe: Universe, preferred: dict[Package, str]) -> dict[Package, str]:
    """The version of every package reached from `roots`."""
    attempts = [0]
    first: list[_Conflict] = []

    def attempt(excluded: frozenset[tuple[Package, str]]) -> dict[Package, str] | None:
        attempts[0] += 1
        try:
            return _resolve(roots, universe, preferred, excluded)
        except _Conflict as c:
            if not first:
                first.append(c)
            for r in c.reqs:
                if r.origin is None or attempts[0] >= MAX_ATTEMPTS:
                    continue
                ns, name, version = r.origin
                if ((ns, name), version) not in excluded:
                    found = attempt(excluded | {((ns, name), version)})
                    if found is not None:
                        return found
            return None

    found = attempt(frozenset())
    if found is None:
        raise first[0].error
    return found


def _resolve(roots: list[Requirement], universe: Universe, preferred: dict[Package, str],
             excluded: frozenset[tuple[Package, str]]) -> dict[Package, str]:
    chosen: dict[Package, str] = {}
    for _ in range(MAX_ROUNDS):
        wanted: dict[Package, list[Requirement]] = {}
        queue = list(roots)
        while queue:
            r = queue.pop()
            first = r.package not in wanted
            wanted.setdefault(r.package, []).append(r)
            if first and r.package in chosen:
                queue += universe.requirements(r.package, chosen[r.package])
        # A package reached only through a choice made this round is asked about next round.
        new = {package: _choose(package, reqs, universe, preferred.get(package), excluded)
               for package, reqs in wanted.items()}
        if new == chosen:
            return chosen
        chosen = new
    raise RegistryError("the index's requirements do not settle on one version of each package",
                        notes=[f"note: still moving: {', '.join(f'{ns}.{n} {v}' for (ns, n), v in sorted(chosen.items()))}"])


def _choose(package: Package, reqs: list[Requirement], universe: Universe, preferred: str | None,
            excluded: frozenset[tuple[Package, str]]) -> str:
    if preferred is not None and (package, preferred) not in excluded and _meets(preferred, reqs):
        return preferred
    candidates = sorted(universe.versions(package), key=lambda c: version_order(c.version), reverse=True)
    for c in candidates:
        if not c.yanked and (package, c.version) not in excluded and _meets(c.version, reqs):
            return c.version
    ns, name = package
    listed = ", ".join(c.version + (" (yanked)" if c.yanked else "") for c in reversed(candidates)) or "none"
    asked = [f"note: {r.requirer} requires `{ns}.{name}` `{r.requirement}`" + (f" ({r.pos})" if r.pos else "")
             for r in reqs]
    if not candidates:
        raise _Conflict(RegistryError(f"no package `{ns}.{name}` in the library index", reqs[0].pos,
                                      notes=asked[1:] or None), reqs)
    single = len(reqs) == 1
    raise _Conflict(RegistryError(
        f"no version of `{ns}.{name}` meets {'the requirement' if single else 'every requirement'} "
        f"({'; '.join(f'{r.requirer}: `{r.requirement}`' for r in reqs)})",
        reqs[0].pos if single else None, notes=asked + [f"note: the index has {listed}"]), reqs)
