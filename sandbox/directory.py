"""The directory sandbox: a private directory per action, no namespaces.

For machines without working user namespaces (containers without the privilege, macOS later).
The action runs with its cwd inside ``<work_root>/sandbox/<pid>-<n>/`` holding hard links of
exactly its declared inputs, with exactly the spec's environment (``env=`` for the child; no
variable of the engine leaks in). What it cannot do, and how that is made up for:

- *hide the rest of the file system*: an absolute ``-I/home/me/inc`` still works. The
  compiler's depfile (``spec.depfile``) is checked after the run and every file it read that
  is neither declared nor a system/tool file is reported (``SandboxResult.undeclared``, exit
  code 1, ``error: action <label> read undeclared input <path>``);
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

from .placeholder import prefix_map_flags
from .pool import SandboxPool
from .slot import SLOT_SUFFIX, Slot
from .spec import SandboxResult, SandboxSpec
from .staged import StagedSandbox

__all__ = ["DirSandbox", "prefix_map_flags"]


class DirSandbox(StagedSandbox):
    name = "dir"

    def __init__(self, work_root: str | None = None, *, pool: SandboxPool | None = None) -> None:
        super().__init__(work_root, pool=pool)
        self._local = threading.local()

    def run(self, spec: SandboxSpec) -> SandboxResult:
        slot = getattr(self._local, "slot", None)
        if slot is None or not os.path.isdir(slot.path):
            slot = self._local.slot = Slot(self.pool.new_action_dir(SLOT_SUFFIX))
        try:
            result = self.run_in(spec, slot.path, slot.next_tag(), self.spawn, slot.prepare(spec))
        except BaseException:  # Ctrl-C, a shutdown, a bad spec: leave nothing behind
            self._local.slot = None
            if os.path.isdir(slot.path):
                self.pool.remove(slot.path)
            raise
        slot.clear()
        return result

    def root_seen(self, action_dir: str) -> str:
        return action_dir

    def command(
        self, spec: SandboxSpec, action_dir: str, cwd: str, argv: list[str], env: dict[str, str]
    ) -> tuple[list[str], dict[str, str], str | None]:
        return argv, env, action_dir if cwd == "." else f"{action_dir}/{cwd}"
