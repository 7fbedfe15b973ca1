"""When the server takes in what a build child handed off (daemon.py `_take_in`): once the child
says it is written, right after its exit status, not at the child's exit, which comes after its
sandbox is torn down, as a script's next command starts."""
from __future__ import annotations

import os
import signal
import socket
import subprocess

import pytest

from mcpp.engine.server import daemon, protocol, warm


@pytest.fixture
def server(tmp_path, monkeypatch):
    monkeypatch.setenv("MCPP_HOME", str(tmp_path / "home"))
    hooks = warm.Hooks(str(tmp_path), "test", str(tmp_path / "home"))
    server = daemon.Server("test", str(tmp_path), str(tmp_path / "home"), command=lambda argv, memory: None,
                           hooks=hooks)
    taken: list = []

    def after_build(pid, message):
        taken.append((pid, message))
        yield

    monkeypatch.setattr(hooks, "after_build", after_build)
    yield server, taken
    for held in (server.noops, server.sources, server.selector, server.listener):
        held.close()
    hooks.watcher.close()


@pytest.fixture
def child(server):
    """A stand-in build child (a real process) tracked by the server, with its status pipe and
    its client's end of the connection."""
    srv, _taken = server
    proc = subprocess.Popen(["sleep", "60"])
    conn, client = socket.socketpair()
    done_r, done_w = os.pipe()
    build = daemon._Build(conn, proc.pid, None, request={"argv": ["build"], "cwd": "/", "env": {"MCPP_NO_FAST_PATH": "1"}})
    srv._track(build, done_r)
    yield build, done_w, client, proc
    if proc.returncode is None and build.pid in srv.running:
        os.kill(proc.pid, signal.SIGKILL)
        srv._finish(build)
    proc.returncode = -9  # reaped by the server
    os.close(done_w)
    client.close()


def _exit(srv, build, proc) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    srv._finish(build)


def test_the_hand_off_is_taken_in_when_the_child_says_it_is_written(server, child):
    srv, taken = server
    build, done_w, client, proc = child
    os.write(done_w, b"\0")  # its exit status
    srv._on_done(build.done, build)
    client.settimeout(5)
    assert protocol.Incoming().read(client) == [{"exit": 0}]  # answered at once
    srv._run_later()
    assert taken == []  # nothing handed off yet
    os.write(done_w, daemon.HANDED_OFF)
    srv._on_done(build.done, build)
    srv._run_later()
    assert taken == [(proc.pid, {"exit": 0})] and proc.poll() is None  # before the child's exit
    _exit(srv, build, proc)
    srv._run_later()
    assert len(taken) == 1  # once


def test_a_status_and_hand_off_read_together_are_both_handled(server, child):
    srv, taken = server
    build, done_w, client, proc = child
    os.write(done_w, b"\2" + daemon.HANDED_OFF)  # a failed build hands off too
    srv._on_done(build.done, build)
    client.settimeout(5)
    assert protocol.Incoming().read(client) == [{"exit": 2}]
    srv._run_later()
    assert taken == [(proc.pid, {"exit": 2})]


def test_a_child_that_exits_without_saying_is_taken_in_at_its_exit(server, child):
    srv, taken = server
    build, done_w, _client, proc = child
    os.write(done_w, b"\0")
    srv._on_done(build.done, build)
    _exit(srv, build, proc)  # died before its hand-off
    srv._run_later()
    assert taken == [(proc.pid, {"crashed": signal.SIGKILL})]  # as its exit says
