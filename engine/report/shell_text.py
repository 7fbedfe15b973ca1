"""An action's command as a line a user can paste into a shell (what `-v` prints).

The argv the engine keeps holds the sandbox placeholder for the action's root and unquoted
arguments (`-DAPP_NAME="feat"`); pasted as is, the shell would strip the quotes and the
placeholder names no directory. Here the placeholder becomes the real execroot, every word is
shell-quoted, the action's own environment is prefixed, and the line starts with a `cd` when the
action runs somewhere other than where mcpp was started, so relative paths resolve.
"""
from __future__ import annotations

import os

from mcpp.cas.action import Action
from mcpp.sandbox.placeholder import expand_argv, expand_env


def pasteable(action: Action, execroot: str, cwd: str | None = None) -> str:
    import shlex  # only `-v` prints a command: not on a build's import path

    workdir = os.path.normpath(os.path.join(execroot, action.cwd))
    words = [shlex.quote(a) for a in expand_argv(action.argv, execroot)]
    env = expand_env(dict(action.env), execroot)
    if env:
        words = ["env", *(shlex.quote(f"{k}={v}") for k, v in env.items()), *words]
    line = " ".join(words)
    here = os.path.realpath(cwd if cwd is not None else os.getcwd())
    if os.path.realpath(workdir) != here:
        line = f"cd {shlex.quote(workdir)} && {line}"
    return line
