"""The way the e2e tests start a child they interrupt or cap (e2e_support.started), and the rule
that no test does it with a `preexec_fn`: in a test process that holds gRPC's threads, such a
fork aborted before it exec'd about once in twenty (CI, 2026-12-05: two server tests got
SIGABRT and "epoll_wait error: Bad file descriptor" instead of a build)."""
from __future__ import annotations

import ast
import resource
import signal
import subprocess
import sys
from pathlib import Path

from e2e_support import started

TESTS = Path(__file__).resolve().parents[1]


def test_no_test_starts_a_child_with_a_preexec_fn():
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.keyword) and node.arg == "preexec_fn":
                found.append(f"{path.relative_to(TESTS)}:{node.lineno}")
    assert found == []


def test_a_started_child_has_sigint_default_and_its_cap_even_where_this_process_ignores_sigint():
    probe = ("import resource, signal; "
             "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler, "
             "resource.getrlimit(resource.RLIMIT_AS)[0])")
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a suite started with `&` has it
    try:
        capped = subprocess.run(started([sys.executable, "-c", probe], address_space=4 << 30),
                                capture_output=True, text=True, check=True)
        plain = subprocess.run(started([sys.executable, "-c", probe]), capture_output=True, text=True, check=True)
        ignored = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    finally:
        signal.signal(signal.SIGINT, previous)
    # Python installs its KeyboardInterrupt handler only where it starts with SIGINT at default.
    assert capped.stdout.split() == ["True", str(4 << 30)]
    assert plain.stdout.split() == ["True", str(resource.getrlimit(resource.RLIMIT_AS)[0])]
    assert ignored.stdout.split()[0] == "False"

