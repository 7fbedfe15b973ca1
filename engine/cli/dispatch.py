"""`mcpp ARGV`, in the `mcpp` process and in the build server's children: a plain `mcpp build`
is read and run without click (engine/cli/launch.py), every other line by click
(engine/cli/app.py, imported only then)."""
from __future__ import annotations

import sys

from .launch import guarded, plain_build_command, start

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..build.memory import BuildMemory


def main(argv: list[str] | None = None, memory: BuildMemory | None = None, started: float | None = None) -> None:
    """Run the command line `argv` (None: this process's) and exit with its code."""
    launch = start(argv, memory, started)
    command = plain_build_command(launch)
    if command is None:
        from .app import click_main

        command = lambda: click_main(launch)  # noqa: E731
    guarded(command)
    sys.exit(0)
