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
from a cache (`core/dataclass_code.py`). Every module imported after `main` begins takes its code
from one file where it can (`core/module_code.py`): on a machine whose page cache holds none of
the `.pyc` files, one read in place of one per module.
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
    import atexit

    from .core.module_code import install as module_code

    # the modules' code from one file, not a `.pyc` each; written again at the exit, where this
    # command imported modules it lacks, not before its first compile
    atexit.register(module_code().save)
    from .server.client import route

    argv = sys.argv[1:]
    # a server for the next command, where none is up: started once this command is done
    server_starts: list = []
    answered = route(argv, unserved=lambda: _fast_noop(argv), start_later=server_starts.append)
    if answered is not None:
        # Answered (by the server, or from stats): nothing here needs the interpreter's teardown,
        # which costs a no-op build a few milliseconds more than the answer took.
        _exit(answered)
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
            from .server.bequest import Bequeathing

            first = server_starts[0]
            memory = bequeathing = Bequeathing(begun, request_key(first.request), int(first.request["started"] * 1e9),
                                               first.home, first.ident)
    finally:
        gc.freeze()
        gc.enable()
    code_cache.save()
    code: int | None = None
    try:
        cli_main(memory=memory or NoMemory(begun), started=process_started())
        code = 0
    except SystemExit as e:
        if e.code is not None and not isinstance(e.code, int):
            raise  # a message for the interpreter to print
        code = e.code or 0
    finally:
        if begun is not None:
            begun.close()
        if code is None:  # a traceback or a Ctrl-C on its way: what the server needs, here
            _leave_to_server(bequeathing, server_starts, 1)
    _hand_on(bequeathing, server_starts, code)
    _exit(code)


def _flush_output() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


def _leave_to_server(bequeathing, server_starts: list, code: int, started=None) -> None:
    """Start the server(s), then write the bequest (the command's exit status `code`): a server
    takes the bequest in only once this process has ended (client.py `awaits_start`), and one
    started first is a process a `mcpp server stop` finds as soon as the command has returned.
    `started`: called once they are started."""
    for start in server_starts:
        start()
    if started is not None:
        started()
    if bequeathing is not None:
        bequeathing.leave(code)


def _exit(code: int) -> None:
    """End this process with `code` as the interpreter's exit would (its threads that are not
    daemons waited for, its exit functions run, its output flushed), without the teardown
    after: freeing a build's objects one by one cost a clean build of 10,000 units ~0.15 s after
    its last line (bench/RESULTS.md), and nothing here needs it."""
    import atexit

    threading = sys.modules.get("threading")
    if threading is not None:
        for thread in threading.enumerate():
            if thread is not threading.main_thread() and not thread.daemon:
                thread.join()
    atexit._run_exitfuncs()
    _flush_output()
    os._exit(code)


def _hand_on(bequeathing, server_starts: list, code: int) -> None:
    """What a command built in this process leaves to the server it starts (the server's start,
    then the bequest) is done by a copy of this process that outlives it: the command's
    exit is its reply, and pickling a large plan took a clean build of 10,000 units ~0.25 s
    after its last line (bench/RESULTS.md). The copy holds none of the command's descriptors
    (the caller's pipes see their end with this process's) and runs in a session of its own (a
    Ctrl-C at the terminal is for the next command); the server it starts waits for its end
    before it reads the bequest (client.py `awaits_start`). Where no copy can be made, this
    process writes them itself."""
    if bequeathing is None and not server_starts:
        return
    _flush_output()  # nothing buffered is printed twice, by the copy too
    # The copy's servers are started before this process returns (it waits on `spawned` for that,
    # a posix_spawn's time): a script's `mcpp server stop` right after the command finds them.
    try:
        waiting, spawned = os.pipe()
        pid = os.fork()
    except OSError:  # this process does it all itself (and ends soon: a pipe left open is harmless)
        pid = -1
    if pid > 0:
        from .server.client import wait_readable

        os.close(spawned)
        wait_readable(waiting, _SPAWN_WAIT_S)  # its end: the copy closed `spawned`, or exited
        return
    try:
        if pid == 0:
            os.setsid()
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            # `null` too: a caller's extra pipe ends now; `spawned` once the servers are started
            os.closerange(3, spawned)
            os.closerange(spawned + 1, os.sysconf("SC_OPEN_MAX"))
        _leave_to_server(bequeathing, server_starts, code,
                         started=(lambda: os.close(spawned)) if pid == 0 else None)
    finally:
        if pid == 0:
            os._exit(0)


_SPAWN_WAIT_S = 2.0  # the longest the command waits for its copy to start the server


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
    from .core.module_code import install as module_code

    modules = module_code()
    code_cache = install()
    from .cli import app  # noqa: F401 - every command line but a plain build is click's: imported once, here
    from .cli.dispatch import main as cli_main
    from .cli.request_key import request_key
    from .server import daemon, warm

    warm.preload()
    code_cache.save()
    modules.save()
    # What the preload imported lives as long as the server: frozen, the server's full
    # collections after each build (its state and plans replaced) do not walk it again.
    import gc

    gc.collect()
    gc.freeze()
    daemon.main(ident, root, home, cli_main, warm.Hooks(root, ident, home, request_key),
                ready=int(ready) if ready else None, later=(warm.preload_later,),
                started_by=int(after) if after else None)
