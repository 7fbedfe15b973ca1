"""`mcpp run`: pick the binary, run it with the user's arguments, return its exit code.

When `[target.<triple>] runner = [...]` applies to this build's target, the binary runs through it
(an emulator, `valgrind`, a wrapper): the artifact takes the place of a `{}` argument, else it is
appended, and the user's arguments follow. A cross build's binaries (`--target` another machine)
run only through a runner (`qemu-aarch64`): without one, or with one that is not installed, the
command stops with an error at the key before running anything. `mcpp test` runs its test
binaries the same way.

`mcpp run` stands for the program it runs: SIGINT, SIGTERM and SIGHUP sent to `mcpp` are passed on
to the program, once, and `mcpp run` exits with the program's status: its own exit code when it
exits (a program that handles Ctrl-C and exits 42 makes `mcpp run` exit 42), 128 + the signal's
number when a signal kills it. A signal the terminal sends to its foreground process group (Ctrl-C,
a hang-up) already reaches the program when `mcpp` runs in that group, and is not sent again.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess

from ..build.compose import BuildOutcome
from ..core import interrupt
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
    argv = runner_argv(target_runner(outcome, chosen[0].package), binary, args)
    reporter.status("Running", f"`{' '.join(display_path(a) if a == binary else a for a in argv)}`")
    received: list[int] = []
    code = _run_forwarding(argv, received)
    if code < 0:
        if -code not in received:  # a signal the user sent is no news to them
            # Silence here would leave a crash (an assert, a segfault) looking like a clean run.
            reporter.error(f"error: process didn't exit successfully: `{display_path(binary)}` "
                           f"({_signal_text(-code)})")
        return 128 - code
    return code


def _run_forwarding(argv: list[str], received: list[int]) -> int:
    """Run `argv` to its end, passing on the signals `mcpp` is sent meanwhile (each is added to
    `received`); its return code (-N: killed by signal N)."""
    running: list[subprocess.Popen] = []
    pending: list[int] = []  # received before the program had a pid

    def pass_on(signum: int) -> None:
        if not _terminal_reaches_program(signum):
            try:
                os.kill(running[0].pid, signum)
            except ProcessLookupError:
                pass

    def forward(signum, _frame):
        received.append(signum)
        if running:
            pass_on(signum)
        else:
            pending.append(signum)

    previous = {s: signal.signal(s, forward) for s in interrupt.HANDLED if signal.getsignal(s) != signal.SIG_IGN}
    try:
        try:
            running.append(subprocess.Popen(argv))
        except OSError as e:
            if received:  # told to stop before the program could start
                raise interrupt.Interrupted(received[0]) from None
            raise McppError(f"cannot run `{display_path(argv[0])}`: {e.strerror}")
        while pending:
            pass_on(pending.pop(0))
        return running[0].wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _terminal_reaches_program(signum: int) -> bool:
    """Whether the terminal sent `signum` to the program itself: Ctrl-C and a hang-up go to the
    terminal's foreground process group, which the program shares when `mcpp`'s is that group."""
    if signum == signal.SIGTERM:
        return False
    group = os.getpgrp()
    for fd in (0, 1, 2):
        try:
            if os.tcgetpgrp(fd) == group:
                return True
        except OSError:  # not a terminal, or not this process's controlling one
            continue
    return False


def _signal_text(number: int) -> str:
    """Cargo's wording: `signal: 6, SIGABRT`."""
    try:
        return f"signal: {number}, {signal.Signals(number).name}"
    except ValueError:
        return f"signal: {number}"


def target_runner(outcome: BuildOutcome, package: str) -> tuple[str, ...] | None:
    """The runner of the package that owns the binary, else the workspace root's; checked to be
    installed. A cross build without one is an error naming the key to set."""
    manifest = next((p.manifest for p in outcome.graph.order if p.name == package and p.manifest.runner is not None),
                    outcome.graph.root_manifest)
    runner, ctx = manifest.runner, outcome.graph.context
    if runner is None:
        if ctx is not None and ctx.cross:
            raise McppError(
                f"the binaries of `{ctx.target.text}` do not run on this machine (`{ctx.host.text}`) and no "
                f"runner is set: set [target.{ctx.target.text}] runner in {display_path(manifest.path)}",
                notes=[f"help: e.g. [target.{ctx.target.text}] runner = "
                       f"[\"qemu-{ctx.target.arch}\", \"-L\", \"/usr/{ctx.target.text}\"]"])
        return None
    program = runner[0]
    found = os.access(program, os.X_OK) if os.sep in program else shutil.which(program) is not None
    if not found:
        where = "" if os.sep in program else " on PATH"
        hint = " (Debian: apt-get install qemu-user)" if os.path.basename(program).startswith("qemu-") else ""
        raise McppError(f"the runner `{program}` of [target.{ctx.target.text if ctx else 'TRIPLE'}] runner was not "
                        f"found{where}{hint}", manifest.position("target", "runner"))
    return runner


def runner_argv(runner: tuple[str, ...] | None, binary: str, args: list[str]) -> list[str]:
    if not runner:
        return [binary, *args]
    if "{}" in runner:
        return [binary if a == "{}" else a for a in runner] + list(args)
    return [*runner, binary, *args]
