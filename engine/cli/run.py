"""`mcpp run`: pick the binary, run it with the user's arguments, return its exit code.

When `[target.<triple>] runner = [...]` applies to this build's target, the binary runs through it
(an emulator, `valgrind`, a wrapper): the artifact takes the place of a `{}` argument, else it is
appended, and the user's arguments follow.
"""
from __future__ import annotations

import os
import signal
import subprocess

from ..build.compose import BuildOutcome
from ..core.errors import McppError
from ..manifest.load import display_path
from ..report.reporter import Reporter


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
    argv = runner_argv(_runner_of(outcome, chosen[0].package), binary, args)
    reporter.status("Running", f"`{' '.join(display_path(a) if a == binary else a for a in argv)}`")
    try:
        proc = subprocess.run(argv)
    except OSError as e:
        raise McppError(f"cannot run `{display_path(argv[0])}`: {e.strerror}")
    code = proc.returncode
    if code < 0:
        # Silence here would leave a crash (an assert, a segfault) looking like a clean run.
        reporter.error(f"error: process didn't exit successfully: `{display_path(binary)}` "
                       f"({_signal_text(-code)})")
        return 128 - code
    return code


def _signal_text(number: int) -> str:
    """Cargo's wording: `signal: 6, SIGABRT`."""
    try:
        return f"signal: {number}, {signal.Signals(number).name}"
    except ValueError:
        return f"signal: {number}"


def _runner_of(outcome: BuildOutcome, package: str) -> tuple[str, ...] | None:
    """The runner of the package that owns the binary, else the workspace root's."""
    for p in outcome.graph.order:
        if p.name == package and p.manifest.runner is not None:
            return p.manifest.runner
    return outcome.graph.root_manifest.runner


def runner_argv(runner: tuple[str, ...] | None, binary: str, args: list[str]) -> list[str]:
    if not runner:
        return [binary, *args]
    if "{}" in runner:
        return [binary if a == "{}" else a for a in runner] + list(args)
    return [*runner, binary, *args]
