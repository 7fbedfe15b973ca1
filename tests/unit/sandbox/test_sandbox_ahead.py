"""The sandbox a warm server begins ahead for its next fork (engine/server/sandbox_ahead.py):
one fork takes it; any other fork lets go of its copies at once. Real bwrap, real workers."""
from __future__ import annotations

import os

import pytest

from mcpp.engine.server.sandbox_ahead import SandboxesAhead
from mcpp.sandbox import pool as pool_module


@pytest.fixture
def work_root(work_root, make):
    make("bwrap")  # skips where bwrap cannot run, as every bwrap test here does
    return work_root


def _open(fd: int) -> bool:
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


def test_a_fork_that_does_not_take_the_sandbox_lets_go_of_its_worker_and_the_server_keeps_it(work_root):
    """A no-op's build child does not take the worker (it would only end it): it closes its
    copies of the worker's pipes and pidfd and forgets the worker's slot, so only the fork that
    later takes it can send it an action, and the worker ends when that one does."""
    aheads = SandboxesAhead(log=lambda line: None)
    aheads.begin((None, work_root, ()))
    held = aheads.held
    assert held is not None and aheads.begun == 1
    worker = held.begun.worker
    fds = (worker._requests.fileno(), worker._replies, held.begun.pidfd)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            aheads.in_fork()
            still = [fd for fd in fds if _open(fd)]
            kept = held.begun.early.pool in pool_module._pools
            os.write(w, f"{still} {kept} {aheads.held}".encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        told = f.read()
    os.waitpid(pid, 0)
    assert told == "[] False None"
    assert aheads.held is held and worker.alive  # the server still holds it, for the next fork
    assert aheads.take() is held and aheads.take() is None  # handed out once
    held.begun.close()
    assert not worker.alive


def test_no_sandbox_is_begun_ahead_for_a_sandbox_without_workers(work_root):
    aheads = SandboxesAhead(log=lambda line: None)
    for settings in (("dir", work_root, ()), ("off", work_root, ()), None):
        aheads.begin(settings)
        assert aheads.held is None and aheads.begun == 0


def test_a_held_sandbox_whose_worker_died_is_begun_again(work_root):
    """A worker that ended while the server held it (killed) is not handed to the next build,
    whose first action would then wait for a sandbox made the slow way: the next `begin` for the
    same settings ends it and begins another."""
    aheads = SandboxesAhead(log=lambda line: None)
    settings = (None, work_root, ())
    aheads.begin(settings)
    first = aheads.held
    aheads.begin(settings)
    assert aheads.held is first and aheads.begun == 1  # held already, and running
    pool_module.kill_group(first.begun.worker.proc.pid)
    first.begun.worker.proc.wait(timeout=10)
    aheads.begin(settings)
    assert aheads.held is not first and aheads.begun == 2 and aheads.held.begun.worker.alive
    aheads.close()


def test_a_build_whose_exit_is_seen_before_its_exit_status_still_begins_the_next_sandbox(work_root, tmp_path):
    """The server begins the next build's sandbox when a build answers (its exit status read);
    a child that exits in the same moment may be reaped first, its answer taken from its exit:
    the sandbox is begun then."""
    import socket

    from mcpp.engine.server import daemon, warm

    hooks = warm.Hooks(str(tmp_path), "test", str(tmp_path))
    server = daemon.Server("test", str(tmp_path), str(tmp_path), command=lambda argv, memory: None, hooks=hooks)
    hooks.last_sandbox = (None, work_root, ())
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    conn, client = socket.socketpair()
    done_r, done_w = os.pipe()
    os.close(done_w)
    build = daemon._Build(conn, pid, None, done=done_r)
    server.running[pid] = build
    try:
        server._finish(build)
        assert server.aheads.held is not None and server.aheads.begun == 1
    finally:
        server.aheads.close()
        client.close()
        for held in (server.noops, server.sources, server.selector, server.listener):
            held.close()
        hooks.watcher.close()
