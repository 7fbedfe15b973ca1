"""`RemoteExecRunner`: `--remote-exec`, the runner that sends actions to remote workers.

It is a `SandboxRunner` (the same staging of inputs, the same local sandbox for what stays
here) whose `run` first offers the action to `cas.remote.execution.RemoteExecutor`. What the
worker answers is a `RunResult` like a local run's: the outputs are already in the execroot
(verified against their digests), stdout/stderr are the worker's in the same portable form, so
the pipeline stores, caches, signs, uploads and reports it exactly as a local run.

What stays local (`remote_ok`):

- rules declared by build programs (`mcpp.action`, including `check` rules that read local
  state): their tools and reads are the project's business, not a worker's;
- everything under a sandbox that does not stage inputs (`--sandbox off`): an action reading the
  real tree has a result that depends on this machine (`TrustPolicy.executes_remotely`);
- actions with tree outputs, and actions whose tools are not system binaries (host tools mcpp
  built under `$MCPP_HOME` or in the project): a worker has neither.

Remote runs hold no local slot, so with remote execution `-j` defaults to 4 x cores; local runs
(what stays here, and everything once remote execution has turned itself off) take one of
`local_jobs` slots, so local work stays at the number of cores.
"""
from __future__ import annotations

import os
import threading
from typing import Callable, Collection, Mapping

from mcpp.cas.action import Action, ActionKind

from ..trust.policy import TrustPolicy
from .action_runner import RunResult, SandboxRunner, expand_trees, prepare_outputs

_REMOTE_KINDS = (ActionKind.COMPILE, ActionKind.ARCHIVE, ActionKind.LINK)
# Where a worker's tools can be: system binaries, the same path on every machine of a pool.
_SYSTEM_TOOLS = ("/usr/", "/bin/", "/sbin/", "/opt/")


class RemoteExecRunner(SandboxRunner):
    def __init__(self, make_sandbox: Callable[[], object], execroot: str, stage: Callable[[str], str],
                 executor, local_jobs: int, policy: TrustPolicy, changed: Collection[str] = (),
                 input_ids: Mapping[str, tuple[int, int]] | None = None, prestages: bool = False) -> None:
        super().__init__(make_sandbox, execroot, stage, input_ids, prestages, changed)
        self.executor = executor  # cas.remote.execution.RemoteExecutor
        self.local_slots = threading.BoundedSemaphore(max(1, local_jobs))
        self.policy = policy

    def remote_ok(self, action: Action) -> bool:
        if action.kind not in _REMOTE_KINDS or not self.policy.executes_remotely(action):
            return False
        if any(o.endswith("/") for o in action.outputs):
            return False
        return all(t.startswith(_SYSTEM_TOOLS) for t in action.tools)

    def run(self, action: Action) -> RunResult:
        if self.remote_ok(action) and not self.executor.disabled:
            prepare_outputs(self.execroot, action)
            inputs = {}
            for rel in expand_trees(self.execroot, dict.fromkeys(action.inputs + action.may_read)):
                try:
                    inputs[rel] = self.stage(rel)
                except FileNotFoundError:  # deleted since the plan was made
                    return RunResult(2, b"", f"error: action `{action.id}`: input `{rel}` does not exist\n".encode())
            res = self.executor.run(action, inputs, self.execroot)
            if res is not None:
                stderr = res.stderr
                if res.timed_out:
                    stderr += f"error: action `{action.id}` timed out after {action.timeout}s\n".encode()
                return RunResult(res.exit_code, res.stdout, stderr, res.duration, res.timed_out, res.worker,
                                 changed=self.changed_among(inputs))
        with self.local_slots:
            return super().run(action)

    def shutdown(self) -> None:
        super().shutdown()
        self.executor.close()


def remote_exec_jobs(jobs: int) -> int:
    """`-j` when executing remotely and none was given: 4 x cores (remote runs hold no core here)."""
    return jobs or 4 * (os.cpu_count() or 1)


def with_remote_execution(runner: SandboxRunner, endpoint, blobs, policy: TrustPolicy,
                          warn: Callable[[str], None], worker_wait: float | None = None) -> RemoteExecRunner:
    """`runner` turned into one that executes remotely through `endpoint` (the build's
    `cas.remote.endpoint.RemoteEndpoint`, shared with its remote cache; `execute` is set);
    `blobs` is the local store, `worker_wait` `MCPP_REMOTE_EXEC_WAIT` (engine/core/settings.py)."""
    from mcpp.cas.remote.execution import RemoteExecutor  # gRPC: only builds that use it load it

    executor = RemoteExecutor(endpoint, blobs, warn, worker_wait)
    return RemoteExecRunner(runner.make_sandbox, runner.execroot, runner.stage, executor, os.cpu_count() or 1,
                            policy, runner.changed, runner.input_ids, runner.prestages)
