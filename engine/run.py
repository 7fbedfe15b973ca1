"""`mcpp run`: pick the binary, run it with the user's arguments, return its exit code."""
from __future__ import annotations

import os
import subprocess

from .build import BuildOutcome
from .errors import McppError
from .manifest.load import display_path
from .report import Reporter


def run_binary(outcome: BuildOutcome, name: str | None, args: list[str], reporter: Reporter) -> int:
    members = {p.name for p in outcome.graph.members}
    bins = [a for a in outcome.plan.artifacts if a.kind == "bin" and a.package in members]
    if name is not None:
        chosen = [a for a in bins if a.name == name]
        if not chosen:
            known = ", ".join(sorted(a.name for a in bins)) or "none"
            raise McppError(f"no binary named `{name}`; available binaries: {known}")
    else:
        chosen = bins
        if not chosen:
            raise McppError("a bin target must be available for `mcpp run`; this package builds no binary")
        if len(chosen) > 1:
            raise McppError("`mcpp run` could not determine which binary to run; pass one of: "
                            + ", ".join(sorted(a.name for a in chosen)))
    binary = os.path.join(outcome.plan.execroot, chosen[0].path)
    reporter.status("Running", f"`{' '.join([display_path(binary), *args])}`")
    try:
        proc = subprocess.run([binary, *args])
    except OSError as e:
        raise McppError(f"cannot run `{display_path(binary)}`: {e.strerror}")
    code = proc.returncode
    return 128 - code if code < 0 else code
