"""Helpers for the e2e tests: run the real `mcpp` CLI in a subprocess on projects in temp dirs.

(A module of its own rather than conftest.py, which several test directories have.)
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
EXAMPLES = REPO / "examples"

# The warm build server (docs/server.md) is off for the suite unless MCPP_TEST_SERVER=1
# (`make test-server`): then every `mcpp build/run/test` a test starts goes through a server,
# and the suite checks that output, exit codes and Ctrl-C are the same as in process. Set in
# os.environ so that tests which build their own environment from it get the same mode.
SERVER_MODE = os.environ.get("MCPP_TEST_SERVER", "") not in ("", "0")
if SERVER_MODE:
    os.environ.pop("MCPP_NO_SERVER", None)
    os.environ.setdefault("MCPP_SERVER_IDLE", "30")  # one server per test project: let them go soon
else:
    os.environ["MCPP_NO_SERVER"] = "1"
# A build that finds no server up waits for the one it starts and builds through it, so that a
# test's first build is served too (the default builds it in process: tests/e2e/test_cold_start.py).
os.environ["MCPP_SERVER_START"] = "wait"


def mcpp_executable() -> str:
    candidate = Path(sys.executable).parent / "mcpp"
    return str(candidate) if candidate.exists() else shutil.which("mcpp") or "mcpp"


_STATUS = re.compile(r"^(?= {0,11}[A-Z])[ A-Za-z]{12} ")  # `   Compiling x`, `       Rules y`


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def diagnostics(self) -> str:
        """stderr without mcpp's status lines (`   Compiling ...`: a verb right-aligned in 12
        columns), which share it: the errors, warnings and notes, in their order."""
        return "".join(line for line in self.err.splitlines(keepends=True) if not _STATUS.match(line))

    @property
    def events(self) -> list[dict]:
        return [json.loads(line) for line in self.out.splitlines() if line.startswith("{")]

    def executed(self, kind: str | None = None) -> list[str]:
        """Ids of actions that really ran (not fresh, not restored from a cache)."""
        return [e["id"] for e in self.events if e.get("reason") == "action-finished"
                and e.get("status") == "executed" and (kind is None or e.get("kind") == kind)]


class Mcpp:
    def __init__(self, home: Path):
        self.home = home
        self.exe = mcpp_executable()

    def __call__(self, *args: str, cwd: Path | str, env: dict | None = None, check: bool | None = None,
                 timeout: float = 300) -> Result:
        full_env = {**os.environ, "MCPP_HOME": str(self.home), **(env or {})}
        full_env.pop("TERM", None)
        p = subprocess.run([self.exe, *args], cwd=cwd, env=full_env, capture_output=True, text=True,
                           timeout=timeout)
        res = Result(p.returncode, p.stdout, p.stderr)
        if check is True and res.code != 0:
            raise AssertionError(f"mcpp {' '.join(args)} failed ({res.code}):\n{res.out}\n{res.err}")
        return res

    def build_json(self, *args: str, cwd) -> Result:
        res = self(*args, "--message-format", "json", cwd=cwd) if args and args[0] in ("build", "test", "run") \
            else self("build", *args, "--message-format", "json", cwd=cwd)
        assert res.code == 0, f"{res.out}\n{res.err}"
        return res


# Sets what a child is to start with, then becomes it (`os.execv`): a test process may hold
# gRPC's threads (the remote tests' in-process servers and clients), and a `preexec_fn` runs in a
# fork of it, where gRPC's fork handlers restart a poller that the fork's closing of descriptors
# then breaks: the child aborts before it execs (SIGABRT, "epoll_wait error: Bad file descriptor").
_STARTER = ("import os, resource, signal, sys\n"
            "signal.signal(signal.SIGINT, signal.SIG_DFL)\n"
            "cap = int(sys.argv[1])\n"
            "if cap:\n"
            "    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))\n"
            "os.execv(sys.argv[2], sys.argv[2:])\n")


def started(argv: list, address_space: int = 0) -> list[str]:
    """`argv` to run instead of `argv` for a child a test interrupts or caps (never a
    `preexec_fn`, see _STARTER): the child gets SIGINT's default disposition, as from a terminal
    (a suite started as a background job, `&` in a script, inherits SIGINT ignored, and so would
    the child, which then never sees the Ctrl-C the test sends), and at most `address_space`
    bytes of address space where that is not 0. Its pid is the child's: the starter execs."""
    return [sys.executable, "-c", _STARTER, str(address_space), *map(str, argv)]


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def copy_example(name: str, dest: Path) -> Path:
    target = dest / name
    shutil.copytree(EXAMPLES / name, target, ignore=shutil.ignore_patterns("target", "compile_commands.json"))
    return target


def stop_servers(home: Path) -> None:
    """Ask every build server of `home` to exit (after the builds it runs): a test's servers end
    with the test, not an idle period later. Costs a directory listing where none ran."""
    if not (home / "server").is_dir():
        return
    from mcpp.engine.server import registry

    try:
        for server in registry.servers(str(home)):
            registry.stop(server, "the test that started it ended")
    except Exception:  # noqa: BLE001 - an unsafe socket directory: no server ran
        pass


def alive(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def serving_pid(home: Path, root: Path) -> int:
    """The pid of the last server that served workspace `root` for `home`, from its log (which
    outlives it: unlike `mcpp server status`, this finds a server that has exited already)."""
    import re

    from mcpp.engine.server.paths import log_file, server_id

    text = Path(log_file(server_id(str(root), str(home)), str(home))).read_text()
    return int(re.findall(r"\[(\d+)\] serving ", text)[-1])


# Environment for a test that turns the warm build server on for its own builds (an idle server
# of a test's project goes away within a minute).
SERVER_ON = {"MCPP_NO_SERVER": "0", "MCPP_SERVER_IDLE": "60"}

# The smallest package that builds and prints a line: for tests about what surrounds a build.
HELLO_PACKAGE = {
    "mcpp.toml": """
        [package]
        name = "hello"
        version = "0.1.0"
    """,
    "src/main.cpp": """
        #include <cstdio>
        int main() { std::puts("hello"); }
    """,
}
