"""The server loop: one thread, one selector, one forked child per build.

Single-threaded on purpose: the server forks, and a fork taken while another thread holds a
lock (the import lock, a logging handler's) leaves the child stuck on it. Everything the loop
waits on is a descriptor: the listening socket, each client connection (its Ctrl-C messages,
or its end), a pidfd per running build, and the watcher's inotify descriptor.

Builds of one workspace run as they would from several terminals: each child takes the build
lock of its target directory, so a second build waits ("Blocking waiting for file lock") and
the output says so exactly as in process.

A repeated `mcpp build` whose no-op record still holds (engine/noop.py) is answered here,
without a fork: a few thousand `stat` calls in a warm process, where the client alone would
pay for them plus its imports.
"""
from __future__ import annotations

import functools
import os
import selectors
import signal
import socket
import sys
import time
import traceback
from collections import deque
from stat import S_ISDIR
from dataclasses import dataclass, field
from typing import Callable

from mcpp.sandbox.lineage import inside_action

from .. import after_reply
from . import child, protocol
from .noop_watch import NoopWatch
from .source_watch import SourceWatch
from .paths import socket_address

IDLE_ENV = "MCPP_SERVER_IDLE"
DEFAULT_IDLE_S = 3 * 3600  # as Bazel's and Gradle's daemons: a working day's pauses, not a week's
_TICK_S = 5.0
_FORWARDED = {"INT": signal.SIGINT, "TERM": signal.SIGTERM, "HUP": signal.SIGHUP, "QUIT": signal.SIGQUIT}


@dataclass
class _Build:
    conn: socket.socket
    pid: int
    pidfd: int | None
    done: int | None = None  # the read end of the pipe the child reports its exit status on
    replied: bool = False
    started: float = field(default_factory=time.monotonic)


class Server:
    def __init__(self, ident: str, root: str, home: str, command: Callable[[list[str]], None],
                 hooks=None):
        self.ident, self.root, self.home = ident, root, home
        # The directories themselves, not their names: a home or workspace moved aside and made
        # again under the same path (`mv ~/.mcpp ~/.mcpp.old`) is another one, which this
        # server's memory (its plan, proofs, what the stores hold) does not describe.
        self.places = _places(root, home)
        self.command = command
        self.hooks = hooks  # the warm state (warm.py): told when a build starts and ends
        self.identity = protocol.identity()
        self.sources = SourceWatch(protocol.source_dirs())  # before the digest: no write falls between
        self.version = protocol.version()
        self.started = time.time()
        self.builds_served = 0
        self.noops_answered = 0
        self.noops = NoopWatch()
        if hooks is not None:
            hooks.share(self.noops)
        self.idle_s = _idle_seconds()
        self.running: dict[int, _Build] = {}
        self.stopping = False
        self.last_active = time.monotonic()
        self.selector = selectors.DefaultSelector()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # What a finished build leaves the server to do (warm.py's after_build: reading its
        # hand-off, proving its knowledge's files: 40 ms at 1,000 units), done when no event
        # waits: a request that comes first is served first, with what the server held before.
        self.later: deque[Callable[[], None]] = deque()
        # Tasks for after the first build has started (`main`'s `later`): not before it.
        self.after_first_build: tuple[Callable[[], None], ...] = ()

    # -- life cycle ---------------------------------------------------------------------------

    def bind(self) -> bool:
        try:
            self.listener.bind(socket_address(self.ident))
        except OSError:  # another server of this workspace won the race
            return False
        self.listener.listen(64)
        self.listener.setblocking(False)
        self.selector.register(self.listener, selectors.EVENT_READ, ("accept", None))
        if self.noops.fileno() is not None:
            self.selector.register(self.noops.fileno(), selectors.EVENT_READ, ("noop_watch", None))
        if self.hooks is not None and self.hooks.fileno() is not None:
            self.selector.register(self.hooks.fileno(), selectors.EVENT_READ, ("watcher", None))
        return True

    def serve(self) -> None:
        while True:
            if self.stopping and not self.running:
                self._run_later()  # each takes its build's hand-off file away
                return
            if not self.running and not self.stopping and self._idle_for() > self.idle_s:
                log("idle: exiting")
                self._run_later()
                return
            events = self.selector.select(0 if self.later else self._timeout())
            for key, _ in events:
                kind, data = key.data
                try:
                    getattr(self, "_on_" + kind)(key.fileobj, data)
                except Exception:  # noqa: BLE001 - one bad request must not take the server down
                    log(traceback.format_exc())
            if not events and self.later:
                self._run_later(1)
            self._reap_polled()
            if not self.stopping and self._gone():
                log("workspace, home or installed sources changed: exiting")
                self._stop_listening()

    def _run_later(self, n: int | None = None) -> None:
        """Run `n` of the tasks left for when nothing waits (all of them: None)."""
        while self.later and n != 0:
            task = self.later.popleft()
            n = None if n is None else n - 1
            try:
                task()
            except Exception:  # noqa: BLE001 - the warm state is an optimisation; builds run anyway
                log(traceback.format_exc())

    def _timeout(self) -> float:
        if any(b.pidfd is None for b in self.running.values()):
            return 0.05
        return _TICK_S

    def _idle_for(self) -> float:
        return time.monotonic() - self.last_active

    def _gone(self) -> bool:
        """Nothing left to serve: the workspace or home is gone, or mcpp was upgraded."""
        now = time.monotonic()
        if now - getattr(self, "_checked", 0.0) < _TICK_S:
            return False
        self._checked = now
        return self._moved() or not self._current()

    def _moved(self) -> bool:
        """Whether the workspace or the home is gone, or another directory now has its path."""
        return _places(self.root, self.home) != self.places

    def _current(self) -> bool:
        """Whether the installed sources are still the ones this server runs."""
        return self.sources.quiet() or protocol.version() == self.version

    def _stop_listening(self) -> None:
        """Free the socket name at once (a new server may bind it); finish the running builds."""
        if self.stopping:
            return
        self.stopping = True
        try:
            self.selector.unregister(self.listener)
        except (KeyError, ValueError):
            pass
        self.listener.close()

    # -- events -------------------------------------------------------------------------------

    def _on_accept(self, listener, _data) -> None:
        try:
            conn, _ = listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        self.last_active = time.monotonic()
        if protocol.peer_uid(conn) != os.getuid():
            conn.close()
            return
        conn.setblocking(True)
        conn.settimeout(10)
        try:
            request, fds = protocol.receive_with_fds(conn)
        except (OSError, protocol.ProtocolError):
            conn.close()
            return
        conn.settimeout(None)
        if request is None:
            conn.close()
            return
        if inside_action(protocol.peer_pid(conn), (os.getpid(),)):
            # An action (under dir it can reach this socket) may not have the server build or
            # run anything for it: that would outlive the action (sandbox/lineage.py). The
            # client then builds in its own process, inside the action, as under bwrap.
            for fd in fds:
                os.close(fd)
            self._reply(conn, {"refused": "the mcpp server takes no request from inside a build action"})
            return
        op = request.get("op")
        if op == "build":
            self._start_build(conn, request, fds)
            return
        for fd in fds:
            os.close(fd)
        if op == "status":
            self._reply(conn, self.status())
        elif op == "stop":
            self._reply(conn, {"stopping": True, "running": len(self.running)})
            self._stop_listening()
        else:
            self._reply(conn, {"error": f"unknown request {op!r}"})

    def _reply(self, conn: socket.socket, message: dict) -> None:
        try:
            protocol.send(conn, message)
        except OSError:
            pass
        conn.close()

    def status(self) -> dict:
        self._run_later()  # what the server holds once every finished build is taken in
        info = {"pid": os.getpid(), "version": self.version, "root": self.root,
                "uptime_s": round(time.time() - self.started, 1), "builds": self.builds_served,
                "noops_answered": self.noops_answered, "noops_from_watch": self.noops.answered_from_watch,
                "running": len(self.running), "idle_exit_s": self.idle_s, "memory_kb": _rss_kb()}
        if self.hooks is not None:
            info.update(self.hooks.status())
        return info

    def _start_build(self, conn: socket.socket, request: dict, fds: list[int]) -> None:
        if request.get("identity") != self.identity or not self._current():
            self._answer(conn, fds, {"restart": "version"})
            self._stop_listening()
            return
        if self._moved():  # checked on each request: `_gone` looks only every few seconds
            log("workspace or home replaced: a new server takes over")
            self._answer(conn, fds, {"restart": "moved"})
            self._stop_listening()
            return
        if request.get("root") != self.root or request.get("home") != self.home:
            self._answer(conn, fds, {"refused": f"the mcpp server named for this workspace serves {self.root}"})
            return
        if self._answer_noop(request, fds):
            self.noops_answered += 1
            self._answer(conn, fds, {"exit": 0})
            return
        if self.hooks is not None:
            try:
                self.hooks.before_fork(request)
            except Exception:  # noqa: BLE001 - the warm state is an optimisation; the build runs anyway
                log(traceback.format_exc())
        done_r, done_w = os.pipe2(os.O_CLOEXEC)
        pid = os.fork()
        if pid == 0:
            try:
                self._in_child()
                conn.close()
                os.close(done_r)
                code = child.run(request, fds, self.command, self.hooks.child_ready if self.hooks else None)
                # The build is over for the user (its output flushed): the client gets its exit
                # status now, not after the hand-off below and this process's teardown.
                os.write(done_w, bytes([code & 0xFF]))
                if self.hooks is not None:
                    self.hooks.child_done()
                after_reply.run(log)
            except BaseException:  # noqa: BLE001 - the child could not become the client's process:
                # die as a crash does, so the client warns once and builds in process
                log(traceback.format_exc())
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(code)
        os.close(done_w)
        if self.hooks is not None:
            self.hooks.forked(pid)
        for fd in fds:
            os.close(fd)
        self.builds_served += 1
        self.later.extend(self.after_first_build)
        self.after_first_build = ()
        try:
            pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            pidfd = None
        build = _Build(conn, pid, pidfd, done_r)
        self.running[pid] = build
        self.selector.register(conn, selectors.EVENT_READ, ("client", build))
        self.selector.register(done_r, selectors.EVENT_READ, ("done", build))
        if pidfd is not None:
            self.selector.register(pidfd, selectors.EVENT_READ, ("exited", build))

    def _answer(self, conn: socket.socket, fds: list[int], message: dict) -> None:
        """Answer a build request without a build process (the client's descriptors closed)."""
        for fd in fds:
            os.close(fd)
        self._reply(conn, message)

    def _answer_noop(self, request: dict, fds: list[int]) -> bool:
        """Print the `Finished` line of a no-op for the client, when its record holds."""
        if len(fds) < 2:
            return False
        start = time.monotonic() - max(0.0, time.time() - request.get("started", time.time()))
        try:
            text = self.noops.answer(request["argv"], request["cwd"], request["env"], os.isatty(fds[1]), start)
            if text:
                data = text.encode("utf-8", "surrogateescape")
                while data:
                    data = data[os.write(fds[1], data):]
        except Exception:  # noqa: BLE001 - only a shortcut: the build child decides instead
            log(traceback.format_exc())
            return False
        return text is not None

    def _in_child(self) -> None:
        """Drop every descriptor the server holds, so no build keeps the socket name bound or
        a client's connection open after the server is gone."""
        self.selector.close()
        self.noops.close()
        self.sources.close()
        if not self.stopping:
            self.listener.close()
        for build in self.running.values():
            build.conn.close()
            if build.pidfd is not None:
                os.close(build.pidfd)
            if build.done is not None:
                os.close(build.done)
        if self.hooks is not None:
            self.hooks.in_child()

    def _on_noop_watch(self, _fd, _data) -> None:
        self.noops.drain()

    def _on_watcher(self, _fd, _data) -> None:
        self.hooks.on_readable()

    def _on_client(self, conn, build: _Build) -> None:
        try:
            message = protocol.receive(conn)
        except (OSError, protocol.ProtocolError):
            message = None
        if message is None:  # the client is gone (killed): cancel its build quietly
            self.selector.unregister(conn)
            _signal_group(build.pid, signal.SIGTERM)
            return
        sig = _FORWARDED.get(message.get("signal", ""))
        if sig is not None:
            _signal_group(build.pid, sig)

    def _on_done(self, fd, build: _Build) -> None:
        """The child reported its exit status (or closed the pipe by dying first)."""
        if build.done != fd:  # closed already, by its exit handled in the same round
            return
        try:
            status = os.read(fd, 1)
        except OSError:
            status = b""
        self._close_done(build)
        if status:
            self._reply_once(build, {"exit": status[0]})

    def _close_done(self, build: _Build) -> None:
        if build.done is not None:
            try:
                self.selector.unregister(build.done)
            except (KeyError, ValueError):
                pass
            os.close(build.done)
            build.done = None

    def _reply_once(self, build: _Build, message: dict) -> None:
        if build.replied:
            return
        build.replied = True
        try:
            self.selector.unregister(build.conn)  # its end is no longer a cancellation
        except (KeyError, ValueError):
            pass
        self._reply(build.conn, message)

    def _on_exited(self, pidfd, build: _Build) -> None:
        self._finish(build)

    def _reap_polled(self) -> None:
        for build in [b for b in self.running.values() if b.pidfd is None]:
            self._finish(build, block=False)

    def _finish(self, build: _Build, block: bool = True) -> None:
        pid, status = os.waitpid(build.pid, 0 if block else os.WNOHANG)
        if pid == 0:
            return
        del self.running[build.pid]
        if build.pidfd is not None:
            self.selector.unregister(build.pidfd)
            os.close(build.pidfd)
        self._close_done(build)
        self.last_active = time.monotonic()
        if os.WIFSIGNALED(status):
            message = {"crashed": os.WTERMSIG(status)}
        else:
            message = {"exit": os.WEXITSTATUS(status)}
        self._reply_once(build, message)
        if self.hooks is not None:  # after the reply, and after any request already waiting
            self.later.append(functools.partial(self.hooks.after_build, build.pid, message))


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def _idle_seconds() -> float:
    try:
        return float(os.environ.get(IDLE_ENV, DEFAULT_IDLE_S))
    except ValueError:
        return DEFAULT_IDLE_S


def _rss_kb() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


_LOG = None


def log(text: str) -> None:
    if _LOG is not None:
        _LOG.write(f"{time.strftime('%H:%M:%S')} [{os.getpid()}] {text.rstrip()}\n")
        _LOG.flush()


def _places(*paths: str) -> tuple[tuple[int, int] | None, ...]:
    """The directory each path names now, as (device, inode); None where there is none."""
    out = []
    for path in paths:
        try:
            st = os.stat(path)
            out.append((st.st_dev, st.st_ino) if S_ISDIR(st.st_mode) else None)
        except OSError:
            out.append(None)
    return tuple(out)


def main(ident: str, root: str, home: str, command: Callable[[list[str]], None], hooks=None,
         ready: int | None = None, later: tuple[Callable[[], None], ...] = ()) -> None:
    """Detached already (the client starts it in a new session); runs until idle or stopped.
    `ready`: a pipe to write one byte on once the socket listens (closed in any case); `later`:
    tasks for when the first build has started and no request waits (imports it may not need)."""
    global _LOG
    from .paths import log_file

    try:
        os.makedirs(os.path.dirname(log_file(ident, home)), exist_ok=True)
        _LOG = open(log_file(ident, home), "a", buffering=1)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        server = Server(ident, root, home, command, hooks)
        server.after_first_build = later
        if not server.bind():
            log("another server holds the socket: exiting")
            return
        if ready is not None:
            try:
                os.write(ready, b"1")
            except OSError:  # the client went away meanwhile: serve the next one
                pass
    finally:
        if ready is not None:
            os.close(ready)  # the client stops waiting: it connects to whichever server listens
    log(f"serving {root} (version {server.version})")
    try:
        server.serve()
    finally:
        log("exit")
    sys.exit(0)
