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
    <profile>/                   the final artifacts, and nothing else, at the top:
      <bin>                        binaries (a target name: letters, digits, `-`, `_`)
      lib<name>.so[.<version>]     shared libraries
      lib<package>.a               the static library of a package of the workspace
      .mcpp/                     everything the engine makes on the way; losing it costs a
                                 rebuild (or a cache restore), nothing more
        obj/ obj-pic/ test-obj/    objects (scan/: names P1689 scans give objects, never written)
        bmi/ std/                  module interfaces, the standard library's modules
        deps/lib<package>.a        the static library of a package from outside the workspace
        tests/<package>/<test>     test binaries
        link-deps/                 links' depfiles
        gen/<package>/             what build programs and the planner generate
        actions  scans  stat  explain  programs/<package>.json  payloads.json   (state)
    <triple>/<profile>/          the same for a cross build (`--target <triple>`), laid out alike
```

A package or target name is never a name the engine chose: the top holds only artifacts named
after them (a dot-free name cannot be `lib<x>.a` or `lib<x>.so`, nor `.mcpp`), and every
engine folder lives under `.mcpp/`, so no name of a user's can stand where mcpp needs a
directory.

Every action path is relative to the execroot, so a copy of the project elsewhere has the same
action keys. The layout is also the one place that converts between the kinds of path
(engine/core/paths.py): an absolute one (`AbsPath`), one relative to the execroot (`ExecPath`),
and one relative to its package's root (`PkgPath`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from ..core.paths import AbsPath, ExecPath, PkgPath
from ..core.shipped_packages import is_shipped

if TYPE_CHECKING:
    from .model import PackageGraph


@dataclass(frozen=True)
class Layout:
    """Where a build's files go under target/ (the only place that joins those paths)."""
    workspace_root: AbsPath  # where compile_commands.json is linked from, when asked
    target_dir: AbsPath  # <workspace>/target, or a host tool build's own directory
    execroot: AbsPath  # every action path (`ExecPath`) is relative to this
    profile: str
    triple: str | None = None  # a cross build's target (`target/<triple>/<profile>`); None: the host

    @classmethod
    def of(cls, graph: "PackageGraph", profile: str) -> "Layout":
        # A package shipped with mcpp holds only Starlark, which no action reads: its place in the
        # engine's installation must not widen the execroot (and so every key) to `/`.
        roots = [p.root for p in graph.order if not is_shipped(p.root)] + [graph.workspace_root, graph.target_dir]
        ctx = graph.context
        return cls(AbsPath(graph.workspace_root), AbsPath(graph.target_dir), AbsPath(os.path.commonpath(roots)),
                   profile, ctx.target.text if ctx is not None and ctx.cross else None)

    # -- target/ ------------------------------------------------------------------------------
    @property
    def out_dir(self) -> AbsPath:
        """`target/<profile>`: everything this profile builds; a cross build's is
        `target/<triple>/<profile>`, so no file of one target overwrites another's."""
        if self.triple is not None:
            return AbsPath(os.path.join(self.target_dir, self.triple, self.profile))
        return AbsPath(os.path.join(self.target_dir, self.profile))

    @property
    def lock_file(self) -> AbsPath:
        return AbsPath(os.path.join(self.target_dir, ".lock"))

    @property
    def work_dir(self) -> AbsPath:
        """`target/<profile>/.mcpp`: every file of the build that is not a final artifact."""
        return AbsPath(os.path.join(self.out_dir, ".mcpp"))

    def gen_dir(self, package: str) -> AbsPath:
        """Files generated for `package` (its build program's `out_dir()`, module mappers)."""
        return AbsPath(os.path.join(self.work_dir, "gen", package))

    def archive(self, package: str, root: str) -> AbsPath:
        """The static library of the package `package` at `root`: at the top for a package of
        the workspace (what a user builds and links), under `.mcpp/deps/` for one from outside
        it (a dependency's, which only its dependents link). Where a package's root lies does
        not change with the command's `-p`, so neither does its archive's path."""
        name = f"lib{package}.a"
        if os.path.commonpath([root, self.workspace_root]) == self.workspace_root:
            return AbsPath(os.path.join(self.out_dir, name))
        return AbsPath(os.path.join(self.work_dir, "deps", name))

    def test_binary(self, package: str, name: str) -> AbsPath:
        """The binary of test `name` (`unit/a` for `tests/unit/a.cpp`) of `package`."""
        return AbsPath(os.path.join(self.work_dir, "tests", package, name))

    # -- state: target/<profile>/.mcpp/ ------------------------------------------------------
    @property
    def state_dir(self) -> AbsPath:
        return self.work_dir

    @property
    def action_state(self) -> AbsPath:
        """Each action's last key, discovered inputs and output digests (incremental.BuildState)."""
        return AbsPath(os.path.join(self.state_dir, "actions"))

    @property
    def scan_cache(self) -> AbsPath:
        """Module and `#include` scans by content digest (incremental.ScanCache)."""
        return AbsPath(os.path.join(self.state_dir, "scans"))

    @property
    def stat_cache(self) -> AbsPath:
        """Source digests by stat (cas/statcache.py)."""
        return AbsPath(os.path.join(self.state_dir, "stat"))

    @property
    def explain_log(self) -> AbsPath:
        """The key inputs of each action's last two runs (`mcpp explain`): an append-only log."""
        return AbsPath(os.path.join(self.state_dir, "explain"))

    @property
    def program_cache(self) -> AbsPath:
        """Build program evaluations (engine/program/cache.py)."""
        return AbsPath(os.path.join(self.state_dir, "programs"))

    @property
    def payloads_record(self) -> AbsPath:
        """The payload environment of the last build (engine/payloads/record.py)."""
        return AbsPath(os.path.join(self.state_dir, "payloads.json"))

    # -- the workspace ------------------------------------------------------------------------
    @property
    def compile_commands(self) -> AbsPath:
        return AbsPath(os.path.join(self.target_dir, "compile_commands.json"))

    @property
    def compile_commands_link(self) -> AbsPath:
        """Where `[build] compile_commands = "root"` links it from."""
        return AbsPath(os.path.join(self.workspace_root, "compile_commands.json"))

    # -- converting between the kinds of path ------------------------------------------------
    @cached_property
    def _execroot_prefix(self) -> str:
        root = os.path.abspath(self.execroot)
        return root if root.endswith("/") else root + "/"

    def exec_path(self, path: str) -> ExecPath:
        """`path` (absolute, or relative to the current directory) relative to the execroot;
        `..`-led when it lies outside. A normalized path under the execroot (nearly every one the
        planner asks about: a thousand a plan) takes a prefix test; any other spelling gets
        `os.path.relpath`'s answer."""
        prefix = self._execroot_prefix
        if path.startswith(prefix) and os.path.normpath(path) == path:
            return ExecPath(path[len(prefix):])
        return ExecPath(os.path.relpath(path, self.execroot))

    def abs_path(self, path: ExecPath) -> AbsPath:
        """Where an execroot-relative path lies on the host."""
        return AbsPath(os.path.join(self.execroot, path))

    def package_exec_path(self, root: str, path: PkgPath) -> ExecPath:
        """A file named relative to the package at `root` (absolute), relative to the execroot."""
        return self.exec_path(os.path.join(root, path))

    def package_path(self, root: str, path: str) -> PkgPath:
        """An absolute path relative to the package at `root` (absolute; `..`-led when outside it)."""
        return PkgPath(os.path.relpath(path, root))
