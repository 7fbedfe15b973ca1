"""One package, one version: which declaration decides, and whether the others accept it.

Two steps, per identity `(namespace, name)`:

1. Arbitration: the declaration nearer the artifact wins (the project over its dependencies;
   within one manifest the target axis, the more specific statement). A declaration without a
   version abstains: it says "this package" and not "which release". When all abstain the
   nearest bare address stands.
2. Validation: the winner must satisfy every losing *requirement* (`>=`, `^`, `~`, `<`, commas).
   A bare version is a *selection*, not a requirement: two different exact pins are two
   selections, the nearer wins and the user is told. An exact pin that fails a requirement is
   refused, naming both declarations and the way out. Ranges are not searched for a
   compromise beyond intersecting them against the index (resolve.py): picking the version is
   arbitration's job, so a combination a solver might have satisfied can be refused, and the
   message says what to change.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .declarations import Declaration
from .errors import PayloadError


@dataclass
class Choice:
    identity: tuple[str, str]
    winner: Declaration
    declarations: list[Declaration]
    requirements: list[Declaration] = field(default_factory=list)  # every range the version must meet
    why: str = ""
    notes: list[str] = field(default_factory=list)  # what to report (an overridden pin)

    @property
    def address(self) -> str:
        return f"{self.identity[0]}:{self.identity[1]}"


def _rank(d: Declaration) -> tuple:
    return d.depth, 0 if d.spec.axis == "target" else 1


def arbitrate(declarations: list[Declaration]) -> list[Choice]:
    by_identity: dict[tuple[str, str], list[Declaration]] = {}
    for d in declarations:
        by_identity.setdefault(d.identity, []).append(d)
    return [_choose(ident, sorted(decls, key=_rank)) for ident, decls in by_identity.items()]


def _choose(ident: tuple[str, str], decls: list[Declaration]) -> Choice:
    versioned = [d for d in decls if d.requirement.kind != "any"]
    winner = versioned[0] if versioned else decls[0]
    choice = Choice(ident, winner, decls)
    others = [d for d in decls if d is not winner]
    if len(decls) == 1:
        choice.why = "the only declaration"
    elif not versioned:
        choice.why = "no declaration names a version"
    elif winner.depth < min((d.depth for d in others), default=winner.depth + 1):
        choice.why = "nearest to the artifact (the project over its dependencies)"
    elif winner.spec.axis == "target" and any(d.spec.axis == "host" for d in others):
        choice.why = "the target-axis declaration, the more specific statement"
    else:
        choice.why = "the first versioned declaration"
    choice.requirements = [d for d in versioned if d.requirement.kind == "range"]
    if winner.requirement.kind != "pin":
        return choice
    for loser in versioned[1:]:
        if loser.requirement.kind == "pin":
            if loser.requirement.allows(winner.spec.version):
                continue
            which = ("the nearer one" if _rank(winner) < _rank(loser) else
                     "both are as near to the artifact, so the first declared one")
            choice.notes.append(f"`{choice.address}`: {winner.describe()} and {loser.describe()} pin different "
                                f"versions; {which}, {winner.spec.version}, is used")
        elif not loser.requirement.allows(winner.spec.version):
            raise PayloadError(
                f"`{choice.address}` is pinned to {winner.spec.version}, which does not satisfy a requirement of "
                f"the same package: {winner.describe()} wins by arbitration (nearer to the artifact), but "
                f"{loser.describe()} requires `{loser.spec.version}`",
                winner.position,
                [f"note: required here: {loser.position}",
                 f"help: pin a version that satisfies `{loser.spec.version}` in {winner.position.path} (or "
                 f"write a requirement such as `{loser.spec.version}` instead of a pin); one build installs one "
                 f"version of a package"])
    return choice
