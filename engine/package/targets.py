"""Which targets a package links: what the planner plans and what a host tool dependency may name."""
from __future__ import annotations

import os

from ..manifest.model import TargetSpec
from .model import Package


def targets_of(pkg: Package) -> list[TargetSpec]:
    """The package's targets: `[targets.*]` as written, else `src/main.cpp` as a binary named
    after the package."""
    m = pkg.manifest
    if m.explicit_targets:
        return list(m.targets)
    targets = []
    if os.path.isfile(os.path.join(m.root, "src", "main.cpp")):
        targets.append(TargetSpec(m.name, "bin", "src/main.cpp"))
    return targets
