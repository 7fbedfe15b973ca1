"""Work a build child leaves for after its client has the exit status.

Once a build's outputs, state and `compile_commands.json` are written and its lock released,
what remains is teardown nobody waits on: killing the sandbox's idle workers and removing their
directories (many unlinks after a link that staged a thousand objects). In a server's build child
that runs after the exit status went to the client (server/daemon.py), before the child exits;
in process (`--no-server`) it runs at once. The build hands such tasks to its `BuildMemory`
(engine/build/memory.py), which decides which of the two applies.
"""
from __future__ import annotations

import traceback
from typing import Callable


class AfterReply:
    """Tasks kept for after the reply, run in order by `run`."""

    def __init__(self) -> None:
        self._tasks: list[Callable[[], None]] = []

    def later(self, task: Callable[[], None]) -> None:
        self._tasks.append(task)

    def run(self, log: Callable[[str], None]) -> None:
        """After the reply: every task, in order; a failing one is logged and the rest still run."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            try:
                task()
            except Exception:  # noqa: BLE001 - teardown only: the build's result is already out
                log(traceback.format_exc())
