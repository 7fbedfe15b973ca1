"""A first build's first compile, begun while the rest of the build is still planned.

A clean build of N units plans all N before it schedules any (the module graph of C++20 units
is a property of all of them): at 10,000 light units the plan takes most of a second, at 300
tens of milliseconds, with the compilers idle. In a build that will run every action (the
first build of a fresh home: nothing fresh, nothing in a cache to restore), the planner hands
its first ordinary compile here as soon as it is planned, and it starts in the build's
sandbox, begun early (`SandboxWarmUp`), on its own thread.

It is a guess, checked: the plan once made must hold an action equal to the one started, with
no prerequisite (`settle`); only then does the pipeline take its run for the action's
(`take`), which it keys, hashes and records as any run. Otherwise the run is discarded:
whoever runs the action again waits for it first (its outputs are the same paths), and outputs
no action of the plan claims are removed (`close`). A build ending early (an error, a Ctrl-C)
waits for it, as the schedule waits for its running lanes, and then shuts the sandbox down. A run
taken is the action's run on the inputs the plan keys it with: they were hashed through the
build's stat cache, which the key reads (and a file changed since is caught there, as for any
action), and staged by content.
"""
from __future__ import annotations

import os
import threading
import time
from typing import Callable

from mcpp.cas.action import Action
from mcpp.cas.digest import Digest
from mcpp.sandbox import Sandbox

from .action_runner import RunResult, SandboxRunner, expand_trees
from .staging import input_stager
from .stores import Stores


class HeadStart:
    """At most one action started ahead of the schedule. `sandbox`: the build's (the warm-up's
    `get`); `digest_of`: an execroot-relative file's digest through the build's stat cache;
    `for_run`: the action as the pipeline would run it (diagnostics coloured or not)."""

    def __init__(self, execroot: str, sandbox: Callable[[], Sandbox], digest_of: Callable[[str], Digest],
                 stores: Stores, for_run: Callable[[Action], Action]):
        self.execroot = execroot
        self.sandbox = sandbox
        self.digest_of = digest_of
        self.stores = stores
        self.for_run = for_run
        self.action: Action | None = None
        self.began = 0.0  # time.monotonic() when it was handed to the sandbox
        # the digests its inputs were staged by: an adopted run is keyed by them (`KeyComputer.hashed_as`)
        self.digests: dict[str, Digest] = {}
        self.adopted: str | None = None  # its id, once `settle` found it in the plan as started
        self.taken = False  # the pipeline asked for it (and ran it again itself if not adopted)
        self._result: RunResult | None = None
        self._thread: threading.Thread | None = None

    def offer(self, action: Action) -> None:
        """Start `action` (the planner's first ordinary compile), once; on the planning thread,
        which resolves its inputs (the stat cache is this thread's). A missing input, or one
        changed between its hash and its staging, starts nothing: the schedule runs the action."""
        if self._thread is not None:
            return
        seen: dict[str, tuple[int, int]] = {}
        digests: dict[str, Digest] = {}

        def digest_of(rel: str) -> Digest:
            d = digests[rel] = self.digest_of(rel)
            return d

        # strict: every input staged is the bytes of the digest the key will be made from (`digests`)
        stage = input_stager(self.execroot, digest_of, self.stores, seen, strict=True)
        try:
            staged = {rel: stage(rel) for rel in expand_trees(self.execroot, dict.fromkeys(action.inputs + action.may_read))}
        except OSError:
            return
        runner = SandboxRunner(self.sandbox, self.execroot, staged.__getitem__, seen, prestages=True)
        self.action, self.began, self.digests = action, time.monotonic(), digests
        self._thread = threading.Thread(target=self._run, args=(runner, self.for_run(action)),
                                        name="mcpp-head-start", daemon=True)
        self._thread.start()

    def _run(self, runner: SandboxRunner, action: Action) -> None:
        try:
            self._result = runner.run(action)
        except BaseException:  # noqa: BLE001 - the pipeline runs the action again and reports it
            self._result = None

    def settle(self, actions: dict[str, Action], prereqs: dict[str, tuple[str, ...]]) -> str | None:
        """The plan is made (`actions` by id, and their prerequisites): the started action's id
        when the plan holds it unchanged and runnable at once, else None (the run is
        discarded)."""
        a = self.action
        if a is not None and adoptable(a, actions, prereqs):
            self.adopted = a.id
        return self.adopted

    def take(self, action_id: str) -> RunResult | None:
        """On a lane, for the action the pipeline is about to run: the head start's run if it is
        that action's, adopted and it ran (waits for its end); None otherwise, after waiting
        for a discarded run of the same action, whose outputs the caller's run rewrites."""
        a = self.action
        if a is None or a.id != action_id:
            return None
        self.taken = True
        assert self._thread is not None
        self._thread.join()
        return self._result if self.adopted is not None else None

    def wait(self) -> None:
        """Wait for the run to end (before its sandbox is shut down, which removes the
        directories it may still be staging into)."""
        if self._thread is not None:
            self._thread.join()

    def close(self) -> None:
        """At the build's end (also a failed or interrupted one): wait for the run, and remove
        the outputs of one nothing took (no action of the plan wrote them)."""
        if self._thread is None:
            return
        self.wait()
        if self.taken or self.action is None:
            return
        for out in self.action.outputs:
            try:
                os.unlink(os.path.join(self.execroot, out))
            except OSError:
                pass


def adoptable(started: Action, actions: dict[str, Action], prereqs: dict[str, tuple[str, ...]]) -> bool:
    """Whether a run of `started` is the run of the plan's action of its id: the plan holds one
    equal to it (the same command, inputs, headers it may read, outputs, environment) that
    waits on no other action."""
    return actions.get(started.id) == started and not prereqs.get(started.id)
