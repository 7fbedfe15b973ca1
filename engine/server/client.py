"""The `mcpp` side of the server: decide, connect (starting a server on first use), hand over.

Only `build`, `run` and `test` go to a server; everything else, `--no-server`,
`MCPP_NO_SERVER=1`, and a directory with no `mcpp.toml` above it run in process. Where no server
is up, the command starts one in the background and builds in process meanwhile: its first
compile waits for this process's imports, not for a server's start as well; the next command
goes to the server (`MCPP_SERVER_START=wait`: wait for it and build through it). Whatever goes
wrong with the server itself (it cannot start, it dies mid-build, it answers nonsense) costs
one warning and an in-process build (`route` returns None and the caller builds) as long as
the server has not taken the request; once it has, the command is never run a second time.

This module runs before the engine is imported, on every `mcpp build`: it uses only what the
interpreter loaded at start-up and `protocol`/`paths` (the `socket` and `signal` modules alone
cost a no-op more than the server takes to answer it); `subprocess` is imported only to start a
server and wait for it (`MCPP_SERVER_START=wait`).
"""

import _signal
import _socket
import os
import sys
import time
from _collections_abc import Callable  # what `collections.abc` re-exports, already loaded

from ..core.command_clock import process_started
from ..core.commands import SERVED, subcommand
from . import protocol
from .paths import Unsafe, home_dir, log_file, server_dir, server_id, socket_path, workspace_root

NO_SERVER_ENV = "MCPP_NO_SERVER"
NO_SERVER_FLAG = "--no-server"
START_ENV = "MCPP_SERVER_START"  # "wait": a build with no server up waits for the one it starts
_START_WAIT_S = 30.0
_FORWARDED = {_signal.SIGINT: "INT", _signal.SIGTERM: "TERM", _signal.SIGHUP: "HUP"}


class _Fallback(Exception):
    """The server could not run this build; the message (if any) is the one warning."""


def wanted(argv: list[str]) -> tuple[str, str | None] | None:
    """(subcommand, --manifest-path) when this command line goes to a server, else None."""
    if os.environ.get(NO_SERVER_ENV, "") not in ("", "0"):
        return None
    if NO_SERVER_FLAG in argv[:argv.index("--") if "--" in argv else len(argv)]:
        return None
    command, manifest_path = subcommand(argv)
    if command not in SERVED:
        return None
    return command, manifest_path


def route(argv: list[str], unserved: Callable[[], bool] = lambda: False,
          start_later: Callable[["ServerStart"], None] | None = None) -> int | None:
    """The exit code of the build the server ran for `argv`, or None: build in process.
    `unserved()` runs when no server is up, before one is started; True means it answered the
    command (the no-op fast path) and the exit code is 0. Where no server is up and none is
    waited for, one is started in the background for the next command: now, or by whoever
    `start_later` hands the start to (the `mcpp` process, once its command is done).

    None only while nothing has run: once the request is handed to a server, whatever happens
    (the server or its build process dies, a signal comes) is answered here with an exit code,
    never by running the command again in process."""
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
               "cwd": os.getcwd(), "env": dict(os.environ), "umask": _umask(),
               "started": time.time(), "began": process_started()}
    signals = _Signals()
    try:
        return _run(ident, root, home, request, unserved, signals, start_later)
    except _Interrupted as e:  # before the hand-over: nothing ran
        _say("error: interrupted")
        return 128 + e.args[0]
    except _Lost as e:
        _say(f"error: {e.args[0]}; it was not run again (run the command again, or with "
             f"--no-server to run it in this process)")
        return e.args[1]
    except (_Fallback, Unsafe) as e:
        if e.args:
            _say(f"warning: {e.args[0]}; building in process")
        return None
    finally:
        signals.restore()


class _Interrupted(BaseException):
    """A signal (its number) came before the request was handed to a server: nothing ran.
    A BaseException, so that no `except Exception` on the way (the no-op fast path's) takes it."""


class _Lost(Exception):
    """The server took the request and then went away without its exit status: (message, exit code)."""


class _Signals:
    """SIGINT, SIGTERM and SIGHUP while the client runs (a signal ignored when `mcpp` started
    stays ignored). Before a request is handed to a server, one ends the client (`_Interrupted`);
    after, it is forwarded to the server's build process, which passes it on to what it runs, and
    the exit status comes back as usual."""

    def __init__(self) -> None:
        self.sock: "_socket.socket | None" = None  # the connection the request was handed over on
        self.received: int | None = None
        self.previous = {}
        for signum in _FORWARDED:
            if _signal.getsignal(signum) != _signal.SIG_IGN:
                self.previous[signum] = _signal.signal(signum, self._on_signal)

    def _on_signal(self, signum, _frame) -> None:
        self.received = signum
        if self.sock is None:
            raise _Interrupted(signum)
        try:
            protocol.send(self.sock, {"signal": _FORWARDED[signum]})
        except OSError:
            pass

    def restore(self) -> None:
        previous, self.previous = self.previous, {}
        for signum, handler in previous.items():
            _signal.signal(signum, handler)


def _run(ident: str, root: str, home: str, request: dict, unserved: Callable[[], bool], signals: _Signals,
         start_later: Callable[["ServerStart"], None] | None) -> int:
    for _attempt in range(3):
        sock = connect(ident)
        if sock is None:
            if unserved():
                return 0
            unserved = lambda: False  # noqa: E731 - asked once
            if os.environ.get(START_ENV, "") != "wait":
                start = ServerStart(ident, root, home, request)
                if start_later is not None:
                    start_later(start)
                else:
                    start()
                raise _Fallback()  # said nothing: this build runs in process, as it would have run in the server
            sock = _start(ident, root, home)
        try:
            protocol.send(sock, request, [0, 1, 2])
        except OSError:  # not handed over: a server takes no partial request
            sock.close()
            continue
        reply = _wait(sock, signals)
        if "exit" in reply:
            return int(reply["exit"])
        if signals.received is not None:  # the server answered otherwise, or not at all: the signal's code
            return 128 + signals.received
        if reply.get("restart"):  # another version: it has freed the name, running nothing; start ours
            _wait_gone(ident)
            continue
        if "refused" in reply:  # nothing ran
            raise _Fallback(reply["refused"])
        if "crashed" in reply:
            raise _Lost(f"the mcpp server's build process died (signal {reply['crashed']})",
                        128 + int(reply["crashed"]))
        if not reply:
            raise _Lost(f"the mcpp server stopped before the command finished (see {log_file(ident, home)})", 1)
        raise _Lost(f"the mcpp server answered {reply!r}", 1)
    raise _Fallback("the mcpp server kept restarting")


class ServerStart:
    """A server's start in the background, for now or for when the `mcpp` process's command is
    done (engine/entry.py), with the request that command runs in process: its build leaves the
    server what it learned (server/bequest.py)."""

    __slots__ = ("ident", "root", "home", "request")

    def __init__(self, ident: str, root: str, home: str, request: dict) -> None:
        self.ident, self.root, self.home, self.request = ident, root, home, request

    def __call__(self) -> None:
        _start_in_background(self.ident, self.root, self.home)


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


# the server's process: in the workspace's root (it holds no other directory), serving it
SERVE = "import os, sys; os.chdir(sys.argv[2]); from mcpp.engine.entry import serve; serve(*sys.argv[1:])"
# `-P`: without it `-c` puts the working directory first on the import path, and the server imports
# in the workspace's root: a `json.py` there (anything a repository holds) would run in the server
SERVER_ARGV = (sys.executable, "-P", "-c", SERVE)


_AFTER_WAIT_S = 30.0  # the longest a server started in the background waits for its client's end


def _start_in_background(ident: str, root: str, home: str) -> None:
    """Start a server in its own session (it outlives this command), waiting for nothing: it
    imports the engine once this command has ended (`awaits_start`). The `mcpp` process starts it
    when its command is done (engine/entry.py): the interpreter's start (~15 ms of CPU) would
    otherwise share the cores with a first build's imports and first compile. `posix_spawn`, not
    `subprocess`: neither its import nor a wait for the exec delays this command's build. The
    server gets /dev/null as 0, 1 and 2 and none of this process's other descriptors. A home
    that cannot hold it starts none, and the in-process build names the problem."""
    try:
        os.makedirs(server_dir(home), exist_ok=True)
        actions: list[tuple] = [(os.POSIX_SPAWN_CLOSE, fd) for fd in _open_fds() if fd > 2]
        actions += [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDWR, 0), (os.POSIX_SPAWN_DUP2, 0, 1),
                    (os.POSIX_SPAWN_DUP2, 0, 2)]
        os.posix_spawn(sys.executable, [*SERVER_ARGV, ident, root, home, "", str(os.getpid())],
                       os.environ, file_actions=actions, setsid=True)
    except OSError:
        pass


def _open_fds() -> list[int]:
    """This process's open descriptors (the listing's own, closed by then, left out)."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            os.fstat(int(name))
        except OSError:
            continue
        found.append(int(name))
    return found


def awaits_start(ident: str, client: int) -> bool:
    """In a server started in the background by `client` (a pid): wait until that command has
    ended (at most `_AFTER_WAIT_S`, for a client that starts it before its command is done: a
    long `mcpp run` does not hold the next build back; `mcpp` starts it at its end), so
    that the server's start takes no CPU from the build's compiles. False when a server of
    `ident` listens by then (another command's won the name): this one has nothing to do."""
    try:
        pidfd = os.pidfd_open(client)
    except OSError:  # gone already
        pidfd = None
    if pidfd is not None:
        wait_readable(pidfd, _AFTER_WAIT_S)
    try:
        sock = connect(ident)
    except Unsafe:  # the server's own start says why it cannot listen
        return True
    if sock is None:
        return True
    sock.close()
    return False


def wait_readable(fd: int, seconds: float) -> None:
    """Wait until `fd` is readable (a byte, or its end) or `seconds` pass, then close it."""
    import select

    try:
        waiting = select.poll()
        waiting.register(fd, select.POLLIN)
        waiting.poll(seconds * 1000)
    finally:
        os.close(fd)


def _start(ident: str, root: str, home: str) -> "_socket.socket":
    """Start a server in its own session (it outlives this command) and wait for its socket."""
    import subprocess

    try:
        os.makedirs(server_dir(home), exist_ok=True)
    except OSError:  # a home that cannot be written: the in-process build names the problem
        raise _Fallback() from None
    # The server writes a byte on `ready` once its socket listens, and the pipe ends (EOF) if it
    # exits first: the client waits exactly as long as the start takes (mostly the engine's
    # imports), where polling the socket with a growing delay would oversleep.
    ready_r, ready_w = os.pipe()
    try:
        with open(os.devnull, "r+b") as null:
            proc = subprocess.Popen([*SERVER_ARGV, ident, root, home, str(ready_w)], stdin=null,
                                    stdout=null, stderr=null, start_new_session=True, close_fds=True,
                                    pass_fds=(ready_w,), cwd=root)
    except BaseException:
        os.close(ready_r)
        raise
    finally:
        os.close(ready_w)
    wait_readable(ready_r, _START_WAIT_S)
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


def _wait(sock, signals: _Signals) -> dict:
    """The server's answer ({} when it went away without one), forwarding signals meanwhile."""
    signals.sock = sock
    try:
        reply = protocol.receive(sock)
    except (OSError, protocol.ProtocolError):
        reply = None
    finally:
        signals.sock = None
        sock.close()
    return reply or {}


def _say(line: str) -> None:
    """A line on stderr, which may be a terminal that hung up."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def request_once(ident: str, message: dict, timeout: float | None = None) -> dict | None:
    """A one-shot request (`status`, `stop`, `info`) to a running server; None when none runs
    (or none answers within `timeout` seconds). Raises Unsafe (see `connect`)."""
    sock = connect(ident)
    if sock is None:
        return None
    try:
        sock.settimeout(timeout)
        protocol.send(sock, message)
        return protocol.receive(sock)
    except (OSError, protocol.ProtocolError):
        return None
    finally:
        sock.close()
