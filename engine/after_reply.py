"""Work a build child leaves for after its client has the exit status.

Once a build's outputs, state and `compile_commands.json` are written and its lock released,
what remains is teardown nobody waits on: killing the sandbox's idle workers and removing their
directories (many unlinks after a link that staged a thousand objects). In a server's build child
that runs after the exit status went to the client (daemon.py), before the child exits; in
process (`--no-server`) it runs at once, where it always ran.
"""
from __future__ import annotations

import traceback
from typing import Callable

_tasks: list[Callable[[], None]] | None = None  # a list only in a build child, before its reply


def start() -> None:
    """In a build child, before its command: tasks from now on wait for the reply."""
    global _tasks
    _tasks = []


def later(task: Callable[[], None]) -> None:
    """Run `task` after the reply in a build child; anywhere else, now."""
    if _tasks is None:
        task()
    else:
        _tasks.append(task)


def run(log: Callable[[str], None]) -> None:
    """After the reply: every task, in order; a failing one is logged and the rest still run."""
    global _tasks
    tasks, _tasks = _tasks or [], None
    for task in tasks:
        try:
            task()
        except Exception:  # noqa: BLE001 - teardown only: the build's result is already out
            log(traceback.format_exc())
