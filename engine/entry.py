"""Console-script entry point: `mcpp = engine.entry:main`.

Imports nothing heavy before the no-op fast path (see `engine/noop.py`) and the build server's
client (`engine/server/client.py`) have had their chance: a repeated `mcpp build` is answered
from stats, and any other `build`, `run` or `test` goes to the workspace's warm server when
one can run it. Everything else, and every fallback, is the in-process command line.
"""
from __future__ import annotations

import sys


def main() -> None:
    from .noop import try_fast_noop

    argv = sys.argv[1:]
    try:
        done = try_fast_noop(argv)
    except Exception:  # noqa: BLE001 - only a shortcut: anything odd takes the full build, which says why
        done = False
    if done:
        sys.exit(0)
    from .server.client import route

    code = route(argv)
    if code is not None:
        sys.exit(code)
    from .cli import main as cli_main

    cli_main()


def serve(ident: str, root: str, home: str) -> None:
    """The server process (started by `server/client.py`): import the engine once, then serve."""
    from .cli import main as cli_main
    from .server import daemon, warm

    warm.preload()
    daemon.main(ident, root, home, cli_main, warm.Hooks(root, ident, home))
