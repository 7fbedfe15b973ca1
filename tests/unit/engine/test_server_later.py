"""What a finished build leaves the server to do (daemon.py's `later`): done when no event waits,
so a request that comes first is served first; all of it before `mcpp server status` answers."""
from __future__ import annotations

from mcpp.engine.server import daemon


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
