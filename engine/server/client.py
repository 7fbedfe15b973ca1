"""The `mcpp` side of the server: decide, connect (starting a server on first use), hand over.

Only `build`, `run` and `test` go to a server; everything else, `--no-server`,
`MCPP_NO_SERVER=1`, and a directory with no `mcpp.toml` above it run in process. Whatever goes
wrong with the server itself (it cannot start, it dies mid-build, it answers nonsense) costs
one warning and an in-process build: `route` returns None and the caller builds.

This module runs before the engine is imported, on every `mcpp build`: it uses only what the
interpreter loaded at start-up and `protocol`/`paths` (the `socket` and `signal` modules alone
cost a no-op more than the server takes to answer it); `subprocess` is imported only to start a
server.
"""

import _signal
import _socket
import os
import sys
import time
from _collections_abc import Callable  # what `collections.abc` re-exports, already loaded

from ..core.commands import SERVED
from . import protocol
from .paths import Unsafe, home_dir, log_file, server_dir, server_id, socket_path, workspace_root

NO_SERVER_ENV = "MCPP_NO_SERVER"
NO_SERVER_FLAG = "--no-server"
_GLOBAL_WITH_VALUE = ("--color", "-j", "--jobs", "--manifest-path")
_START_WAIT_S = 30.0
_FORWARDED = {_signal.SIGINT: "INT", _signal.SIGTERM: "TERM", _signal.SIGHUP: "HUP"}


class _Fallback(Exception):
    """The server could not run this build; the message (if any) is the one warning."""


def wanted(argv: list[str]) -> tuple[str, str | None] | None:
    """(subcommand, --manifest-path) when this command line goes to a server, else None."""
    if os.environ.get(NO_SERVER_ENV, "") not in ("", "0"):
        return None
    manifest_path = None
    command = None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            break
        if a == NO_SERVER_FLAG:
            return None
        if command is None:
            if a in _GLOBAL_WITH_VALUE:
                if a == "--manifest-path" and i + 1 < len(argv):
                    manifest_path = argv[i + 1]
                i += 2
                continue
            if a.startswith("--manifest-path="):
                manifest_path = a.split("=", 1)[1]
            elif a in ("-h", "--help", "--version"):
                return None
            elif not a.startswith("-"):
                command = a
        i += 1
    if command not in SERVED:
        return None
    return command, manifest_path


def route(argv: list[str], unserved: Callable[[], bool] = lambda: False) -> int | None:
    """The exit code of the build the server ran for `argv`, or None: build in process.
    `unserved()` runs when no server is up, before one is started; True means it answered the
    command (the no-op fast path) and the exit code is 0."""
    target = wanted(argv)
    if target is None:
        return 0 if unserved() else None
    _command, manifest_path = target
    start = os.path.dirname(os.path.abspath(manifest_path)) if manifest_path else os.getcwd()
    root = workspace_root(start)
    if root is None:
        return 0 if unserved() else None  # the in-process build says what is missing
    home = home_dir()
    ident = server_id(root, home)
    request = {"op": "build", "identity": protocol.identity(), "root": root, "home": home, "argv": argv,
               "cwd": os.getcwd(), "env": dict(os.environ), "umask": _umask(), "started": time.time()}
    try:
        return _run(ident, root, home, request, unserved)
    except (_Fallback, Unsafe) as e:
        if e.args:
            sys.stderr.write(f"warning: {e.args[0]}; building in process\n")
            sys.stderr.flush()
        return None


def _run(ident: str, root: str, home: str, request: dict, unserved: Callable[[], bool]) -> int:
    for _attempt in range(3):
        sock = connect(ident)
        if sock is None:
            if unserved():
                return 0
            unserved = lambda: False  # noqa: E731 - asked once
            sock = _start(ident, root, home)
        try:
            protocol.send(sock, request, [0, 1, 2])
        except OSError:
            sock.close()
            continue
        reply = _wait(sock)
        if reply.get("restart"):  # another version: it has freed the name; start ours
            _wait_gone(ident)
            continue
        if "exit" in reply:
            return int(reply["exit"])
        if "refused" in reply:
            raise _Fallback(reply["refused"])
        if "crashed" in reply:
            raise _Fallback(f"the mcpp server's build process died (signal {reply['crashed']})")
        raise _Fallback(f"the mcpp server answered {reply!r}")
    raise _Fallback("the mcpp server kept restarting")


def connect(ident: str) -> "_socket.socket | None":
    """A connection to the server of `ident`, or None when none listens. Raises Unsafe where
    the socket directory is not this user's alone, or another user's process answers."""
    try:
        path = socket_path(ident)
    except FileNotFoundError:  # no server has run as this user since boot
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(path)
        uid = protocol.peer_uid(sock)
    except OSError:
        sock.close()
        return None
    if uid != os.getuid():
        sock.close()
        raise Unsafe("the mcpp server socket is held by another user's process")
    return sock


def _start(ident: str, root: str, home: str) -> "_socket.socket":
    """Start a server in its own session (it outlives this command) and wait for its socket."""
    import subprocess

    try:
        os.makedirs(server_dir(home), exist_ok=True)
    except OSError:  # a home that cannot be written: the in-process build names the problem
        raise _Fallback() from None
    import select

    # The server writes a byte on `ready` once its socket listens, and the pipe ends (EOF) if it
    # exits first: the client waits exactly as long as the start takes (mostly the engine's
    # imports), where polling the socket with a growing delay would oversleep.
    ready_r, ready_w = os.pipe()
    code = "import sys; from mcpp.engine.entry import serve; serve(*sys.argv[1:])"
    try:
        with open(os.devnull, "r+b") as null:
            proc = subprocess.Popen([sys.executable, "-c", code, ident, root, home, str(ready_w)], stdin=null,
                                    stdout=null, stderr=null, start_new_session=True, close_fds=True,
                                    pass_fds=(ready_w,), cwd=root)
    except BaseException:
        os.close(ready_r)
        raise
    finally:
        os.close(ready_w)
    try:
        waiting = select.poll()
        waiting.register(ready_r, select.POLLIN)
        waiting.poll(_START_WAIT_S * 1000)
    finally:
        os.close(ready_r)
    sock = connect(ident)  # ours, or the server that won a race to the name (ours then exited)
    if sock is not None:
        return sock
    proc.poll()
    raise _Fallback(f"the mcpp server did not start (see {log_file(ident, home)})")


def _wait_gone(ident: str) -> None:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        sock = connect(ident)
        if sock is None:
            return
        sock.close()
        time.sleep(0.02)


def _wait(sock) -> dict:
    """The server's answer, forwarding Ctrl-C (and TERM, HUP) to the build meanwhile."""
    def forward(signum, _frame):
        try:
            protocol.send(sock, {"signal": _FORWARDED[signum]})
        except OSError:
            pass

    previous = {s: _signal.signal(s, forward) for s in _FORWARDED}
    try:
        reply = protocol.receive(sock)
    except (OSError, protocol.ProtocolError):
        reply = None
    finally:
        for s, handler in previous.items():
            _signal.signal(s, handler)
        sock.close()
    if reply is None:
        raise _Fallback("the mcpp server stopped before the build finished")
    return reply


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def request_once(ident: str, message: dict) -> dict | None:
    """A one-shot request (`status`, `stop`) to a running server; None when none runs. Raises
    Unsafe (see `connect`)."""
    sock = connect(ident)
    if sock is None:
        return None
    try:
        protocol.send(sock, message)
        return protocol.receive(sock)
    except (OSError, protocol.ProtocolError):
        return None
    finally:
        sock.close()
