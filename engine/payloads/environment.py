"""What a build's payload resolution answers (`Environment`) and whether a graph declares any
payload at all: apart from the resolver (resolve.py), so that a build that declares none imports
neither the resolver nor what it needs."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .resolved import ResolvedPayload


def specs_of(manifest, features) -> list:
    """The payload declarations (`PayloadSpec`) `manifest` makes with `features` active."""
    out = list(manifest.xlings.deps) + list(manifest.xlings.workspace)
    for f in sorted(features):
        out += list(manifest.feature_xlings.get(f, ()))
    return out


def declares_any(graph) -> bool:
    """Whether a package of `graph` declares a payload (what decides that the resolver runs)."""
    return any(specs_of(pkg.manifest, pkg.features) for pkg in graph.order)


@dataclass
class Environment:
    """The payloads a build resolved and the notes to show about them."""
    payloads: list[ResolvedPayload] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # What resolution read besides the manifests and $MCPP_HOME/config.toml, for the no-op
    # record (engine/state/noop.py): the index files consulted (found or not) and the probes of
    # adopted installations; `read_remote`: it read an index over the network as well.
    read: list[str] = field(default_factory=list)
    read_remote: bool = False

    def roots(self) -> tuple[str, ...]:
        """The installed directories (and where they really are), for the sandbox to show read-only."""
        out: dict[str, None] = {}
        for p in self.payloads:
            if p.directory:
                out.setdefault(p.directory, None)
                out.setdefault(os.path.realpath(p.directory), None)
        return tuple(out)

    def to_json(self) -> dict:
        return {"payloads": [p.to_json() for p in self.payloads]}
