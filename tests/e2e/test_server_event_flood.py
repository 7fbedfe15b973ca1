"""A flood of file events under a watched directory costs the next build through the server a
bounded re-listing (engine/server/watcher.py coalesces events per directory), never a wait
proportional to the events times the size of their directory, and the build stays exact."""
from __future__ import annotations

import os
import time

import pytest

from e2e_support import HELLO_PACKAGE, SERVER_ON, write_tree

pytestmark = pytest.mark.one_mode  # sets the server mode per build itself: the server-on run leaves it out

ON = {**SERVER_ON, "MCPP_NO_FAST_PATH": "1"}

HELLO = HELLO_PACKAGE


def _server_rss_kb(mcpp, root) -> int:
    res = mcpp("server", "status", cwd=root, env=ON)
    assert res.code == 0, res.err
    info = dict(line.split(": ", 1) for line in res.out.splitlines())
    return int(info["memory_kb"])


@pytest.mark.parametrize("count", [3_000, 20_000])
def test_thousands_of_new_files_do_not_stall_the_next_build(tmp_path, mcpp, count):
    root = write_tree(tmp_path / "hello", HELLO)
    try:
        assert mcpp("build", cwd=root, env=ON).code == 0
        assert mcpp("build", cwd=root, env=ON).code == 0  # the server holds this request's plan
        rss_before = _server_rss_kb(mcpp, root)
        src = root / "src"
        for i in range(count):  # in a watched directory, each one a create, a write and a close
            (src / f"data{i:05}.txt").write_text("x\n")
        (src / "main.cpp").write_text('#include <cstdio>\nint main() { std::puts("changed"); }\n')
        started = time.monotonic()
        res = mcpp("build", cwd=root, env=ON, timeout=600)
        took = time.monotonic() - started
        assert res.code == 0, res.err
        assert res.diagnostics == ""  # went through the server: no fallback warning
        assert took < 10, f"the build after {count} new files took {took:.1f} s"
        assert mcpp("-q", "run", cwd=root, env=ON).out == "changed\n"
        assert _server_rss_kb(mcpp, root) - rss_before < 200_000  # kB: no listing kept per event
    finally:
        mcpp("server", "stop", cwd=root, env=ON)
