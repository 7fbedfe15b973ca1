"""The server loop: one thread, one selector, one forked child per build.

Single-threaded on purpose: the server forks, and a fork taken while another thread holds a
lock (the import lock, a logging handler's) leaves the child stuck on it. Everything the loop
waits on is a descriptor: the listening socket, each client connection (its request, its
Ctrl-C messages, or its end), a pidfd per running build, and the watcher's inotify descriptor.
No read from a client ever blocks the loop: connections are non-blocking, a request is
gathered as its bytes come (`protocol.Incoming`), and one not complete within `REQUEST_S` is
dropped; the descriptors a request carries are closed on every path but the build child's.
What unfinished requests can hold is bounded: `MAX_INTAKES` connections of at most
`protocol.MAX_REQUEST` bytes each; out of descriptors, the server stops accepting for a moment.

The socket lives in a directory only this user can make names in (`paths.socket_path`), and
the server holds `<id>.lock` there while it owns the name, so a server that died leaves a
file the next one removes, never a name another user could take.

Builds of one workspace run as they would from several terminals: each child takes the build
lock of its target directory, so a second build waits ("Blocking waiting for file lock") and
the output says so exactly as in process.

A repeated `mcpp build` whose no-op record still holds (engine/state/noop.py) is answered here,
without a fork: a few thousand `stat` calls in a warm process, where the client alone would
pay for them plus its imports.
"""
from __future__ import annotations

import fcntl
import functools
import gc
import os
import select
import selectors
import signal
import socket
import sys
import time
import traceback
from collections import deque
from collections.abc import Iterator
from stat import S_ISDIR
from dataclasses import dataclass, field
from typing import Callable

from mcpp.sandbox.lineage import inside_action

from . import child, limits, own_pages, protocol, registry
from . import spare as spares
from ..core.config_file import ConfigError
from ..exec.sandbox_warm_up import SandboxWarmUp
from .child_memory import ChildMemory
from .noop_watch import NoopWatch
from .paths import Unsafe, lock_path, socket_path
from .sandbox_ahead import SandboxesAhead
from .spare import Spare
from .source_watch import SourceWatch

_TICK_S = 5.0
REQUEST_S = 5.0  # how long a connection may take to send its request (a client sends it at once)
# Connections whose request has not fully come, at most: each holds a descriptor, up to three
# received ones and `protocol.MAX_REQUEST` bytes, so this bounds what connections that never
# finish a request can take from the server. One more arriving drops the oldest: a client sends
# its request with its connect, so the oldest is the one least likely to be a client's.
MAX_INTAKES = 16
# What a build child writes on its status pipe after its exit status, once its hand-off is
# written (`Server._build_here`): the server takes it in then, not at the child's exit.
HANDED_OFF = b"h"
_PAUSE_S = 0.5  # how long accepting waits when the server is out of descriptors
# How long after the last build child began or ended the server forks a spare (spare.py): long
# enough that a script's next build, coming at once, finds no fork in the making; short enough
# that one run a moment later (an IDE's JSON build after a plain one) finds the spare up.
SPARE_IDLE_S = 0.02
_FORWARDED = {"INT": signal.SIGINT, "TERM": signal.SIGTERM, "HUP": signal.SIGHUP, "QUIT": signal.SIGQUIT}


@dataclass
class _Build:
    conn: socket.socket
    pid: int
    pidfd: int | None
    done: int | None = None  # the read end of the pipe the child reports its exit status on, then its hand-off
    request: dict | None = None  # what the client asked (argv, cwd, env)
    replied: bool = False
    status: int | None = None  # the exit status the child reported
    taken_in: bool = False  # what it handed off is being taken in (`_take_in`)
    started: float = field(default_factory=time.monotonic)
    # its Ctrl-C messages: small frames, no descriptors
    incoming: protocol.Incoming = field(default_factory=lambda: protocol.Incoming(max_frame=1 << 12))

    @property
    def winding_down(self) -> bool:
        """Its client has the answer and its hand-off is queued to be taken in: what the child
        still does is its teardown (engine/exec/after_reply.py), which the server need not await."""
        return self.replied and self.taken_in


@dataclass
class _Intake:
    """A connection whose request has not fully arrived."""
    conn: socket.socket
    deadline: float
    incoming: protocol.Incoming = field(default_factory=lambda: protocol.Incoming(max_fds=3))


class Server:
    def __init__(self, ident: str, root: str, home: str, command: Callable[..., None],
                 hooks=None, log: Callable[[str], None] = lambda text: None):
        self.ident, self.root, self.home = ident, root, home
        self.log = log  # the server's log file (`main`); nothing by default
        # The directories themselves, not their names: a home or workspace moved aside and made
        # again under the same path (`mv ~/.mcpp ~/.mcpp.old`) is another one, which this
        # server's memory (its plan, proofs, what the stores hold) does not describe.
        self.places = _places(root, home)
        # command(argv, memory=..., started=...): a build child's `mcpp`, given its BuildMemory and
        # the moment the client's command began (engine/core/command_clock.py)
        self.command = command
        self.hooks = hooks  # the warm state (warm.py): told when a build starts and ends
        # what a client of this installation sends: the Python client's, the native client's
        self.identity, self.native_identity = protocol.identity(), protocol.native_identity()
        self.sources = SourceWatch(protocol.source_dirs())  # before the digest: no write falls between
        self.version = protocol.version()
        self.started = time.time()
        self.builds_served = 0
        self.builds_from_spare = 0
        self.noops_answered = 0
        # the build child forked ahead of the next request (spare.py), and those ended, not yet reaped
        self.spare: Spare | None = None
        self.spares_ending: list[Spare] = []
        # the sandbox begun for the next fork to take, and the workers of those taken (sandbox_ahead.py)
        self.aheads = SandboxesAhead(log)
        self.noops = NoopWatch()
        if hooks is not None:
            hooks.share(self.noops)
        self.limits, self.problem = _limits(home)
        self.running: dict[int, _Build] = {}
        self.intakes: dict[int, _Intake] = {}  # connection descriptor -> its request so far
        self.lock: int | None = None  # `<id>.lock`, held while this server owns the socket name
        self.accepting = False  # the listener is registered with the selector
        self.paused_until = 0.0  # accepting stopped (out of descriptors) until then
        self.stopping = False
        self.last_active = time.monotonic()
        # When a build child last began or ended: a spare waits `SPARE_IDLE_S` after it. A no-op
        # answered here forks nothing, and leaves the spare's clock alone.
        self.last_child = time.monotonic()
        self.selector = selectors.DefaultSelector()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # What a finished build leaves the server to do (warm.py's after_build: reading its
        # hand-off, proving its knowledge's files), done when no event
        # waits: a request that comes first is served first, with what the server held before.
        self.later: deque[Callable[[], None]] = deque()
        # Tasks for after the first build has started (`main`'s `later`): not before it.
        self.after_first_build: tuple[Callable[[], None], ...] = ()

    # -- life cycle ---------------------------------------------------------------------------

    def bind(self) -> bool:
        """Own the socket name: take the lock, remove a file a dead server left, listen. False
        when another server of this workspace holds it, or the socket directory is not private."""
        try:
            path = socket_path(self.ident, create=True)
            lock = os.open(lock_path(self.ident), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except (Unsafe, OSError) as e:
            self.log(f"cannot listen: {e}")
            return False
        deadline = time.monotonic() + 2.0  # a server stepping aside releases the lock once it stops listening
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() > deadline or _listening(path):
                    os.close(lock)
                    self.log("another server holds the socket")
                    return False
                time.sleep(0.01)
        self.lock = lock
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        old_umask = os.umask(0o077)
        try:
            self.listener.bind(path)
        finally:
            os.umask(old_umask)
        self.listener.listen(64)
        self.listener.setblocking(False)
        self._accept(True)
        self.later.append(self._keep_within_cap)
        if self.noops.fileno() is not None:
            self.selector.register(self.noops.fileno(), selectors.EVENT_READ, ("noop_watch", None))
        if self.hooks is not None and self.hooks.fileno() is not None:
            self.selector.register(self.hooks.fileno(), selectors.EVENT_READ, ("watcher", None))
        return True

    def serve(self) -> None:
        while self._turn():
            pass

    def _turn(self) -> bool:
        """One round of the server's loop: what is ready is handled (or one deferred task run);
        False when the server is to exit."""
        if self.stopping and not self.running:
            self._run_later()  # each takes its build's hand-off file away
            return False
        if not self.running and not self.stopping and self._idle_for() > self.limits.idle_s:
            self.log("idle: exiting")
            self._run_later()
            return False
        # Deferred work waits while a client is sending its request: it has connected (a
        # build right after the last one, as a script runs them), and its request comes
        # within the millisecond or two the client takes to write it.
        runs_later = bool(self.later) and not self.intakes
        events = self.selector.select(0 if runs_later else self._timeout())
        self._expire_intakes()
        if not self.accepting and time.monotonic() >= self.paused_until:
            self._accept(True)
        for key, _ in events:
            kind, data = key.data
            try:
                getattr(self, "_on_" + kind)(key.fileobj, data)
            except Exception:  # noqa: BLE001 - one bad request must not take the server down
                self.log(traceback.format_exc())
        if not events and runs_later:
            self._run_later(1)
        if not self.later:
            self._keep_spare()
        self._reap_polled()
        if not self.stopping and self._gone():
            self.log("workspace, home or installed sources changed: exiting")
            self._stop_listening()
        return True

    def _run_later(self, n: int | None = None) -> None:
        """Run `n` of the tasks left for when nothing waits (all of them: None)."""
        while self.later and n != 0:
            task = self.later.popleft()
            n = None if n is None else n - 1
            try:
                task()
            except Exception:  # noqa: BLE001 - the warm state is an optimisation; builds run anyway
                self.log(traceback.format_exc())

    def _in_steps(self, steps: Iterator[None]) -> None:
        """Run one step of a task made of several (a generator); the next runs on a later turn,
        ahead of the tasks left after it but behind a request that came meanwhile."""
        for _ in steps:
            self.later.appendleft(functools.partial(self._in_steps, steps))
            return

    def _timeout(self) -> float:
        if any(b.pidfd is None for b in self.running.values()) or any(s.pidfd is None for s in self.spares_ending):
            return 0.05
        if not self.accepting and not self.stopping:
            return max(0.0, min(_TICK_S, self.paused_until - time.monotonic()))
        if self.intakes:
            soonest = min(i.deadline for i in self.intakes.values())
            return max(0.0, min(_TICK_S, soonest - time.monotonic()))
        if self._spare_wanted():  # wake when a spare is due
            return max(0.0, min(_TICK_S, SPARE_IDLE_S - self._since_child()))
        return _TICK_S

    def _expire_intakes(self) -> None:
        """Drop the connections that did not send their request in time."""
        now = time.monotonic()
        for intake in [i for i in self.intakes.values() if i.deadline <= now]:
            self._drop_intake(intake)

    def _end_intake(self, intake: _Intake) -> None:
        self.intakes.pop(intake.conn.fileno(), None)
        try:
            self.selector.unregister(intake.conn)
        except (KeyError, ValueError):
            pass

    def _drop_intake(self, intake: _Intake) -> None:
        self._end_intake(intake)
        intake.incoming.close()
        intake.conn.close()

    def _idle_for(self) -> float:
        return time.monotonic() - self.last_active

    def _since_child(self) -> float:
        """Seconds since a build child last began or ended (the spare's clock)."""
        return time.monotonic() - self.last_child

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
        """Free the socket name at once (a new server may take it); finish the running builds.
        The socket file goes while the lock still says it is this server's, so a server that
        stopped leaves none for `mcpp server list` to try (one that died leaves its file to the
        next server of the name, which removes it before it binds). The listener closes before
        the spare and the sandbox begun ahead are ended (which waits for their processes): a
        client that connected meanwhile would have its request dropped with the listener's
        queue (`mcpp server stop` then `mcpp build`: "the server stopped before the command
        finished"), where now it finds no server and starts its own."""
        if self.stopping:
            return
        self._accept(False)
        self.stopping = True
        self.listener.close()
        if self.lock is not None:
            try:
                os.unlink(socket_path(self.ident))
            except (OSError, Unsafe):
                pass
            os.close(self.lock)
            self.lock = None
        self._end_spare()
        self.aheads.close()

    # -- events -------------------------------------------------------------------------------

    def _accept(self, on: bool) -> None:
        """Start (or stop) taking connections from the listener."""
        if on == self.accepting or self.stopping:
            return
        if on:
            self.selector.register(self.listener, selectors.EVENT_READ, ("accept", None))
        else:
            self.selector.unregister(self.listener)
        self.accepting = on

    def _on_accept(self, listener, _data) -> None:
        try:
            conn, _ = listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:  # out of descriptors: the pending connection stays queued meanwhile
            self.log(f"cannot accept a connection ({e.strerror}): pausing {_PAUSE_S} s")
            self.paused_until = time.monotonic() + _PAUSE_S
            self._accept(False)
            return
        try:
            same_user = protocol.peer_uid(conn) == os.getuid()
        except OSError:
            same_user = False
        if not same_user:
            conn.close()
            return
        conn.setblocking(False)
        if len(self.intakes) >= MAX_INTAKES:
            self._drop_intake(min(self.intakes.values(), key=lambda i: i.deadline))
        intake = _Intake(conn, time.monotonic() + REQUEST_S)
        self.intakes[conn.fileno()] = intake
        self.selector.register(conn, selectors.EVENT_READ, ("request", intake))

    def _on_request(self, conn, intake: _Intake) -> None:
        """More of a request has come: once it is whole, serve it. The descriptors it carries
        are closed here whatever happens (a build child has its own copies)."""
        try:
            messages = intake.incoming.read(conn)
        except (OSError, protocol.ProtocolError):
            self._drop_intake(intake)
            return
        if not messages:
            return
        self._end_intake(intake)
        try:
            if len(messages) > 1:
                raise protocol.ProtocolError("more than one request")
            self._serve_request(conn, messages[0], intake.incoming.fds)
        except Exception:  # noqa: BLE001 - one bad request must not take the server down
            self.log(traceback.format_exc())
            if not any(b.conn is conn for b in self.running.values()):
                conn.close()
        finally:
            intake.incoming.close()

    def _serve_request(self, conn: socket.socket, request: dict, fds: list[int]) -> None:
        if inside_action(protocol.peer_pid(conn), (os.getpid(),)):
            # An action (under dir it can reach this socket) may not have the server build or
            # run anything for it: that would outlive the action (sandbox/lineage.py). The
            # client then builds in its own process, inside the action, as under bwrap. The
            # request's descriptors are closed by the caller.
            self._reply(conn, {"refused": "the mcpp server takes no request from inside a build action"})
            return
        op = request.get("op")
        if op == "build":
            self.last_active = time.monotonic()  # only a build is use: a question does not keep a server
            self._start_build(conn, request, fds)
        elif op == "status":
            self._reply(conn, self.status())
        elif op == "info":
            self._reply(conn, self.info())
        elif op == "stop":
            self.log(f"stop requested ({request.get('reason', 'asked')})")
            self._stop_listening()  # before the answer: whoever asked finds the name free once answered
            self._reply(conn, {"stopping": True, "running": len(self.running), "pid": os.getpid()})
        else:
            self._reply(conn, {"error": f"unknown request {op!r}"})

    def _reply(self, conn: socket.socket, message: dict) -> None:
        try:
            protocol.send(conn, message)
        except OSError:
            pass
        conn.close()

    def info(self) -> dict:
        """Who this server is and what it costs (`mcpp server list`): answered at once."""
        return {"pid": os.getpid(), "root": self.root, "home": self.home, "memory_kb": _rss_kb(),
                "idle_s": 0.0 if self.running else round(self._idle_for(), 1), "running": len(self.running),
                "idle_exit_s": self.limits.idle_s}

    def status(self) -> dict:
        self._run_later()  # what the server holds once every finished build is taken in
        self._keep_spare(now=True)  # ... and the spare it then keeps
        info = {"pid": os.getpid(), "version": self.version, "root": self.root, "home": self.home,
                "uptime_s": round(time.time() - self.started, 1), "builds": self.builds_served,
                "builds_from_spare": self.builds_from_spare, "spare_pid": self.spare.pid if self.spare else 0,
                "sandboxes_begun_ahead": self.aheads.begun, "sandboxes_handed_over": self.aheads.taken,
                "noops_answered": self.noops_answered, "noops_from_watch": self.noops.answered_from_watch,
                "files_watched": self.noops.files_watched,
                "running": len(self.running), "idle_s": self.info()["idle_s"], "idle_exit_s": self.limits.idle_s,
                "max_servers": self.limits.max_servers, "memory_kb": _rss_kb(),
                "objects_frozen": gc.get_freeze_count()}
        if self.hooks is not None:
            info.update(self.hooks.status())
        return info

    def _keep_within_cap(self) -> None:
        """At most `max-servers` servers of this home: ask the least recently used others to exit."""
        if self.stopping:
            return
        others = registry.servers(self.home, but=self.ident)
        for server in others[:max(0, len(others) + 1 - self.limits.max_servers)]:  # least recently used first
            self.log(f"{len(others) + 1} servers of this home, at most {self.limits.max_servers}: "
                     f"stopping the one of {server.root} (idle {server.idle_s:.0f} s, pid {server.pid})")
            registry.stop(server, f"least recently used of more than {self.limits.max_servers}")

    def _start_build(self, conn: socket.socket, request: dict, fds: list[int]) -> None:
        """Answer a build request, or fork its build child. `fds` stay the caller's to close."""
        identity, current = request.get("identity"), self._current()
        ours = identity in (self.identity, self.native_identity)
        # Each answer that ends this server comes once it stopped listening (as `stop`'s): a
        # client that acts on it at once must find the name free, not this server's queue,
        # which closing drops ("the server stopped before the command finished").
        if not current or not (ours or protocol.is_native(identity)):
            self.log("a client of another version or installation: making way for its server" if current
                     else "installed sources changed: making way for a server of them")
            self._stop_listening()
            self._reply(conn, {"restart": "version"})
            return
        if not ours:
            # Another installation's native client, or one that read its interpreter otherwise:
            # its Python client asks again with the identity that decides (protocol.py).
            self._reply(conn, {"refused": "the native client names another interpreter"})
            return
        if self._moved():  # checked on each request: `_gone` looks only every few seconds
            self.log("workspace or home replaced: a new server takes over")
            self._stop_listening()
            self._reply(conn, {"restart": "moved"})
            return
        problem = protocol.build_request_problem(request, fds)  # after the version: another's may differ
        if problem is not None:
            self._reply(conn, {"refused": f"malformed request: {problem}"})
            return
        if self.problem is not None:  # said to the client, who builds in process; the next one starts
            self._stop_listening()  # a server that reads the settings again
            self._reply(conn, {"refused": self.problem})
            return
        if request.get("root") != self.root or request.get("home") != self.home:
            self._reply(conn, {"refused": f"the mcpp server named for this workspace serves {self.root}"})
            return
        if self._answer_noop(request, fds):
            self.noops_answered += 1
            self._reply(conn, {"exit": 0})
            return
        self.last_child = time.monotonic()
        if self.hooks is not None:
            try:
                self.hooks.before_fork(request)
            except Exception:  # noqa: BLE001 - the warm state is an optimisation; the build runs anyway
                self.log(traceback.format_exc())
        if self._hand_to_spare(conn, request, fds):
            return
        done_r, done_w = os.pipe2(os.O_CLOEXEC)
        # the sandbox begun ahead, for a build that will probably run something (a no-op's would
        # end it after its reply, and the server begin another)
        ahead = self.aheads.take() if self.hooks is None or self.hooks.likely_work() else None
        pid = self._fork(ahead, done_r, done_w)
        if pid == 0:
            # Everything the child has from the server is left out of its garbage collections: a
            # full one would walk (and write to, copying each page) the server's whole heap. What
            # the build makes is collected as usual; the server's own collector is untouched.
            gc.freeze()
            code = 1
            try:
                memory = self._in_child()
                conn.close()
                os.close(done_r)
                child.prepare()
                if ahead is not None:
                    memory.adopt_sandbox(SandboxWarmUp(ahead.settings, ahead))
                code = self._build_here(memory, request, fds, done_w,
                                        self.hooks.child_ready if self.hooks else None)
            except BaseException:  # noqa: BLE001 - the child could not become the client's process:
                # die as a crash does, so the client warns once and builds in process
                self.log(traceback.format_exc())
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(code)
        os.close(done_w)
        self._handed_over(ahead)
        if self.hooks is not None:
            self.hooks.forked(pid)
        try:
            pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            pidfd = None
        self._track(_Build(conn, pid, pidfd, request=request), done_r)

    def _build_here(self, memory: ChildMemory, request: dict, fds: list[int], done_w: int,
                    ready: Callable[[], None] | None) -> int:
        """In a build child (forked for the request, or the spare it was handed to): run the
        build as the client's process, report its exit status, then what is left."""
        command = functools.partial(self.command, memory=memory, started=request["began"])
        code = child.run(request, fds, command, ready)
        if self.hooks is not None:
            self.hooks.child_answers()
        # The build is over for the user (its output flushed): the client gets its exit
        # status now, not after the hand-off below and this process's teardown.
        os.write(done_w, bytes([code & 0xFF]))
        if self.hooks is not None:
            self.hooks.child_done()
        # What the server keeps from this build is written: it takes it in now, while this
        # process tears its sandbox down, not at this process's exit, which a script's next
        # command would otherwise meet (the server's intake beside that build's start).
        try:
            os.write(done_w, HANDED_OFF)
        except OSError:  # the server is gone: nothing to tell
            pass
        memory.run_after_reply(self.log)
        return code

    def _track(self, build: _Build, done: int) -> None:
        """A build child has the request: its exit, exit status (on `done`) and client are watched."""
        build.done = done
        self.builds_served += 1
        self.later.extend(self.after_first_build)
        self.after_first_build = ()
        self.running[build.pid] = build
        self.selector.register(build.conn, selectors.EVENT_READ, ("client", build))
        self.selector.register(done, selectors.EVENT_READ, ("done", build))
        if build.pidfd is not None:
            self.selector.register(build.pidfd, selectors.EVENT_READ, ("exited", build))

    # -- the spare build child (spare.py) -----------------------------------------------------

    def _hand_to_spare(self, conn: socket.socket, request: dict, fds: list[int]) -> bool:
        """Give the request to the spare when its memory is still the server's; False: fork."""
        spare, self.spare = self.spare, None
        if spare is None:
            return False
        if self.hooks is None or spare.generation != self.hooks.generation \
                or not spare.hand(request, fds, self.hooks.changes):
            self._end(spare)
            return False
        spare.sock.close()
        if spare.pidfd is not None:
            self.selector.unregister(spare.pidfd)
        self.builds_from_spare += 1
        self.hooks.forked(spare.pid)
        self._track(_Build(conn, spare.pid, spare.pidfd, request=request), spare.done)
        return True

    def _spare_wanted(self) -> bool:
        """Whether to fork a spare: none is kept, a build was served (a server nobody builds
        with keeps none), nothing is waiting or left to do, and every build child still running
        is only winding down (`_Build.winding_down`): a script's next build, which comes while the
        last one's child still removes its sandbox, then finds the spare up instead of a fork
        whose every first touch of the server's pages is a fault (1,000 units, edit-one builds
        20 ms apart: 12-15 ms slower each, bench/RESULTS.md)."""
        return self.spare is None and self.hooks is not None and bool(self.builds_served) \
            and not (self.stopping or self.later or self.intakes) \
            and all(b.winding_down for b in self.running.values())

    def _keep_spare(self, now: bool = False) -> None:
        """A spare whose memory is the server's, forked `SPARE_IDLE_S` after the last build
        child began or ended (`now`: at once): builds run back to back by a script do not share the
        cores with forking and starting one after each, nor wait for its set-up."""
        if self.spare is not None and (self.hooks is None or self.spare.generation != self.hooks.generation):
            self._end_spare()
        if not self._spare_wanted() or (not now and self._since_child() < SPARE_IDLE_S):
            return
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        done_r, done_w = os.pipe2(os.O_CLOEXEC)
        generation = self.hooks.generation
        ahead = self.aheads.take()
        pid = self._fork(ahead, done_r, done_w, ours, theirs)
        if pid == 0:
            gc.freeze()  # as a forked build child (`_start_build`)
            code = 1
            try:
                try:
                    spares.ending_on_sigterm()
                    ours.close()
                    os.close(done_r)
                    self._drop_descriptors()
                    child.prepare()
                    # a request already waiting gets its build at once, which starts its own sandbox
                    self.hooks.in_spare(warm=not select.select([theirs], [], [], 0)[0], ahead=ahead)
                    taking = own_pages.take_in_background()  # the server's pages, copied while it waits
                    request, fds, changes = spares.wait(theirs)
                    taking.stop()
                except spares.Ended:
                    self.hooks.end_spare()
                    os._exit(0)
                code = self._build_here(self.hooks.spare_memory(changes), request, fds, done_w, None)
            except BaseException:  # noqa: BLE001 - as a forked build child that could not start
                self.log(traceback.format_exc())
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(code)
        theirs.close()
        os.close(done_w)
        self._handed_over(ahead)
        try:
            pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            pidfd = None
        self.spare = Spare(pid, pidfd, ours, done_r, generation)
        if pidfd is not None:
            self.selector.register(pidfd, selectors.EVENT_READ, ("spare_exited", self.spare))

    def _end_spare(self) -> None:
        spare, self.spare = self.spare, None
        if spare is not None:
            self._end(spare)

    def _end(self, spare: Spare) -> None:
        """End a spare that got no request; it is reaped when it has exited."""
        spare.end()
        self.spares_ending.append(spare)

    def _on_spare_exited(self, pidfd, spare: Spare) -> None:
        """A spare exited: one ended, or one that died waiting (then the next request forks)."""
        if spare is self.spare:
            self.spare = None
            spare.end()
        else:
            self.spares_ending.remove(spare)
        self.selector.unregister(pidfd)
        os.close(pidfd)
        os.waitpid(spare.pid, 0)

    def _fork(self, ahead, *made: int | socket.socket) -> int:
        """`os.fork()` for a build child or a spare. Where no fork can be made (no memory, too
        many processes), what was made for it (`made`: pipes, a socket pair) is closed and the
        sandbox begun ahead that it was to take is held again for the next fork, not left
        running unwatched until the server exits; the error goes on to the caller (the client
        is answered by no one and builds in process)."""
        try:
            return os.fork()
        except OSError:
            for m in made:
                if isinstance(m, socket.socket):
                    m.close()
                else:
                    os.close(m)
            if ahead is not None:
                self.aheads.give_back(ahead)
            raise

    # -- the sandbox begun ahead (sandbox_ahead.py) ----------------------------------------------

    def _answered_ok(self, pid: int) -> None:
        """A build answered its client with success (its exit status, or its exit where that
        came first): begin the sandbox the next one will want, and read back the state files it
        saved, while this build's child winds down and the next command starts."""
        if self.hooks is None:
            return
        if not self.stopping:
            self.aheads.begin(self.hooks.last_sandbox)
        self.later.append(functools.partial(self.hooks.on_reply, pid))

    def _handed_over(self, ahead) -> None:
        """In the server, once a fork took `ahead` (or None): let go of it, reap its worker later."""
        if ahead is not None:
            pidfd = self.aheads.handed_over(ahead)
            self.selector.register(pidfd, selectors.EVENT_READ, ("ahead_exited", None))

    def _on_ahead_exited(self, pidfd, _data) -> None:
        self.selector.unregister(pidfd)
        self.aheads.reap(pidfd)

    def _answer_noop(self, request: dict, fds: list[int]) -> bool:
        """Print the `Finished` line of a no-op for the client (on its stderr, as every status
        line), when its record holds."""
        if len(fds) < 3 or not _writable(fds[2]):  # a stderr that would block the server: the child writes
            return False
        start = time.monotonic() - max(0.0, time.time() - request.get("started", time.time()))
        try:
            text = self.noops.answer(request["argv"], request["cwd"], request["env"], os.isatty(fds[2]), start)
            if text:
                _write_within(fds[2], text.encode("utf-8", "surrogateescape"), REQUEST_S)
        except Exception:  # noqa: BLE001 - only a shortcut: the build child decides instead
            self.log(traceback.format_exc())
            return False
        return text is not None

    def _in_child(self) -> ChildMemory:
        """Drop the server's descriptors (`_drop_descriptors`); the build's memory (warm.py, or
        one given nothing when the server keeps no warm state)."""
        self._drop_descriptors()
        if self.hooks is not None:
            return self.hooks.in_child()
        return ChildMemory(None, {})

    def _drop_descriptors(self) -> None:
        """In a child: close every descriptor the server holds, so no build keeps the socket
        name bound or a client's connection open after the server is gone."""
        self.selector.close()
        self.noops.close()
        self.sources.close()
        if not self.stopping:
            self.listener.close()
        if self.lock is not None:
            os.close(self.lock)
        for intake in self.intakes.values():  # other clients' requests and descriptors
            intake.incoming.close()
            intake.conn.close()
        for build in self.running.values():
            build.conn.close()
            if build.pidfd is not None:
                os.close(build.pidfd)
            if build.done is not None:
                os.close(build.done)
        for spare in self.spares_ending:
            if spare.pidfd is not None:
                os.close(spare.pidfd)
        self.aheads.in_fork()

    def _on_noop_watch(self, _fd, _data) -> None:
        self.noops.drain()

    def _on_watcher(self, _fd, _data) -> None:
        self.hooks.on_readable()

    def _on_client(self, conn, build: _Build) -> None:
        try:
            messages = build.incoming.read(conn)
        except (OSError, protocol.ProtocolError):  # the client is gone (killed): cancel its build quietly
            build.incoming.close()
            self.selector.unregister(conn)
            _signal_child(build.pid, signal.SIGTERM)
            return
        for message in messages:
            sig = _FORWARDED.get(message.get("signal", ""))
            if sig is not None:
                _signal_child(build.pid, sig)

    def _on_done(self, fd, build: _Build) -> None:
        """The child reported its exit status (or closed the pipe by dying first)."""
        if build.done != fd:  # closed already, by its exit handled in the same round
            return
        try:
            said = os.read(fd, 2)
        except OSError:
            said = b""
        if not said:  # its end: it exited, or died before it said more
            self._close_done(build)
            return
        if build.status is None:
            build.status, said = said[0], said[1:]
            self._reply_once(build, {"exit": build.status})
            if build.status == 0:
                self._answered_ok(build.pid)
        if said:  # its hand-off is written (`_build_here`)
            self._close_done(build)
            self._take_in(build, {"exit": build.status})

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
        for spare in [s for s in self.spares_ending if s.pidfd is None]:
            if os.waitpid(spare.pid, os.WNOHANG)[0]:
                self.spares_ending.remove(spare)

    def _finish(self, build: _Build, block: bool = True) -> None:
        pid, status = os.waitpid(build.pid, 0 if block else os.WNOHANG)
        if pid == 0:
            return
        del self.running[build.pid]
        if build.pidfd is not None:
            self.selector.unregister(build.pidfd)
            os.close(build.pidfd)
        self._close_done(build)
        self.last_active = self.last_child = time.monotonic()
        if os.WIFSIGNALED(status):
            message = {"crashed": os.WTERMSIG(status)}
        else:
            message = {"exit": os.WEXITSTATUS(status)}
        answered_here = not build.replied  # its exit was seen before its exit status was read
        self._reply_once(build, message)
        if answered_here and message.get("exit") == 0:
            self._answered_ok(build.pid)
        self._take_in(build, message)
        if message.get("exit") == 0 and build.request is not None:
            # the record the build left (a JSON build's, written after its reply, too), watched
            # before the next request
            req = build.request
            self.later.append(functools.partial(self.noops.prepare, req["argv"], req["cwd"], req["env"]))

    def _take_in(self, build: _Build, message: dict) -> None:
        """What a build's child handed off, taken in once: when the child says it is written,
        or at its exit where it said nothing more (it failed early, or died). After the reply,
        and after any request already waiting."""
        if build.taken_in:
            return
        build.taken_in = True
        if self.hooks is not None:
            self.later.append(functools.partial(self._in_steps, self.hooks.after_build(build.pid, message)))


def _signal_child(pid: int, sig: int) -> None:
    """Tell a build child of the client's signal. The child alone: it passes the signal on to
    what it runs (a `mcpp run` program gets it once, from its `mcpp`, as in process), and its
    actions run in sessions of their own, which it stops itself."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _listening(path: str) -> bool:
    """Whether a server accepts connections on `path`."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
        return True
    except OSError:
        return False
    finally:
        probe.close()


def _writable(fd: int) -> bool:
    """Whether a write to `fd` would not block now."""
    poll = select.poll()
    poll.register(fd, select.POLLOUT)
    return bool(poll.poll(0))


def _write_within(fd: int, data: bytes, seconds: float) -> None:
    """Write `data` to `fd`, waiting at most `seconds` in all for it to take more."""
    deadline = time.monotonic() + seconds
    poll = select.poll()
    poll.register(fd, select.POLLOUT)
    while data:
        left = deadline - time.monotonic()
        if left <= 0 or not poll.poll(left * 1000):
            raise TimeoutError("the client's output does not take the answer")
        data = data[os.write(fd, data[:select.PIPE_BUF]):]  # a pipe that polls writable takes this much


def _limits(home: str) -> tuple[limits.Limits, str | None]:
    """The server's limits (limits.py), or the defaults and why the configured ones cannot be used."""
    try:
        return limits.read(os.environ, home), None
    except ConfigError as e:
        return limits.Limits(), e.message


def _rss_kb() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _file_log(f) -> Callable[[str], None]:
    """A log writing each line to the open file `f`, with the time and the writing process."""
    def log(text: str) -> None:
        f.write(f"{time.strftime('%H:%M:%S')} [{os.getpid()}] {text.rstrip()}\n")
        f.flush()
    return log


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


def main(ident: str, root: str, home: str, command: Callable[..., None], hooks=None,
         ready: int | None = None, later: tuple[Callable[[], None], ...] = (), started_by: int | None = None) -> None:
    """Detached already (the client starts it in a new session); runs until idle or stopped.
    `ready`: a pipe to write one byte on once the socket listens (closed in any case); `later`:
    tasks for when the first build has started and no request waits (imports it may not need);
    `started_by`: the pid of the in-process command that started it, whose bequest (bequest.py)
    is taken in once the socket listens and before any request is served (one that comes
    meanwhile waits in the socket's backlog: its build is then given the plan)."""
    from .paths import log_file

    try:
        os.makedirs(os.path.dirname(log_file(ident, home)), exist_ok=True)
        log = _file_log(open(log_file(ident, home), "a", buffering=1))
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        server = Server(ident, root, home, command, hooks, log)
        server.after_first_build = later
        if not server.bind():
            log("not listening: exiting")
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
        if hooks is not None and started_by is not None:
            try:
                for _ in hooks.bequeathed(started_by):
                    pass
            except Exception as e:  # noqa: BLE001 - only a head start: without it the first build plans
                log(f"the bequest of {started_by} was not taken in: {e!r}")
        server.serve()
    finally:
        server._stop_listening()
        log("exit")
    sys.exit(0)
