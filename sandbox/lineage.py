"""Whether a process runs inside an action: a descendant of an action executor (worker.py).

Under ``dir`` (and ``off``) an action shares the host's sockets and file system, so it can reach
the user's warm build server and ask it to build or `mcpp run` a program that outlives the action
and the executor's cleanup. The server asks this of each peer (its ``SO_PEERCRED`` pid) and
refuses one inside an action. An action cannot leave its executor's subtree while it runs: the
executor is a ``PR_SET_CHILD_SUBREAPER``, so even a daemonised grandchild (double fork,
``setsid``) is re-parented to it, never to the host's init, until the executor kills it. Under
bwrap the server cannot be reached at all (no host network namespace, no host file system).
"""
from __future__ import annotations

import os
from typing import Collection

from .worker import EXECUTOR

_MAX_DEPTH = 256  # ancestors looked at before giving up (a chain of processes cannot be longer in practice)
_MARK = EXECUTOR.encode()


def parent_of(pid: int) -> int | None:
    """The parent of `pid` from /proc, None when it has gone (or /proc cannot say)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat.rsplit(b")", 1)[-1].split()  # the command name, in parentheses, may hold anything
    try:
        return int(fields[1])
    except (IndexError, ValueError):
        return None


def is_executor(pid: int) -> bool:
    """True when `pid` runs the action executor of worker.py (its program is the `-c` argument)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return _MARK in f.read().split(b"\0")
    except OSError:
        return False


def inside_action(pid: int, ancestors: Collection[int] = ()) -> bool:
    """True when `pid` descends from an action executor, or from one of `ancestors` (a server
    passes its own pid: every process of a build it runs is an action or the build itself).
    Also True when the chain cannot be followed to init (the peer exited after connecting: a
    client waits for its answer), so a request is refused rather than taken unseen."""
    if parent_of(os.getpid()) is None:  # no /proc here: nothing can be told apart
        return False
    current = pid
    for _ in range(_MAX_DEPTH):
        if current <= 1:
            return False
        parent = parent_of(current)
        if parent is None:
            return True
        if parent in ancestors or is_executor(parent):
            return True
        current = parent
    return True
