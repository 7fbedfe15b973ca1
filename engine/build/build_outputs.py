"""Files a build leaves beside its actions' outputs once the actions ran: `compile_commands.json`
for editors, and the symbolic links of a versioned shared library.

Neither is an action's output: the sandbox brings back only regular files (a link could point
anywhere), and the compile database describes the plan rather than any one action.
"""
from __future__ import annotations

import json
import os
from typing import Container

from mcpp.cas.atomic import write_if_changed

from ..package.layout import Layout
from ..plan.model import Plan


def write_compile_commands(layout: Layout, plan: Plan, changed: bool, link_at_root: bool) -> None:
    """`target/compile_commands.json`, for clangd and friends; with `[build] compile_commands =
    "root"` also a link to it at the workspace root (where some editors look), which is never
    written otherwise: a build does not put files into the source tree unasked. When every
    action was up to date the commands are the ones the file already holds, so a no-op build
    does not serialize them again."""
    path = layout.compile_commands
    if changed or not os.path.exists(path):
        write_if_changed(path, compile_commands_json(plan))
    root_link = layout.compile_commands_link
    current = os.readlink(root_link) if os.path.islink(root_link) else None
    wanted = os.path.relpath(path, os.path.dirname(root_link))
    if link_at_root and current != wanted and not (os.path.exists(root_link) and current is None):
        _replace_link(root_link, wanted)
    elif not link_at_root and current == wanted:
        os.unlink(root_link)  # ours, from a build that asked for it: the manifest no longer does


def compile_commands_json(plan: Plan) -> bytes:
    """The file's bytes for `plan`, encoded once per plan: a warm server encodes them while idle
    for the plan it keeps (server/warm.py), so a build that reuses the plan only compares."""
    if plan.compile_commands_json is None:
        plan.compile_commands_json = _json_lines(plan.compile_commands)
    return plan.compile_commands_json


def _json_lines(entries: list) -> bytes:
    """A JSON array with one entry per line: as readable as an indented file, and encoded by
    the json module's C encoder (an indent makes it use the pure-Python one, on every build
    that ran an action)."""
    if not entries:
        return b"[]\n"
    return ("[\n" + ",\n".join(json.dumps(e) for e in entries) + "\n]\n").encode()


def make_artifact_links(plan: Plan) -> None:
    """The links of each versioned shared library (`libz.so -> libz.so.1 -> libz.so.1.3.1`),
    relative, beside the file the link action wrote."""
    for artifact in plan.artifacts:
        for link, points_to in artifact.aliases:
            full = os.path.join(plan.execroot, link)
            if not (os.path.islink(full) and os.readlink(full) == points_to):
                _replace_link(full, points_to)


def _replace_link(path: str, points_to: str) -> None:
    tmp = f"{path}.tmp-link"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(points_to, tmp)
    os.replace(tmp, path)


class IncompleteBuild(RuntimeError):
    """A build the scheduler called successful that did not do what was planned: a bug in the
    engine (an action no order could reach), said as one rather than a silent `Finished`."""


def check_complete(plan: Plan, done: set[str], left_remote: Container[str] = ()) -> None:
    """Every planned action ran, was fresh or was restored (`done`), and every artifact exists
    (or was left on the remote cache: `left_remote`, `--remote-download minimal`).
    Anything else reported as success would be a build that silently did nothing."""
    missing = [a.id for a in plan.actions if a.id not in done]
    if missing:
        shown = ", ".join(f"`{i}`" for i in missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise IncompleteBuild(f"planned {len(plan.actions)} action(s) but {len(missing)} never ran: {shown}")
    absent = [a for a in plan.artifacts
              if a.path not in left_remote and not os.path.isfile(os.path.join(plan.execroot, a.path))]
    if absent:
        raise IncompleteBuild(f"the build succeeded but produced no `{absent[0].path}` ({absent[0].kind} "
                              f"`{absent[0].name}` of package `{absent[0].package}`)")
