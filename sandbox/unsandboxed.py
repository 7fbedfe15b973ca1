"""The `off` sandbox: run the action in the real project directory, no isolation, no copying.

For debugging a build ("does it work outside the sandbox?") and for actions that cannot be
sandboxed. ``spec.root`` is the real directory the action-relative paths refer to; inputs are
taken to be in place there already (nothing is staged or checked), ``@@EXECROOT@@`` becomes
``root``. It still runs the action with exactly the spec's environment, in its own process
group with the timeout, and the pool still kills it on shutdown.

Declared outputs are deleted before the run, so one the action does not produce is reported
absent instead of a stale file from an earlier run being taken for it; ``outputs`` then maps
each produced one to its path in ``root`` (nothing is moved). No depfile check: `off` is the
escape hatch.
"""
from __future__ import annotations

import os
import time

from .errors import SandboxSpecError
from .inputs import prepare_dirs, relpath, tree_relpath
from .placeholder import expand_argv, expand_env
from .pool import PooledSandbox, rmtree
from .process import run_group
from .spec import Guarantees, SandboxResult, SandboxSpec


class LocalSandbox(PooledSandbox):
    name = "off"
    guarantees = Guarantees(confines_reads=False, confines_writes=False, kills_leftovers=False,
                            stages_inputs=False, checks_depfile=False)

    def run(self, spec: SandboxSpec) -> SandboxResult:
        start = time.monotonic()
        self.pool.check_open()
        if not spec.root:
            raise SandboxSpecError(
                f"action {spec.label}: the `off` sandbox needs spec.root, the directory the "
                "action's relative paths refer to"
            )
        root = os.path.abspath(spec.root)
        outputs = [tree_relpath(o, "output", spec.label) for o in spec.outputs]
        cwd = relpath(spec.cwd, "cwd", spec.label)
        for rel in outputs:
            path = f"{root}/{rel.rstrip('/')}"
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            except (IsADirectoryError, PermissionError):
                if os.path.isdir(path) and not os.path.islink(path):
                    rmtree(path)
                else:
                    raise
        prepare_dirs(root, outputs)
        if spec.started is not None:
            spec.started()
        try:
            code, timed_out, out, err = run_group(
                expand_argv(spec.argv, root),
                env=expand_env(spec.env, root),
                cwd=root if cwd == "." else f"{root}/{cwd}",
                timeout=spec.timeout,
                pool=self.pool,
            )
        except OSError as e:
            self.pool.check_open()
            msg = f"error: action {spec.label} could not start {spec.argv[0]!r}: {e.strerror}\n"
            return SandboxResult(127, b"", msg.encode(), duration=time.monotonic() - start)
        self.pool.check_open()
        produced = {rel: f"{root}/{rel}" for rel in outputs if os.path.lexists(f"{root}/{rel}")}
        return SandboxResult(
            exit_code=code,
            stdout=out,
            stderr=err,
            outputs=produced,
            timed_out=timed_out,
            duration=time.monotonic() - start,
            root_seen=root,
        )

    def release(self, result: SandboxResult) -> None:
        """Nothing to remove: the outputs are the project's own files."""

