"""The directory sandbox: a private directory per action, no namespaces.

For machines without working user namespaces (containers without the privilege, macOS later).
The action runs with its cwd inside ``<work_root>/sandbox/<pid>-<n>.slot/`` holding private
copies of exactly its declared inputs (hard links to its thread's own copies, never to the
store: nothing here could stop a write through one; an action that changes a copy fails, see
inputs.py), with exactly the
spec's environment (no variable of the engine leaks in). What it cannot do, and how that is
made up for:

- *hide the rest of the file system*: an absolute ``-I/home/me/inc`` still works. The
  compiler's depfile (``spec.depfile``) is checked after the run and every file it read that
  is neither declared nor under a root bwrap shows (undeclared.py) is reported
  (``SandboxResult.undeclared``, exit code 1, ``error: action <label> read undeclared input
  <path>``): what bwrap refuses, dir refuses too;
- *a namespace that ends with the action*: the action runs under a long-lived executor
  (worker.py) that is a subreaper and kills every descendant the action left, daemons included;
- *isolate the network*: it does not; an action can reach the host and beyond;
- *give a fixed path*: the directory differs per action, so the engine writes
  ``@@EXECROOT@@`` in argv (replaced here by the directory's absolute path) and adds
  ``prefix_map_flags()`` so objects do not embed it and stay byte-identical to bwrap's;
- *a private /tmp*: the action shares the host's ``/tmp`` (or ``$TMPDIR`` if its env says so).

Each engine thread runs its actions in one reused directory (``slot.py``): no file survives
from one action to the next, and the directory tree is made exactly what each action needs,
without a ``mkdir`` per level of every path each time.
"""
from __future__ import annotations

import os
import threading

from .input_tree import HeldTree
from .inputs import PrivateCopies
from .placeholder import prefix_map_flags
from .pool import SandboxPool
from .slot import SLOT_SUFFIX
from .spec import Guarantees, SandboxResult, SandboxSpec
from .staged_sandbox import StagedSandbox
from .worker import Worker, WorkerFailed

__all__ = ["DirSandbox", "prefix_map_flags"]

# `<pool base>/<pid>-<n>.inputs`: a thread's private copies of inputs, kept until the pool
# shuts down (or a later engine reclaims them)
COPIES_SUFFIX = ".inputs"


class DirSandbox(StagedSandbox):
    name = "dir"
    # Reads and writes by absolute path reach the host, past what a depfile names (an inline
    # `.incbin`, `__has_include`): no result is shared (engine/trust/policy.py).
    guarantees = Guarantees(confines_reads=False, confines_writes=False, kills_leftovers=True, stages_inputs=True,
                            checks_depfile=True)

    def __init__(self, work_root: str | None = None, *, pool: SandboxPool | None = None) -> None:
        super().__init__(work_root, pool=pool)
        self._local = threading.local()

    def run(self, spec: SandboxSpec) -> SandboxResult:
        worker = getattr(self._local, "worker", None)
        if worker is None or not worker.alive or not os.path.isdir(worker.slot.path):
            if worker is not None:
                self._retire(worker)
            worker = self._local.worker = Worker([], self.pool.new_action_dir(SLOT_SUFFIX), self.pool)
        slot = worker.slot

        def spawn(spec: SandboxSpec, action_dir: str, cwd: str, argv: list[str], env: dict[str, str],
                  ro: list[str], tree: HeldTree | None) -> tuple[int, bool, bytes, bytes]:
            return worker.execute(argv, env, action_dir if cwd == "." else f"{action_dir}/{cwd}",
                                  spec.timeout)

        try:
            result = self.run_in(spec, slot.path, slot.next_tag(), spawn, slot.prepare(spec))
        except WorkerFailed:  # no executor here: run it as a process group of its own
            self._retire(worker)
            self.pool.check_open()
            return super().run(spec)
        except BaseException:  # Ctrl-C, a shutdown, a bad spec: leave nothing behind
            self._retire(worker)
            raise
        if worker.alive:
            slot.release()
        else:
            self._retire(worker)
        return result

    def _retire(self, worker: Worker) -> None:
        if getattr(self._local, "worker", None) is worker:
            self._local.worker = None
        worker.close()
        if os.path.isdir(worker.slot.path):
            self.pool.remove(worker.slot.path)

    def private_copies(self) -> PrivateCopies:
        """This thread's (nothing can be mounted read-only here: see inputs.py)."""
        copies = getattr(self._local, "copies", None)
        if copies is None or (copies.path is not None and not os.path.isdir(copies.path)):
            copies = self._local.copies = PrivateCopies(lambda: self.pool.new_action_dir(COPIES_SUFFIX))
        return copies

    def root_seen(self, action_dir: str) -> str:
        return action_dir

    def command(
        self, spec: SandboxSpec, action_dir: str, cwd: str, argv: list[str], env: dict[str, str],
        ro: list[str], tree: HeldTree | None = None,
    ) -> tuple[list[str], dict[str, str], str | None]:
        return argv, env, action_dir if cwd == "." else f"{action_dir}/{cwd}"
