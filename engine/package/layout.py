"""Where one build's files live: the execroot, `target/<profile>`, its state and generated files.

Computed once per build from the package graph and the profile, then passed to every step that
reads or writes under `target/` (the planner, the build state, the program cache, the explain
log), so no other module joins these paths by hand:

```
<execroot>/                      the common ancestor of every package root and target/
  <workspace>/compile_commands.json  a link to target/compile_commands.json, when asked for
  <workspace>/target/            (a host tool's build: <consumer's target>/host/<name>/)
    compile_commands.json
    .lock                        one build per target directory at a time
    host/<package>/              host tools' own builds (engine/build/host_tools.py)
    <profile>/                   objects, archives, binaries, BMIs
      gen/<package>/             what build programs and the planner generate
      .mcpp/                     state: losing it costs a rebuild (or a cache restore), nothing more
        actions  scans  stat  explain  programs/<package>.json
```

Every action path is relative to the execroot, so a copy of the project elsewhere has the same
action keys.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.shipped_packages import is_shipped

if TYPE_CHECKING:
    from .model import PackageGraph


@dataclass(frozen=True)
class Layout:
    workspace_root: str  # where compile_commands.json is linked from, when asked
    target_dir: str  # <workspace>/target, or a host tool build's own directory
    execroot: str  # every action path is relative to this
    profile: str

    @classmethod
    def of(cls, graph: "PackageGraph", profile: str) -> "Layout":
        # A package shipped with mcpp holds only Starlark, which no action reads: its place in the
        # engine's installation must not widen the execroot (and so every key) to `/`.
        roots = [p.root for p in graph.order if not is_shipped(p.root)] + [graph.workspace_root, graph.target_dir]
        return cls(graph.workspace_root, graph.target_dir, os.path.commonpath(roots), profile)

    # -- target/ ------------------------------------------------------------------------------
    @property
    def out_dir(self) -> str:
        """`target/<profile>`: everything this profile builds."""
        return os.path.join(self.target_dir, self.profile)

    @property
    def lock_file(self) -> str:
        return os.path.join(self.target_dir, ".lock")

    def gen_dir(self, package: str) -> str:
        """Files generated for `package` (its build program's `out_dir()`, module mappers)."""
        return os.path.join(self.out_dir, "gen", package)

    # -- state: target/<profile>/.mcpp/ ------------------------------------------------------
    @property
    def state_dir(self) -> str:
        return os.path.join(self.out_dir, ".mcpp")

    @property
    def action_state(self) -> str:
        """Each action's last key, discovered inputs and output digests (incremental.BuildState)."""
        return os.path.join(self.state_dir, "actions")

    @property
    def scan_cache(self) -> str:
        """Module and `#include` scans by content digest (incremental.ScanCache)."""
        return os.path.join(self.state_dir, "scans")

    @property
    def stat_cache(self) -> str:
        """Source digests by stat (cas/statcache.py)."""
        return os.path.join(self.state_dir, "stat")

    @property
    def explain_log(self) -> str:
        """The key inputs of each action's last two runs (`mcpp explain`): an append-only log."""
        return os.path.join(self.state_dir, "explain")

    @property
    def program_cache(self) -> str:
        """Build program evaluations (engine/program/cache.py)."""
        return os.path.join(self.state_dir, "programs")

    @property
    def payloads_record(self) -> str:
        """The payload environment of the last build (engine/payloads/record.py)."""
        return os.path.join(self.state_dir, "payloads.json")

    # -- the workspace ------------------------------------------------------------------------
    @property
    def compile_commands(self) -> str:
        return os.path.join(self.target_dir, "compile_commands.json")

    @property
    def compile_commands_link(self) -> str:
        """Where `[build] compile_commands = "root"` links it from."""
        return os.path.join(self.workspace_root, "compile_commands.json")

    # -- execroot-relative paths --------------------------------------------------------------
    def abs(self, rel: str) -> str:
        return os.path.join(self.execroot, rel)

    def rel(self, path: str) -> str:
        return os.path.relpath(path, self.execroot)
