"""What a finished build leaves the server to do (daemon.py's `later`): done when no event waits
and no client is sending its request, so a request that comes first is served first; all of it
before `mcpp server status` answers."""
from __future__ import annotations

import select
import socket
import threading
import time

from mcpp.engine.server import daemon, protocol
from mcpp.engine.server.paths import socket_path


def test_left_work_runs_in_order_one_task_per_quiet_moment_and_all_before_status(tmp_path):
    logged = []
    server = daemon.Server("test", str(tmp_path), str(tmp_path), command=lambda argv, memory: None, log=logged.append)
    done = []
    server.later.extend([lambda: done.append("first"), lambda: 1 / 0, lambda: done.append("third")])
    server._run_later(1)
    assert done == ["first"]
    server._run_later(1)  # a failing task is logged; the server goes on
    assert done == ["first"] and "ZeroDivisionError" in logged[-1]
    server.status()
    assert done == ["first", "third"] and not server.later
    for held in (server.noops, server.sources, server.selector, server.listener):
        held.close()


def test_left_work_waits_while_a_connected_client_sends_its_request(tmp_path, monkeypatch):
    """A build run right after the last one (a script's) connects while the server has that
    build's work left: the request, still on its way, is served before the left work runs."""
    monkeypatch.setenv("MCPP_HOME", str(tmp_path / "home"))
    server = daemon.Server("test", str(tmp_path), str(tmp_path / "home"), command=lambda argv, memory: None,
                           log=lambda line: None)
    assert server.bind()
    server._gone = lambda: False  # the test's workspace is not a real one
    order = []
    server.later.append(lambda: order.append("left work"))
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.connect(socket_path("test"))
        server._turn()  # the connection accepted; its request not yet sent
        sender = threading.Timer(0.1, lambda: protocol.send(client, {"op": "info"}))
        sender.start()
        deadline = time.monotonic() + 5
        while not select.select([client], [], [], 0)[0]:  # until the answer is there
            assert time.monotonic() < deadline, "no answer"
            server._turn()
            assert order == []  # the left work waits while the request comes
        order.append("answered" if protocol.receive(client) else "no answer")
        sender.join()
        for _ in range(10):  # once nothing waits (the closed connection's events handled) the left work runs
            if server.later:
                server._turn()
        assert order == ["answered", "left work"]
    finally:
        client.close()
        server._stop_listening()
        for held in (server.noops, server.sources, server.selector, server.listener):
            held.close()


def test_left_work_in_steps_gives_way_between_steps(tmp_path):
    """A build's hand-off is taken in in steps (warm.py `after_build`, a generator): one step per
    quiet moment, so a request that comes meanwhile waits for one step, not all; the steps run
    before the work left after them, and all of it before `mcpp server status` answers."""
    server = daemon.Server("test", str(tmp_path), str(tmp_path), command=lambda argv, memory: None,
                           log=lambda line: None)
    done = []

    def steps():
        done.append("step 1")
        yield
        done.append("step 2")
        yield
        done.append("step 3")

    server.later.append(lambda: server._in_steps(steps()))
    server.later.append(lambda: done.append("after"))
    server._run_later(1)
    assert done == ["step 1"]
    server._run_later(1)
    assert done == ["step 1", "step 2"]
    server.status()
    assert done == ["step 1", "step 2", "step 3", "after"] and not server.later
    for held in (server.noops, server.sources, server.selector, server.listener):
        held.close()
