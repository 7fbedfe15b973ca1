"""A warm server's build child leaves what it inherited from the server out of its garbage
collections (engine/server/daemon.py): a full collection there would walk the server's whole heap,
and copy every page it writes to. What the build makes is collected as usual, and the server's
own collector keeps everything it had."""
from __future__ import annotations

import gc
import os
import socket
import time

from mcpp.engine.server import daemon


def test_a_build_child_collects_only_what_it_made_and_the_server_is_untouched(tmp_path):
    root, home = tmp_path / "ws", tmp_path / "home"
    root.mkdir()
    home.mkdir()

    def command(argv, memory, started):
        made = [[] for _ in range(100)]  # the build's own objects, still tracked
        os.write(1, f"{gc.get_freeze_count()} {len(gc.get_objects())} {len(made)}\n".encode())

    server = daemon.Server("test", str(root), str(home), command=command)
    out_r, out_w = os.pipe()
    nulls = [os.open(os.devnull, os.O_RDWR) for _ in range(2)]
    conn, peer = socket.socketpair()
    inherited = len(gc.get_objects())
    now = time.time()
    request = {"op": "build", "identity": server.identity, "root": str(root), "home": str(home),
               "cwd": str(tmp_path), "umask": 0o022, "started": now, "began": now, "argv": ["build"],
               "env": {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}}
    try:
        server._start_build(conn, request, [nulls[0], out_w, nulls[1]])
        os.close(out_w)
        with os.fdopen(out_r, "rb") as f:
            answer = f.read().decode()
        (pid, build), = server.running.items()
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        frozen, collectable, _ = (int(n) for n in answer.split())
        assert frozen >= inherited * 0.9  # the server's objects, held apart in the child
        assert 100 <= collectable < inherited // 2  # the build's own are collected as usual
        assert gc.get_freeze_count() == 0  # the server collects all of its own
    finally:
        for fd in nulls + [fd for b in server.running.values() for fd in (b.done, b.pidfd) if fd is not None]:
            os.close(fd)
        for held in (conn, peer, server.noops, server.sources, server.selector, server.listener):
            held.close()
