"""Console-script entry point: `mcpp-py = engine.entry:main`, the Python client, which the native
client (`mcpp`, engine/server/native/client.c) runs for every command it does not serve itself.

Imports nothing heavy before the build server's client (`engine/server/client.py`) and the
no-op fast path (`engine/state/noop.py`) have had their chance: a `build`, `run` or `test` goes to the
workspace's warm server when one is up (which answers a repeated `mcpp build` from stats
itself), and where none is, a repeated `mcpp build` is answered from stats here before a server
is started (once the in-process command is done). A command built in process that looks like a
first build in an empty home starts its sandbox's first worker before the engine is imported
(`build/cold_start.py`).
Everything else, and every fallback, is the in-process command line (a plain build
without click: `cli/dispatch.py`), whose engine's dataclasses take their generated methods' code
from a cache (`core/dataclass_code.py`).
"""

import os
import sys


def _fast_noop(argv: list[str]) -> bool:
    from .state.noop import try_fast_noop

    try:
        return try_fast_noop(argv)
    except Exception:  # noqa: BLE001 - only a shortcut: anything odd takes the full build, which says why
        return False


def main() -> None:
    from .server.client import route

    argv = sys.argv[1:]
    # a server for the next command, where none is up: started once this command is done
    server_starts: list = []
    code = route(argv, unserved=lambda: _fast_noop(argv), start_later=server_starts.append)
    if code is not None:
        # Answered (by the server, or from stats): nothing here needs the interpreter's teardown,
        # which costs a no-op build a few milliseconds more than the answer took.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
    import gc

    from .core.dataclass_code import install

    # What the engine's import allocates lives as long as the process: a collection during it
    # frees nothing, and once frozen the build's own collections do not walk it again.
    gc.disable()
    try:
        code_cache = install()
        from .build.cold_start import begin

        # a first build's sandbox, begun while the engine imports
        begun = begin(argv)
        from .build.memory import NoMemory
        from .cli.dispatch import main as cli_main
        from .core.command_clock import process_started

        memory = bequeathing = None
        if server_starts:  # what this build learns is left to the server started after it
            from .cli.request_key import request_key
            from .server.bequest import Bequeathing, path_of

            first = server_starts[0]
            memory = bequeathing = Bequeathing(begun, request_key(first.request), int(first.request["started"] * 1e9),
                                               path_of(first.home, first.ident, os.getpid()))
    finally:
        gc.freeze()
        gc.enable()
    code_cache.save()
    code = 1
    try:
        cli_main(memory=memory or NoMemory(begun), started=process_started())
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else int(e.code is not None)
        raise
    finally:
        if begun is not None:
            begun.close()
        if bequeathing is not None:
            bequeathing.leave(code)
        for start in server_starts:
            start()


def serve(ident: str, root: str, home: str, ready: str | None = None, after: str | None = None) -> None:
    """The server process (started by `server/client.py`): import the engine once, then serve.
    `ready`: the descriptor to tell the client on that the socket listens ("": none); `after`:
    the pid of a client building in process, whose end the server awaits before it imports the
    engine (the two would share the CPUs the build's compiles use)."""
    if after:
        from .server.client import awaits_start

        if not awaits_start(ident, int(after)):
            from .server.bequest import discard, path_of

            discard(path_of(home, ident, int(after)))  # another server serves: what was left is no one's
            return
    from .core.dataclass_code import install

    code_cache = install()
    from .cli import app  # noqa: F401 - every command line but a plain build is click's: imported once, here
    from .cli.dispatch import main as cli_main
    from .cli.request_key import request_key
    from .server import daemon, warm

    warm.preload()
    code_cache.save()
    # What the preload imported lives as long as the server: frozen, the server's full
    # collections after each build (its state and plans replaced) do not walk it again.
    import gc

    gc.collect()
    gc.freeze()
    daemon.main(ident, root, home, cli_main, warm.Hooks(root, ident, home, request_key),
                ready=int(ready) if ready else None, later=(warm.preload_later,),
                started_by=int(after) if after else None)
