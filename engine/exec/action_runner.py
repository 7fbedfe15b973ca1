"""The seam where one action is run.

Everything above this (planning, freshness, caching, scheduling) decides *whether* an action
runs; an `ActionRunner` decides *how*. `SandboxRunner` runs it through one of the sandboxes
(`--sandbox bwrap|dir|off`); tests may pass any object with the same `run(action)`.
"""
from __future__ import annotations

import functools
import os
import threading
import time
from dataclasses import dataclass
from typing import Callable, Collection, Mapping, Protocol

from mcpp.cas.action import Action
from mcpp.sandbox import SandboxSpec, SandboxSpecError

from .action_output import portable
from .discard import Discard, delete


@dataclass
class RunResult:
    """How an action's run ended: its exit status and what it printed."""
    exit_code: int
    stdout: bytes
    stderr: bytes
    duration: float = 0.0
    timed_out: bool = False
    worker: str = ""  # the remote worker that ran it (`--remote-exec`); "" for a local run
    # the depfile's dependencies as the sandbox's check parsed them (`SandboxResult.deps`); None:
    # the pipeline reads the depfile itself
    deps: list[str] | None = None
    # inputs staged with other bytes than the build hashed them to (saved during the build,
    # engine/exec/staging.py): the run is not the one its key names and is not cached
    changed: tuple[str, ...] = ()


class ActionRunner(Protocol):
    def run(self, action: Action) -> RunResult: ...


def prepare_outputs(execroot: str, action: Action, discard: Discard | None = None) -> None:
    """Remove stale outputs (an archiver would otherwise append to an old archive) and make
    their directories: one `stat` per distinct directory when it exists (the common case; a
    compile's object and depfile share one), where `makedirs` would take three syscalls per
    output. With `discard`, a stale output is moved aside and deleted while the action runs
    (engine/exec/discard.py: a large binary's unlink is milliseconds)."""
    seen: set[str] = set()
    for out in action.outputs:
        path = os.path.join(execroot, out)
        if discard is not None:
            discard.take(path)
        else:
            delete(path)  # a directory an earlier run made instead of the file goes too
        parent = os.path.dirname(path)
        if parent not in seen:
            seen.add(parent)
            if not os.path.isdir(parent):
                os.makedirs(parent, exist_ok=True)


def expand_trees(execroot: str, rels):
    """A tree input (`gen/docs/`, a directory an earlier action produced) is staged file by file;
    a symlink inside it (which cas/tree.py keeps inside the tree) arrives as a copy of its target."""
    for rel in rels:
        if not rel.endswith("/"):
            yield rel
            continue
        top = os.path.join(execroot, rel)
        for dirpath, _dirs, files in os.walk(top):
            for name in sorted(files):
                yield os.path.relpath(os.path.join(dirpath, name), execroot)


class SandboxRunner:
    """Runs actions through a `sandbox.Sandbox` (bwrap, dir or off).

    Inputs reach bwrap and dir sandboxes as hard links to the store's materialization area
    (`stage(rel) -> local file`), never as links into the real tree, so an action can neither
    see nor write a file it did not declare. Declared outputs are moved into the execroot
    (`target/...`), where the pipeline stores them.
    """

    def __init__(self, make_sandbox: Callable[[], object], execroot: str, stage: Callable[[str], str],
                 input_ids: Mapping[str, tuple[int, int]] | None = None, prestages: bool = False,
                 changed: Collection[str] = (), discard: Discard | None = None):
        self.make_sandbox = make_sandbox
        self._sandbox = None
        self._lock = threading.Lock()
        self.execroot = execroot
        self.stage = stage
        # the staged files' identities `stage` saw (`SandboxSpec.input_ids`), filled as it stages
        self.input_ids = input_ids
        # whether `prestage` resolves anything: the sandbox the build uses stages inputs
        self.prestages = prestages
        # the inputs `stage` found changed since they were hashed, filled as it stages
        self.changed = changed
        self.discard = discard  # where stale outputs go, deleted while the action runs
        # told (with the action's id) when an action's process is about to start, its inputs
        # staged (`SandboxSpec.started`); set by the pipeline
        self.on_started: Callable[[str], None] | None = None

    @property
    def sandbox(self):
        """Created on first use: a no-op build never probes bwrap."""
        with self._lock:
            if self._sandbox is None:
                self._sandbox = self.make_sandbox()
            return self._sandbox

    def prestage(self, rels: list[str]) -> None:
        """Resolve ahead, through `stage`, inputs an action will stage later (outputs of fresh
        actions, final for this build), while the scheduler thread would otherwise wait: a link
        waiting on one edited compile then stages only that compile's object. Nothing is done
        where the sandbox does not stage inputs (`--sandbox off`: `prestages`). A file that
        cannot be resolved now is left for `run`, which reports it."""
        if not self.prestages:
            return
        for rel in rels:
            try:
                self.stage(rel)
            except Exception:  # noqa: BLE001 - `run` stages it again and reports what is wrong
                continue

    def changed_among(self, staged: Mapping[str, str]) -> tuple[str, ...]:
        """Those of an action's staged inputs found saved anew since they were hashed (`RunResult.changed`)."""
        return tuple(rel for rel in staged if rel in self.changed) if self.changed else ()

    def settle(self) -> None:
        """Once the last action ran: wait until the stale outputs moved aside are deleted (done
        while the actions ran), so that nothing of the build touches target/ after its answer."""
        if self.discard is not None:
            self.discard.close()

    def shutdown(self) -> None:
        if self._sandbox is not None:
            self._sandbox.shutdown()
        self.settle()

    def run(self, action: Action) -> RunResult:
        sandbox = self.sandbox
        staged = sandbox.guarantees.stages_inputs
        prepare_outputs(self.execroot, action, self.discard)
        inputs = {}
        if staged:
            for rel in expand_trees(self.execroot, dict.fromkeys(action.inputs + action.may_read)):
                try:
                    inputs[rel] = self.stage(rel)
                except FileNotFoundError:  # deleted since the plan was made
                    return RunResult(2, b"", f"error: action `{action.id}`: input `{rel}` does not exist\n".encode())
        spec = SandboxSpec(
            argv=action.argv, env=dict(action.env), inputs=inputs, tools=action.tools,
            outputs=action.outputs, cwd=action.cwd, timeout=action.timeout, label=action.id,
            depfile=action.depfile, root=self.execroot, out_dir=self.execroot if staged else None,
            prepared_tree=True,  # the next build runs this action again, mostly on the same inputs
            input_ids=self.input_ids if staged else None,
            started=functools.partial(self.on_started, action.id) if self.on_started is not None else None)
        changed = self.changed_among(inputs)
        start = time.monotonic()
        try:
            res = sandbox.run(spec)
        except SandboxSpecError as e:
            return RunResult(2, b"", f"error: action `{action.id}`: {e}\n".encode())
        stdout, stderr = portable(res.stdout, res.root_seen), portable(res.stderr, res.root_seen)
        if res.timed_out:
            stderr += f"error: action `{action.id}` timed out after {action.timeout}s\n".encode()
        return RunResult(res.exit_code, stdout, stderr, time.monotonic() - start, res.timed_out,
                         deps=res.deps, changed=changed)
