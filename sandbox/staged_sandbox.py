"""The run of an action in a private directory: the part bwrap and dir share.

1. a fresh ``<work_root>/sandbox/<pid>-<n>/`` (or a thread's reused slot) with the declared
   inputs staged (hard links, or private copies where ``private_copies``: see inputs.py; an action
   with many inputs under input-only directories gets them as a prepared tree instead, bound
   read-only where the sandbox has ``trees``: see input_tree.py) and the parent directories of
   the declared outputs (and the cwd) created;
2. ``@@EXECROOT@@`` expanded to the root the action sees, the command wrapped by the subclass
   (``bwrap ...`` or nothing), run with the spec's timeout; the subclass is told which paths to
   make read-only (``readonly_paths``) and no process of the action may outlive it;
3. copied inputs checked for changes, the depfile, if any, checked for undeclared inputs (either
   failure: no outputs are collected and the exit code is non-zero);
4. the declared outputs moved out without following a symlink (outputs.py; to ``spec.out_dir``
   with their relative paths, or flat into the pool's results directory: no directory to create
   per action, and on this kind of disk a ``mkdir`` costs more than a ``rename``); the action
   directory removed.
"""
from __future__ import annotations

import os
import posixpath
import time
from typing import Callable

from .depfile_syntax import parse_depfile, read_depfile
from .errors import SandboxClosed
from .placeholder import expand_argv, expand_env
from .pool import PooledSandbox
from .process import run_group
from .spec import SandboxResult, SandboxSpec
from .undeclared import SYSTEM_ROOTS, find_undeclared, tool_roots, undeclared_message, undeclared_response_files
from .input_tree import HeldTree, InputTrees, tree_key
from .inputs import (PrivateCopies, tree_relpath, changed_inputs, changed_inputs_message, prepare_dirs,
                     readonly_paths, relpath, snapshot, stage_inputs)
from .outputs import (BadOutput, bad_output_message, collect_flat, collect_outputs, undeclared_outputs,
                      undeclared_outputs_message)

# How `run_in` starts the action: (spec, action dir, action-relative cwd, argv, env, read-only
# paths, the prepared tree whose directories to bind read-only) -> (exit code, timed out, stdout,
# stderr), as `StagedSandbox.spawn` answers.
Spawn = Callable[[SandboxSpec, str, str, list[str], dict[str, str], list[str], HeldTree | None],
                 tuple[int, bool, bytes, bytes]]


class StagedSandbox(PooledSandbox):
    name = "staged"
    # Read-only directories every action may read (the build's installed payloads): set once
    # when the sandbox is made, before the first action.
    ro_roots: tuple[str, ...] = ()
    # Prepared trees of inputs, for a sandbox that binds a directory read-only (bwrap); None:
    # every input is staged one by one.
    trees: InputTrees | None = None

    def private_copies(self) -> PrivateCopies | None:
        """Where this thread's private copies of inputs live, for a sandbox that cannot mount
        its inputs read-only (dir): an action then fails if it changed one. None: hard links
        to the inputs themselves (mounted read-only by the subclass)."""
        return None

    # -- what subclasses define --------------------------------------------------------------
    def root_seen(self, action_dir: str) -> str:
        """The action's root as the action sees it."""
        raise NotImplementedError

    def command(
        self, spec: SandboxSpec, action_dir: str, cwd: str, argv: list[str], env: dict[str, str],
        ro: list[str], tree: HeldTree | None = None,
    ) -> tuple[list[str], dict[str, str], str | None]:
        """(argv to exec, its environment, its cwd) for one action; ``cwd`` is action-relative,
        ``ro`` the action-relative paths to mount read-only (where the sandbox can), ``tree`` the
        prepared tree whose directories (``tree.mounts``) the action sees read-only."""
        raise NotImplementedError

    # -- the run -----------------------------------------------------------------------------
    def run(self, spec: SandboxSpec) -> SandboxResult:
        action_dir = self.pool.new_action_dir()
        tree = None
        try:
            tree = self.hold_tree(spec)
            return self.run_in(spec, action_dir, os.path.basename(action_dir), self.spawn, tree=tree)
        finally:
            if tree is not None:
                tree.release()
            self.pool.remove(action_dir)

    def hold_tree(self, spec: SandboxSpec) -> HeldTree | None:
        """The action's prepared tree, locked until `release` (input_tree.py); None: stage every
        input one by one (not asked for, too few, no `trees` here, or the tree is another run's now)."""
        trees = self.trees
        if trees is None or not spec.prepared_tree or len(spec.inputs) < trees.min_inputs:
            return None
        outputs = {tree_relpath(o, "output", spec.label) for o in spec.outputs}
        inputs: dict[str, str] = {}
        for rel, src in spec.inputs.items():
            inputs.setdefault(relpath(rel, "input", spec.label), src)
        key = tree_key(spec.label, outputs, spec.root, spec.out_dir)
        return trees.hold(key, inputs, outputs, relpath(spec.cwd, "cwd", spec.label), spec.input_ids)

    def spawn(self, spec: SandboxSpec, action_dir: str, cwd: str, argv: list[str],
              env: dict[str, str], ro: list[str], tree: HeldTree | None) -> tuple[int, bool, bytes, bytes]:
        """Start the action as a process of its own: (exit code, timed out, stdout, stderr).
        ``ro``: action-relative paths to make read-only for it; ``tree``: its prepared tree."""
        argv, env, pcwd = self.command(spec, action_dir, cwd, argv, env, ro, tree)
        return run_group(argv, env=env, cwd=pcwd, timeout=spec.timeout, pool=self.pool)

    def run_in(self, spec: SandboxSpec, action_dir: str, tag: str, spawn: Spawn,
               existing: set[str] | None = None, tree: HeldTree | None = None) -> SandboxResult:
        """Stage, run through `spawn`, check and collect, in `action_dir`, which holds no file
        and exactly the directories `existing` (the caller removes or empties it afterwards);
        `tag` names collected outputs uniquely; `tree`: the inputs `hold_tree` prepared, whose
        directories the action sees in place of staged files (the caller releases it)."""
        start = time.monotonic()
        pool = self.pool
        try:
            outputs = [tree_relpath(o, "output", spec.label) for o in spec.outputs]
            copies = self.private_copies()
            staged = stage_inputs(spec.inputs if tree is None else tree.loose, action_dir, spec.label,
                                  existing, copies=copies, outputs=set(outputs))
            cwd = relpath(spec.cwd, "cwd", spec.label)
            before = snapshot(action_dir, staged.difference(outputs)) if copies else None
            ro = [] if copies else readonly_paths(staged, set(outputs), cwd)
            if tree is not None:
                for d in tree.mounts:  # where the tree's directories are bound
                    if not (existing and d in existing):
                        os.makedirs(f"{action_dir}/{d}", exist_ok=True)
                staged |= tree.rels
            prepare_dirs(action_dir, outputs, existing)
            if cwd != "." and not (existing and cwd in existing):
                os.makedirs(f"{action_dir}/{cwd}", exist_ok=True)
            seen = self.root_seen(action_dir)
            argv = expand_argv(spec.argv, seen)
            if spec.depfile:  # its reads are proven by the depfile: no response file may be undeclared
                bad = self._check_response_files(spec, argv, action_dir, seen, cwd, staged, outputs, tree)
                if bad:
                    return SandboxResult(1, b"", undeclared_message(spec.label, bad), undeclared=bad,
                                         duration=time.monotonic() - start, root_seen=seen)
            if spec.started is not None:
                spec.started()
            try:
                code, timed_out, out, err = spawn(spec, action_dir, cwd, argv, expand_env(spec.env, seen), ro, tree)
            except OSError as e:  # the program could not be started at all
                pool.check_open()
                msg = f"error: action {spec.label} could not start {spec.argv[0]!r}: {e.strerror}\n"
                return SandboxResult(127, b"", msg.encode(), duration=time.monotonic() - start)
            pool.check_open()

            failed = False
            if before is not None and copies is not None:  # `before` is taken only with copies
                changed = changed_inputs(action_dir, before)
                if changed:
                    by_rel = {relpath(r, "input"): src for r, src in spec.inputs.items()}
                    copies.drop(by_rel[r] for r in changed)
                    err += changed_inputs_message(spec.label, changed)
                    code, failed = code or 1, True
            undeclared: list[str] = []
            deps: list[str] | None = None
            if spec.depfile and not timed_out:
                undeclared, deps = self._check_depfile(spec, action_dir, seen, cwd, staged, outputs)
                if undeclared:
                    err += undeclared_message(spec.label, undeclared)
                    if code == 0:
                        code = 1

            if code == 0 and not undeclared and not failed and outputs:
                stray = undeclared_outputs(action_dir, outputs, staged, existing or ())
                if stray:
                    err += undeclared_outputs_message(spec.label, stray)
            collected: dict[str, str] = {}
            if not undeclared and not failed and outputs:
                try:
                    if spec.out_dir:
                        collected = collect_outputs(outputs, action_dir, spec.out_dir)
                    else:
                        collected = collect_flat(outputs, action_dir, pool.results_dir(), tag)
                except BadOutput as e:
                    err += bad_output_message(spec.label, e)
                    code = code or 1
            return SandboxResult(
                exit_code=code,
                stdout=out,
                stderr=err,
                outputs=collected,
                timed_out=timed_out,
                duration=time.monotonic() - start,
                undeclared=undeclared,
                root_seen=seen,
                deps=deps,
            )
        except Exception as e:
            if pool.closed and not isinstance(e, SandboxClosed):
                msg = f"action {spec.label} was stopped: the sandbox shut down"
                raise SandboxClosed(msg) from e
            raise

    def _check_response_files(
        self, spec: SandboxSpec, argv: list[str], action_dir: str, seen: str, cwd: str,
        staged: set[str], outputs: list[str], tree: HeldTree | None = None,
    ) -> list[str]:
        """The response files `argv` names (undeclared.py) that the action may not read."""
        prefix = seen.rstrip("/") + "/"

        def read(path: str) -> str | None:  # a response file's text, by the path the action sees
            real = path
            if path.startswith(prefix):
                rel = path[len(prefix):]
                held = tree.host_path(posixpath.normpath(rel)) if tree is not None else None
                real = held or f"{action_dir}/{rel}"
            try:
                with open(real, encoding="utf-8", errors="surrogateescape") as f:
                    return f.read(1 << 20)
            except OSError:
                return None

        return undeclared_response_files(
            argv, root=seen, cwd=seen if cwd == "." else posixpath.join(seen, cwd),
            declared=staged.union(outputs), allowed_roots=self._allowed_roots(spec), read=read)

    def _allowed_roots(self, spec: SandboxSpec) -> tuple[str, ...]:
        return SYSTEM_ROOTS + self.ro_roots + tool_roots(tuple(spec.tools))

    def _check_depfile(
        self, spec: SandboxSpec, action_dir: str, seen: str, cwd: str,
        staged: set[str], outputs: list[str],
    ) -> tuple[list[str], list[str] | None]:
        """(the undeclared dependencies, every dependency parsed: `SandboxResult.deps`)."""
        rel = relpath(spec.depfile or "", "depfile", spec.label)
        try:
            text = read_depfile(f"{action_dir}/{rel}")
        except (FileNotFoundError, IsADirectoryError):
            return [], None
        declared = staged.union(outputs) if outputs else staged
        deps = parse_depfile(text)
        undeclared = find_undeclared(
            deps,
            root=seen,
            cwd=seen if cwd == "." else posixpath.join(seen, cwd),
            declared=declared,
            allowed_roots=self._allowed_roots(spec),
        )
        return undeclared, deps if text.isascii() else None

    # -- lifetime ----------------------------------------------------------------------------
    def release(self, result: SandboxResult) -> None:
        """Remove ``result``'s outputs that still lie in the pool's results directory (once
        ingested); files the caller moved away, and a caller's ``out_dir``, are left alone."""
        self.pool.discard_results(result.outputs.values())

