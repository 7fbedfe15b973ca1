"""Every payload declaration that applies to one build, with how near it is to the artifact.

A package's declarations are its `[xlings] deps`, `[xlings.workspace]` and the
`[feature-xlings.<f>]` tables of its active features, from the manifest as folded for this build
(so `[target.<selector>...]` entries that apply are already in, marked with their axis, and gates
of inactive features are already out). Distance is counted along dependency edges from the
packages the command builds: the project is 0, its dependencies 1, theirs 2; nearer wins.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from . import version as versions
from .environment import specs_of
from ..core.errors import ManifestError, Position
from ..manifest.model import Manifest, PayloadSpec


@dataclass(frozen=True)
class Declaration:
    spec: PayloadSpec
    package: str
    manifest: Manifest
    depth: int
    requirement: versions.Requirement

    @property
    def identity(self) -> tuple[str, str]:
        return self.spec.identity

    @property
    def position(self) -> Position:
        return self.manifest.source_position(*self.spec.keypath, prefer="key")

    def describe(self) -> str:
        """`"xim:gen" = ">=2.0"` (package `app`, mcpp.toml:7:1)."""
        version = f" = \"{self.spec.version}\"" if self.spec.version else " (any version)"
        return f"`{self.spec.address}`{version} in package `{self.package}` ({self.position})"


def distances(graph) -> dict:
    """Package -> its distance from the packages this command builds."""
    depth: dict = {}
    queue = deque()
    for m in graph.members:
        depth[m] = 0
        queue.append(m)
    while queue:
        pkg = queue.popleft()
        for nxt in [p for _, p in pkg.edges] + list(pkg.deps) + list(pkg.dev_deps):
            if nxt not in depth:
                depth[nxt] = depth[pkg] + 1
                queue.append(nxt)
    return depth


def collect(graph) -> list[Declaration]:
    depth = distances(graph)
    far = max(depth.values(), default=0) + 1
    out = []
    for pkg in graph.order:
        m = pkg.manifest
        for spec in specs_of(m, pkg.features):
            req = versions.parse(spec.version)
            if isinstance(req, str):
                raise ManifestError(f"payload `{spec.address}`: {req}",
                                    m.source_position(*spec.keypath, prefer="value"))
            out.append(Declaration(spec, pkg.name, m, depth.get(pkg, far), req))
    return out
