"""Actions a build program declared (`mcpp.action`), as actions of the plan.

A program speaks in absolute paths (`manifest_dir()`, `out_dir()`); the plan speaks in
execroot-relative ones, so each input and output is made relative, and an argv word that names
a path under the execroot gets the sandbox's placeholder instead (`@@EXECROOT@@/app/src/a.toy`):
the action then runs the same in every sandbox mode, and its key does not depend on where the
checkout lives. The action runs in its package's directory, so a relative path in argv means
what it means in `inputs`: a program author writes both relative to the package, and a tool
run from anywhere else would read a different file than the one the key was computed from.

A tool under the build's root (a binary of this build, `mcpp.bin(...)`, or a script of a
package) is an input: it is staged with the action's other inputs (keeping its executable bit),
keyed by its content, and an action that makes it runs first. Tools elsewhere (the compilers,
host tools in the tool store) are bound read-only from where they are, and keyed by their bytes
alone (`content_keyed`): a host tool rebuilt into another store path with the same bytes, or a
switch to another compiler that the action does not declare, leaves its key as it was.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from mcpp.cas.action import Action, ActionKind
from mcpp.sandbox import EXECROOT_PLACEHOLDER

from ..core.containment import inside
from ..core.errors import McppError
from ..core.paths import ExecPath
from ..package.layout import Layout
from ..package.model import Package

if TYPE_CHECKING:  # a build program's: imported where a package has a build.star
    from ..package.program_result import RuleAction


def action_id(pkg: Package, ra: RuleAction) -> str:
    return f"rule {pkg.name}:{ra.id}"


def to_plan_action(pkg: Package, ra: RuleAction, layout: Layout, base_env: tuple) -> Action:
    execroot = layout.execroot

    def rel(path: str, what: str) -> ExecPath:
        r = layout.exec_path(path)
        if r == ".." or r.startswith("../"):
            raise McppError(f"package `{pkg.name}`, action `{ra.id}`: {what} `{path}` is outside the build's root "
                            f"`{execroot}`; an action reads files of the packages in this build and its tools")
        return ExecPath(r + "/") if path.endswith("/") else r  # a tree output keeps its mark

    built_tools = tuple(t for t in ra.tools if execroot != "/" and inside(t, execroot))
    inputs = tuple(dict.fromkeys(rel(p, "input") for p in ra.inputs + built_tools))
    outputs = [rel(p, "output") for p in ra.outputs]
    depfile = rel(ra.depfile, "depfile") if ra.depfile else None
    if depfile and depfile not in outputs:
        outputs.append(depfile)
    env = dict(base_env)
    env.update(ra.env)
    return Action(
        id=action_id(pkg, ra), argv=tuple(placeholder_argv(ra.argv, execroot)), outputs=tuple(outputs),
        inputs=inputs, tools=tuple(t for t in ra.tools if t not in built_tools), env=tuple(sorted(env.items())),
        cwd=rel(pkg.root, "package directory"), depfile=depfile, kind=ActionKind.RULE, content_keyed=True,
        description=f"{pkg.name}: {ra.description or ra.id}")


def placeholder_argv(argv: tuple[str, ...], execroot: str) -> list[str]:
    if execroot == "/":
        return list(argv)
    root = execroot.rstrip("/")
    out = []
    for word in argv:
        if root in word:
            word = word.replace(root + "/", EXECROOT_PLACEHOLDER + "/")
            if word.endswith(root):
                word = word[: -len(root)] + EXECROOT_PLACEHOLDER
        out.append(word)
    return out


def _under(path: str, root: str) -> bool:
    return root != "/" and (path + "/").startswith(root.rstrip("/") + "/")
