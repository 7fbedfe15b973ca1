"""The server's hand-over to its spare build child (engine/server/spare.py, daemon.py): a request
goes to the spare only while the spare's copy of the server's memory is current."""
from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import threading
import time

import pytest

from mcpp.engine.server import daemon, spare as spares, warm


def _server(tmp_path) -> daemon.Server:
    hooks = warm.Hooks(str(tmp_path), "test", str(tmp_path))
    return daemon.Server("test", str(tmp_path), str(tmp_path), command=lambda argv, memory: None, hooks=hooks)


def _spare(server: daemon.Server) -> tuple[spares.Spare, socket.socket, subprocess.Popen]:
    """A stand-in spare: a real process and socket pair, at the server's current generation."""
    proc = subprocess.Popen(["sleep", "60"])
    ours, theirs = socket.socketpair()
    done_r, done_w = os.pipe()
    os.close(done_w)
    return spares.Spare(proc.pid, None, ours, done_r, server.hooks.generation), theirs, proc


def _close(server: daemon.Server) -> None:
    for held in (server.noops, server.sources, server.selector, server.listener):
        held.close()
    server.hooks.watcher.close()


@pytest.fixture
def held_spare(tmp_path):
    """(server, spare, its end of the pair, its process): a stand-in spare the server holds."""
    server = _server(tmp_path)
    spare, theirs, proc = _spare(server)
    server.spare = spare
    try:
        yield server, spare, theirs, proc
    finally:
        proc.kill()
        proc.wait()
        theirs.close()
        _close(server)


def _refused(server: daemon.Server, spare: spares.Spare) -> None:
    """Hand the spare a request it does not take: the server ends it, keeps nothing of the
    request, and forks for it (`_hand_to_spare` is False)."""
    conn, client = socket.socketpair()
    try:
        assert not server._hand_to_spare(conn, {"argv": ["build"]}, [0, 1, 2])
        assert server.spare is None and server.spares_ending == [spare]
        assert server.running == {} and server.builds_from_spare == 0
    finally:
        for s in (conn, client):
            s.close()


def test_a_spare_forked_before_the_servers_memory_changed_is_ended_and_the_request_forked_for(held_spare):
    server, spare, theirs, proc = held_spare
    server.hooks._forget("a request")  # what the server keeps changed after the spare was forked
    _refused(server, spare)
    assert proc.wait(timeout=10) == -15  # asked to exit (SIGTERM)
    theirs.settimeout(5)
    assert theirs.recv(1) == b""  # nothing was handed over: the pair is closed


def test_a_current_spare_gets_the_request_its_descriptors_and_the_watchers_changes(tmp_path):
    server = _server(tmp_path)
    spare, theirs, proc = _spare(server)
    server.spare = spare
    server.hooks.changes = ("a request", {"src/a.cpp"}, None)
    conn, client = socket.socketpair()
    out_r, out_w = os.pipe()
    request = {"argv": ["build"], "cwd": str(tmp_path), "env": {"A": "1"}}
    handed: list[bool] = []
    # the server waits for the spare to say it took the request: the spare's part runs here
    server_side = threading.Thread(target=lambda: handed.append(server._hand_to_spare(conn, request, [0, out_w, 2])))
    try:
        server_side.start()
        previous = {s: signal.getsignal(s) for s in spares.FORWARDED}
        delivered: list[int] = []
        try:
            got, fds, changes = spares.wait(theirs)
            server_side.join(10)
            assert handed == [True]
            assert server.spare is None and server.builds_from_spare == 1 and spare.pid in server.running
            # From the hand-over until the build has its handlers, a forwarded signal is held,
            # not lost (the server ignores SIGINT) nor taken as the spare's end
            assert set(spares.FORWARDED) <= signal.pthread_sigmask(signal.SIG_BLOCK, [])
            signal.signal(signal.SIGTERM, lambda signum, _frame: delivered.append(signum))
            # to this thread, as the spare's only thread then: a process-directed signal may go to
            # another thread of the test process, which does not hold it
            signal.pthread_kill(threading.main_thread().ident, signal.SIGTERM)
            assert delivered == []
            signal.pthread_sigmask(signal.SIG_UNBLOCK, spares.FORWARDED)  # as the build process does
            deadline = time.monotonic() + 5
            while not delivered and time.monotonic() < deadline:
                time.sleep(0.01)
            assert delivered == [signal.SIGTERM]
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, spares.FORWARDED)
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        assert got == request and changes == ("a request", {"src/a.cpp"}, None) and len(fds) == 3
        os.write(fds[1], b"through the spare's copy")
        assert os.read(out_r, 100) == b"through the spare's copy"
        for fd in fds:
            os.close(fd)
    finally:
        proc.kill()
        proc.wait()
        for s in (theirs, conn, client):
            s.close()
        for fd in (out_r, out_w):
            os.close(fd)
        _close(server)


def test_a_spare_that_dies_with_the_request_unanswered_leaves_it_to_a_fork(held_spare):
    """A spare killed (or out of memory) as the request reaches it has not said it took it: the
    server forks for the request instead of answering the client "died; not run again"."""
    server, spare, theirs, _proc = held_spare

    def dies_reading() -> None:  # reads the request, and is gone before its answer
        socket.recv_fds(theirs, 8, 3)
        theirs.recv(1 << 16)
        theirs.close()

    reader = threading.Thread(target=dies_reading)
    reader.start()
    _refused(server, spare)
    reader.join(10)
    assert not spare.silent


def test_a_spare_that_does_not_answer_in_time_is_killed_and_the_request_forked_for(held_spare, monkeypatch):
    """A spare that says nothing (stopped, starved) may still read the request whole and build it,
    with SIGTERM held as a build's: it is killed, so only the fork made for the request builds."""
    monkeypatch.setattr(spares, "HAND_S", 0.2)
    server, spare, _theirs, proc = held_spare
    _refused(server, spare)
    assert spare.silent
    assert proc.wait(timeout=10) == -signal.SIGKILL


def test_a_spare_is_forked_only_once_the_server_has_been_idle_a_moment(tmp_path, monkeypatch):
    """Builds run back to back (a script's) find no spare being forked and started beside them:
    the server waits `SPARE_IDLE_S` after its last build, and wakes for it."""
    server = _server(tmp_path)
    forks: list[int] = []
    monkeypatch.setattr(daemon.os, "fork", lambda: forks.append(1) or (_ for _ in ()).throw(OSError("no fork here")))
    monkeypatch.setattr(daemon, "SPARE_IDLE_S", 5.0)  # a moment this test cannot outlast on a busy machine
    try:
        server.builds_served = 1
        server.accepting = True  # as once bound (`bind`)
        server.last_child = time.monotonic()  # a build just ended
        assert server._spare_wanted()
        server._keep_spare()
        assert forks == [] and server.spare is None
        assert 0 < server._timeout() <= daemon.SPARE_IDLE_S
        server.last_child -= daemon.SPARE_IDLE_S
        try:
            server._keep_spare()
        except OSError:
            pass
        assert forks == [1]  # now it would fork one
    finally:
        _close(server)


def test_a_no_op_the_server_answers_leaves_the_spares_clock_alone(tmp_path, monkeypatch):
    """A spare waits `SPARE_IDLE_S` after the last build child began or ended, not after a no-op
    the server answered from stats (no child): a plain `mcpp build` just before a JSON one (an
    IDE's, a benchmark's) would otherwise leave the JSON build a fresh fork instead of the spare."""
    server = _server(tmp_path)
    replies: list[dict] = []
    forks: list[int] = []
    monkeypatch.setattr(server, "_reply", lambda conn, message: replies.append(message))
    monkeypatch.setattr(server, "_hand_to_spare", lambda conn, request, fds: True)  # no fork here
    monkeypatch.setattr(daemon.os, "fork", lambda: forks.append(1) or (_ for _ in ()).throw(OSError("no fork here")))
    now = time.time()
    request = {"op": "build", "identity": server.identity, "root": str(tmp_path), "home": str(tmp_path),
               "cwd": str(tmp_path), "umask": 0o022, "started": now, "began": now, "argv": ["build"],
               "env": {"PATH": "/usr/bin:/bin"}}
    conn, client = socket.socketpair()
    try:
        server.builds_served = 1
        server.accepting = True
        server.last_child = server.last_active = time.monotonic() - 60  # the last build ended a minute ago
        monkeypatch.setattr(server, "_answer_noop", lambda request, fds: True)
        server._serve_request(conn, request, [0, 1, 2])
        assert replies == [{"exit": 0}]
        with pytest.raises(OSError):
            server._keep_spare()
        assert forks == [1]  # the spare is due at once
        monkeypatch.setattr(daemon, "SPARE_IDLE_S", 5.0)  # a moment this test cannot outlast
        monkeypatch.setattr(server, "_answer_noop", lambda request, fds: False)
        server._serve_request(conn, request, [0, 1, 2])  # a build child's (the spare's, here)
        server._keep_spare()
        assert forks == [1]  # the next one waits for the server to be idle a moment
    finally:
        for sock in (conn, client):
            sock.close()
        _close(server)


def test_a_fork_that_cannot_be_made_leaks_nothing_and_keeps_the_sandbox_begun_ahead(tmp_path, monkeypatch):
    """No fork (too many processes, no memory): the pipes and the socket pair made for it are
    closed, and the sandbox begun ahead that it was to take over is held again for the next
    fork, not left running unwatched until the server exits."""
    server = _server(tmp_path)

    def no_fork():
        raise OSError(errno.EAGAIN, "no fork here")

    monkeypatch.setattr(daemon.os, "fork", no_fork)
    ahead = object()  # only handed from the server to a fork: a fork not made must not lose it
    try:
        server.builds_served = 1
        server.accepting = True
        server.last_child = time.monotonic() - daemon.SPARE_IDLE_S
        assert server._spare_wanted()
        server.aheads.held = ahead
        before = sorted(os.listdir("/proc/self/fd"))
        with pytest.raises(OSError):
            server._keep_spare()
        assert server.spare is None and server.aheads.held is ahead
        assert sorted(os.listdir("/proc/self/fd")) == before
        # A build request's fork (`_start_build`) takes the sandbox and its two pipe ends alike.
        done_r, done_w = os.pipe2(os.O_CLOEXEC)
        with pytest.raises(OSError):
            server._fork(server.aheads.take(), done_r, done_w)
        assert server.aheads.held is ahead
        assert sorted(os.listdir("/proc/self/fd")) == before
    finally:
        server.aheads.held = None
        _close(server)


def test_a_spare_is_forked_while_the_last_child_only_winds_down(tmp_path):
    """A script's next build comes while the last build's child still removes its sandbox (after
    its reply): a spare forked then serves it, instead of a fork that takes its pages as faults."""
    server = _server(tmp_path)
    try:
        server.builds_served = 1
        build = daemon._Build(socket.socket(), 12345, None)
        server.running[build.pid] = build
        assert not server._spare_wanted()  # building: no spare beside it
        build.replied = True
        assert not server._spare_wanted()  # answered, its hand-off not yet taken in
        build.taken_in = True
        assert server._spare_wanted()  # only its teardown is left
        server.later.append(lambda: None)
        assert not server._spare_wanted()  # the hand-off's steps first: the spare gets what they keep
        server.later.clear()
        server.running[12346] = daemon._Build(socket.socket(), 12346, None)
        assert not server._spare_wanted()  # another child still building
    finally:
        for b in server.running.values():
            b.conn.close()
        _close(server)


@pytest.mark.parametrize("why", ["version", "moved"])
def test_a_server_making_way_stops_listening_before_it_answers(tmp_path, monkeypatch, why):
    """A client told to restart starts its own server at once: the old one must have freed the
    name by then, or the client's connection lands in a queue that closing drops."""
    server = _server(tmp_path)
    answered = []
    monkeypatch.setattr(server, "_reply", lambda conn, message: answered.append((message, server.stopping)))
    if why == "moved":
        monkeypatch.setattr(server, "_moved", lambda: True)
    conn, client = socket.socketpair()
    try:
        identity = "another mcpp" if why == "version" else server.identity
        server._start_build(conn, {"op": "build", "identity": identity, "argv": ["build"]}, [0, 1, 2])
        assert answered == [({"restart": why}, True)]
    finally:
        for s in (conn, client):
            s.close()
        _close(server)
