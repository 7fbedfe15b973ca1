"""One payload as resolution chose it (resolve.py); built only by a build that declares one."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ResolvedPayload:
    namespace: str
    name: str
    version: str
    axis: str  # the winning declaration's: "host" | "target"
    source: str  # "archive" | "dir" | "system"
    directory: str  # "" when not installed (`mcpp payload list` without fetching)
    declared_by: str  # the package whose declaration won
    declared_at: str  # file:line:col of that declaration
    why: str
    bins: tuple[str, ...]  # relative to directory
    index: str
    probed: bool = True  # False: a `system` root this command did not probe (listing runs no probe)

    @property
    def address(self) -> str:
        return f"{self.namespace}:{self.name}"

    def to_json(self) -> dict:
        out = {"id": self.address, "version": self.version, "axis": self.axis, "source": self.source,
               "directory": self.directory or None, "declared_by": self.declared_by,
               "declared_at": self.declared_at, "why": self.why, "bins": list(self.bins), "index": self.index}
        if self.source == "system":
            out["probed"] = self.probed
        return out

    def where(self) -> str:
        """The installed directory, or why there is none yet (for listings)."""
        if self.directory:
            return self.directory
        return "not probed yet (a build or `mcpp payload fetch` probes it)" if not self.probed else "not installed"
