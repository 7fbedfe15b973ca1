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
"""
from __future__ import annotations

from .placeholder import prefix_map_flags
from .spec import SandboxSpec
from .staged import StagedSandbox

__all__ = ["DirSandbox", "prefix_map_flags"]


class DirSandbox(StagedSandbox):
    name = "dir"

    def root_seen(self, action_dir: str) -> str:
        return action_dir

    def command(
        self, spec: SandboxSpec, action_dir: str, cwd: str, argv: list[str], env: dict[str, str]
    ) -> tuple[list[str], dict[str, str], str | None]:
        return argv, env, action_dir if cwd == "." else f"{action_dir}/{cwd}"
