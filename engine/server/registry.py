"""The servers this user runs, found by their sockets and asked what they are
(`mcpp server list`, `mcpp server stop --all`, a new server's least-recently-used cap).

Every server listens on `<socket dir>/<id>.sock` (paths.py) and writes its log to
`$MCPP_HOME/server/<id>.log`: the sockets name every server of this user, and the logs of a home
narrow them to that home's without asking the others. A socket whose server died answers no
connection and is left out. Each server answers `info` without waiting for work it has left
for later, and the question does not count as use (its idle time goes on).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

from .client import SERVER_ARGV, connect, request_once
from .paths import server_dir, socket_dir

ASK_S = 2.0  # how long one server may take to answer


@dataclass(frozen=True)
class Running:
    ident: str
    root: str  # its workspace
    home: str
    pid: int
    memory_kb: int  # resident memory of the server process (its build children are apart)
    idle_s: float  # since its last build ended (0 while it builds)
    running: int  # builds running now


def idents(home: str | None = None) -> list[str]:
    """The ids with a socket (of `home`'s servers only, when given). Raises paths.Unsafe where
    the socket directory is not this user's alone."""
    try:
        names = os.listdir(socket_dir())
    except FileNotFoundError:  # no server has run as this user since boot
        return []
    found = sorted(n[:-len(".sock")] for n in names if n.endswith(".sock"))
    if home is None:
        return found
    try:
        logged = {n[:-len(".log")] for n in os.listdir(server_dir(home)) if n.endswith(".log")}
    except OSError:
        return []
    return [i for i in found if i in logged]


def servers(home: str | None = None, but: str | None = None) -> list[Running]:
    """The servers answering now (of `home` only, when given; not server `but`, which may be
    the one asking), least recently used first."""
    out = []
    for ident in idents(home):
        if ident == but:
            continue
        info = request_once(ident, {"op": "info"}, ASK_S)
        if not info or (home is not None and info.get("home") != home):
            continue
        try:
            out.append(Running(ident, str(info["root"]), str(info["home"]), int(info["pid"]),
                               int(info.get("memory_kb", 0)), float(info.get("idle_s", 0.0)),
                               int(info.get("running", 0))))
        except (KeyError, TypeError, ValueError):  # another version's answer: not one to list
            continue
    return sorted(out, key=lambda s: -s.idle_s)


def stop(server: Running, reason: str = "asked") -> bool:
    """Ask `server` to exit once its running builds end; whether it took the request."""
    reply = request_once(server.ident, {"op": "stop", "reason": reason}, ASK_S)
    return bool(reply and reply.get("stopping"))


def wait_gone(pids: list[int], seconds: float) -> list[int]:
    """Wait up to `seconds` for the processes `pids` to exit; those still running."""
    deadline = time.monotonic() + seconds
    left = list(pids)
    while left:
        left = [p for p in left if alive(p)]
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(0.02)
    return left


def starting(home: str, ident: str | None = None) -> list[tuple[str, int]]:
    """(id, pid) of this user's server processes of `home` (of server `ident` only, when given),
    listening or not yet: the process a command starts when it ends (client.py's
    `_start_in_background`) imports the engine, then listens, and a `stop` asked meanwhile would
    find no socket and leave it to come up behind the asker (`mcpp build && mcpp server stop` in
    a script). Found by the command line the client gives it, in /proc: no file is written on a
    build's way for this."""
    uid = os.getuid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.stat(f"/proc/{name}").st_uid != uid:
                continue
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:  # gone meanwhile
            continue
        # client.py's SERVER_ARGV (the interpreter's path aside), then ident, root, home, ready, after
        n = len(_ARGV_START)
        if argv[1:n] != _ARGV_START[1:] or len(argv) < n + 3 or argv[n + 2] != os.fsencode(home):
            continue
        if ident is None or argv[n] == ident.encode():
            found.append((argv[n].decode(), int(name)))
    return found


def await_listening(ident: str, pid: int, seconds: float) -> bool:
    """Wait up to `seconds` until server `ident` listens (True) or process `pid` has exited
    without it (False: it found another server listening, or could not start)."""
    deadline = time.monotonic() + seconds
    while True:
        sock = connect(ident)
        if sock is not None:
            sock.close()
            return True
        if not alive(pid) or time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


_ARGV_START = [os.fsencode(a) for a in SERVER_ARGV]


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, exited and not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b") ", 1)[1][:1] != b"Z"
    except (OSError, IndexError):
        return False
