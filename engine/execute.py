"""The seam where one action is run.

Everything above this (planning, freshness, scheduling) decides *whether* an action runs;
an `ActionRunner` decides *how*. The local runner executes the command directly in the execroot;
the action cache and the sandbox wrap or replace it behind the same `run(action)` call.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Protocol

from cas.action import Action


@dataclass
class RunResult:
    exit_code: int
    stdout: bytes
    stderr: bytes
    duration: float = 0.0
    timed_out: bool = False


class ActionRunner(Protocol):
    def run(self, action: Action) -> RunResult: ...


def prepare_outputs(execroot: str, action: Action) -> None:
    """Remove stale outputs (an archiver would otherwise append to an old archive) and make
    their directories."""
    for out in action.outputs:
        path = os.path.join(execroot, out)
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        os.makedirs(os.path.dirname(path), exist_ok=True)


class LocalRunner:
    """Runs the command in the real execroot: no isolation (what `--sandbox off` means)."""

    def __init__(self, execroot: str):
        self.execroot = execroot

    def run(self, action: Action) -> RunResult:
        prepare_outputs(self.execroot, action)
        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                list(action.argv), cwd=os.path.join(self.execroot, action.cwd), env=dict(action.env),
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                start_new_session=True)
        except OSError as e:
            return RunResult(127, b"", f"error: cannot run `{action.argv[0]}`: {e.strerror}\n".encode())
        try:
            out, err = proc.communicate(timeout=action.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            return RunResult(124, out, err + f"error: timed out after {action.timeout}s\n".encode(),
                             time.monotonic() - start, timed_out=True)
        except BaseException:
            os.killpg(proc.pid, signal.SIGKILL)  # Ctrl-C: never leave a compiler behind
            proc.wait()
            raise
        return RunResult(proc.returncode, out, err, time.monotonic() - start)
