"""A build child forked before its request comes: the spare.

A request served by a fresh fork waits for the fork (a few milliseconds for a server holding a
plan and state files), for the child to drop the server's descriptors, and above all for the
sandbox's first worker (bwrap and the executor's Python: 15-20 ms), which the child can start only
once it exists. So while the server is idle, with nothing left over from the last build, it
forks one child ahead (`Spare`): that child drops the server's descriptors, starts the worker of
the sandbox the last successful build used (engine/exec/sandbox_warm_up.py), and waits on a
private socket pair. The next build request goes to it: the client's descriptors (SCM_RIGHTS),
the request, and what the server's watcher says changed since the last build of that request
(`warm.Hooks.changes`, a few paths; the spare holds the rest of the server's memory already,
as a fork's copy). It then runs the build exactly as a freshly forked child does.

A spare holds a copy of the server's memory as it was when forked. It is used only while that
memory is still the server's (`generation`: warm.py counts each change of what it keeps between
builds); one forked before a change is ended and the request gets a fresh fork, as is a request
whose hand-over fails in any way (the spare died, the socket is full, it did not say in time
that it holds the request: it says so once it has read it whole). Nothing a client sends
reaches the spare but through the server, which checked the request; the socket pair is made by
the server and held only by the two processes.
"""
from __future__ import annotations

import os
import pickle
import signal
import socket
import struct
from dataclasses import dataclass

_LENGTH = struct.Struct("!Q")
HAND_S = 2.0  # how long the server waits for a spare to take a request before it forks instead
# The spare's answer once it holds the whole request (`wait`). Until then it may die with the
# request unread (killed, out of memory), and the server, which cannot tell that death from one
# during the build, would answer the client "died; not run again" instead of forking for it.
TAKEN = b"\x01"


@dataclass
class Spare:
    """The server's side of one spare child."""
    pid: int
    pidfd: int | None
    sock: socket.socket  # the server's end of the pair
    done: int  # the read end of the pipe the child reports its exit status on
    generation: int  # warm.Hooks.generation when it was forked
    silent: bool = False  # given a request, it said neither that it took it nor anything else

    def hand(self, request: dict, fds: list[int], changes: object) -> bool:
        """Give the spare a request, its descriptors and the watcher's changes, and wait (a
        moment: it waits for them) until it says it holds them all (`TAKEN`); False when it did
        not take them (it is then of no use: `end` it, and fork for the request)."""
        payload = pickle.dumps((request, changes), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self.sock.settimeout(HAND_S)
            socket.send_fds(self.sock, [_LENGTH.pack(len(payload))], fds)
            self.sock.sendall(payload)
            answer = self.sock.recv(len(TAKEN))  # b"": it died, or ended, without taking them
        except TimeoutError:
            self.silent = True
            return False
        except OSError:
            return False
        return answer == TAKEN

    def end(self) -> None:
        """Ask a spare that got no request to exit (it removes its sandbox first), and close
        the server's ends of the pair and the pipe; the caller reaps it. One that stayed
        `silent` is killed: it may hold the request whole, with SIGTERM held as a build's
        (`wait`), and would build it beside the child forked for it."""
        try:
            os.kill(self.pid, signal.SIGKILL if self.silent else signal.SIGTERM)
        except ProcessLookupError:
            pass
        self.sock.close()
        os.close(self.done)


# The signals a client forwards to its build (daemon.py): held from the moment a request is
# handed over until the build process has its handlers (server/child.py `run` lets them through),
# so one sent meanwhile interrupts the build instead of ending the spare or going unseen.
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Ended(BaseException):
    """The server asked the waiting spare to exit (SIGTERM), or died."""


def _ended(_signum, _frame):
    raise Ended()


def ending_on_sigterm() -> None:
    """From its first moment a spare ends on SIGTERM (the server's, or the server's death)."""
    signal.signal(signal.SIGTERM, _ended)


def wait(sock: socket.socket) -> tuple[dict, list[int], object]:
    """In the spare: wait for the request; (request, descriptors, changes). `Ended` when the
    server asks it to exit or closes the pair before a request came. Once a request has come,
    `FORWARDED` signals are held (blocked, and no longer ignored as the server ignores them)
    until the build process lets them through."""
    head, fds, _flags, _addr = socket.recv_fds(sock, _LENGTH.size, 3)
    if len(head) != _LENGTH.size:
        for fd in fds:
            os.close(fd)
        raise Ended()
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    for signum in FORWARDED:
        signal.signal(signum, signal.SIG_DFL)
    (size,) = _LENGTH.unpack(head)
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            for fd in fds:
                os.close(fd)
            raise Ended()
        chunks.append(chunk)
        left -= len(chunk)
    try:
        sock.sendall(TAKEN)  # the server forks for the request no more (`Spare.hand`)
    except OSError:  # the server is gone: the client waits for this build all the same
        pass
    sock.close()
    request, changes = pickle.loads(b"".join(chunks))
    return request, fds, changes
