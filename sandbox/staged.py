"""The run of an action in a private directory: the part bwrap and dir share.

1. a fresh ``<work_root>/sandbox/<pid>-<n>/`` with the declared inputs hard-linked in and the
   parent directories of the declared outputs (and the cwd) created;
2. ``@@EXECROOT@@`` expanded to the root the action sees, the command wrapped by the subclass
   (``bwrap ...`` or nothing), run as its own process group with the spec's timeout;
3. the depfile, if any, checked for undeclared inputs (then no outputs are collected and the
   exit code is non-zero);
4. the declared outputs moved out (to ``spec.out_dir`` with their relative paths, or flat into
   the pool's results directory: no directory to create per action, and on this kind of disk
   a ``mkdir`` costs more than a ``rename``); the action directory removed.
"""
from __future__ import annotations

import os
import posixpath
import time

from .depcheck import SYSTEM_ROOTS, find_undeclared, tool_roots, undeclared_message
from .depfile import parse_depfile
from .errors import SandboxClosed
from .placeholder import expand_argv, expand_env
from .pool import PooledSandbox
from .process import run_group
from .spec import SandboxResult, SandboxSpec
from .staging import collect_flat, collect_outputs, prepare_dirs, relpath, stage_inputs


class StagedSandbox(PooledSandbox):
    name = "staged"

    # -- what subclasses define --------------------------------------------------------------
    def root_seen(self, action_dir: str) -> str:
        """The action's root as the action sees it."""
        raise NotImplementedError

    def command(
        self, spec: SandboxSpec, action_dir: str, cwd: str, argv: list[str], env: dict[str, str]
    ) -> tuple[list[str], dict[str, str], str | None]:
        """(argv to exec, its environment, its cwd) for one action; ``cwd`` is action-relative."""
        raise NotImplementedError

    # -- the run -----------------------------------------------------------------------------
    def run(self, spec: SandboxSpec) -> SandboxResult:
        action_dir = self.pool.new_action_dir()
        try:
            return self.run_in(spec, action_dir, os.path.basename(action_dir), self.spawn)
        finally:
            self.pool.remove(action_dir)

    def spawn(self, spec: SandboxSpec, action_dir: str, cwd: str, argv: list[str],
              env: dict[str, str]) -> tuple[int, bool, bytes, bytes]:
        """Start the action as a process of its own: (exit code, timed out, stdout, stderr)."""
        argv, env, pcwd = self.command(spec, action_dir, cwd, argv, env)
        return run_group(argv, env=env, cwd=pcwd, timeout=spec.timeout, pool=self.pool)

    def run_in(self, spec: SandboxSpec, action_dir: str, tag: str, spawn,
               existing: set[str] | None = None) -> SandboxResult:
        """Stage, run through `spawn`, check and collect, in `action_dir`, which holds no file
        and exactly the directories `existing` (the caller removes or empties it afterwards);
        `tag` names collected outputs uniquely."""
        start = time.monotonic()
        pool = self.pool
        try:
            staged = stage_inputs(spec.inputs, action_dir, spec.label, existing)
            outputs = [relpath(o, "output", spec.label) for o in spec.outputs]
            cwd = relpath(spec.cwd, "cwd", spec.label)
            prepare_dirs(action_dir, outputs, existing)
            if cwd != "." and not (existing and cwd in existing):
                os.makedirs(f"{action_dir}/{cwd}", exist_ok=True)
            seen = self.root_seen(action_dir)
            try:
                code, timed_out, out, err = spawn(
                    spec, action_dir, cwd, expand_argv(spec.argv, seen), expand_env(spec.env, seen)
                )
            except OSError as e:  # the program could not be started at all
                pool.check_open()
                msg = f"error: action {spec.label} could not start {spec.argv[0]!r}: {e.strerror}\n"
                return SandboxResult(127, b"", msg.encode(), duration=time.monotonic() - start)
            pool.check_open()

            undeclared: list[str] = []
            if spec.depfile and not timed_out:
                undeclared = self._check_depfile(spec, action_dir, seen, cwd, staged, outputs)
                if undeclared:
                    err += undeclared_message(spec.label, undeclared)
                    if code == 0:
                        code = 1

            collected: dict[str, str] = {}
            if not undeclared and outputs:
                if spec.out_dir:
                    collected = collect_outputs(outputs, action_dir, spec.out_dir)
                else:
                    collected = collect_flat(outputs, action_dir, pool.results_dir(), tag)
            return SandboxResult(
                exit_code=code,
                stdout=out,
                stderr=err,
                outputs=collected,
                timed_out=timed_out,
                duration=time.monotonic() - start,
                undeclared=undeclared,
            )
        except Exception as e:
            if pool.closed and not isinstance(e, SandboxClosed):
                msg = f"action {spec.label} was stopped: the sandbox shut down"
                raise SandboxClosed(msg) from e
            raise

    def _check_depfile(
        self, spec: SandboxSpec, action_dir: str, seen: str, cwd: str,
        staged: set[str], outputs: list[str],
    ) -> list[str]:
        rel = relpath(spec.depfile or "", "depfile", spec.label)
        try:
            with open(f"{action_dir}/{rel}", encoding="utf-8", errors="surrogateescape") as f:
                text = f.read()
        except (FileNotFoundError, IsADirectoryError):
            return []
        declared = staged.union(outputs) if outputs else staged
        return find_undeclared(
            parse_depfile(text),
            root=seen,
            cwd=seen if cwd == "." else posixpath.join(seen, cwd),
            declared=declared,
            allowed_roots=SYSTEM_ROOTS + tool_roots(tuple(spec.tools)),
        )

    # -- lifetime ----------------------------------------------------------------------------
    def release(self, result: SandboxResult) -> None:
        """Remove ``result``'s outputs that still lie in the pool's results directory (once
        ingested); files the caller moved away, and a caller's ``out_dir``, are left alone."""
        self.pool.discard_results(result.outputs.values())

