"""`mcpp worker --remote URL [--instance NAME] [--slots N]`: a remote execution worker for BuildGrid.

The worker speaks the Remote Workers (Bots) API: each of its `--slots` opens a `BotSession`
(capacity 1) and calls `UpdateBotSession` in a loop. The server long-polls that call until it
has an action for the slot, then answers with a `Lease` whose payload is the REAPI `Action`;
the slot runs it (`worker_action.py`: stage inputs from the worker's CAS cache, run in the
sandbox, upload the outputs) and answers with the lease `COMPLETED` and its `ActionResult`.
While an action runs, the slot keeps calling back every few seconds, so the server knows it
is alive; a worker that stops calling back (killed, machine gone) is declared dead after the
server's `bot-session-keepalive-timeout` and its leases are queued again for another worker:
a worker killed mid-action loses nothing.

Platform properties (the first device's): `OSFamily`, `ISA`, and `mcpp-tool` =
`PATH=blake3:DIGEST` for each tool of each toolchain it has (`--toolchain`, default gcc: its
drivers, `ar`, and the linker programs its drivers run; plus `--tool PATH`). The server gives a slot only actions whose properties are all among these, so
an action keyed on one compiler's bytes never runs on a worker whose compiler differs.

Each action run is logged as one JSON line (`--log FILE`, else stderr):
`{"event": "action-executed", "worker": ..., "action": HASH/SIZE, "outputs": [...], "exit_code": N, ...}`.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time

import click

from mcpp.cas.home import Home

from ..core.errors import McppError

@click.command("worker")
@click.option("--remote", "remote", metavar="URL", required=True,
              help="The BuildGrid server: grpc://HOST:PORT, grpcs://HOST:PORT or unix:PATH.")
@click.option("--instance", "instance", metavar="NAME", default="", help="REAPI instance name (default: '').")
@click.option("--slots", type=int, default=0, metavar="N", help="Actions run at once (default: number of CPUs).")
@click.option("--toolchain", "toolchains", multiple=True, metavar="NAME",
              help="A toolchain whose tools this worker offers (gcc, clang, clang-NN; default: gcc).")
@click.option("--tool", "tools", multiple=True, metavar="PATH", help="Another tool to offer (absolute path).")
@click.option("--name", "name", metavar="NAME", default=None, help="This worker's name (default: host-pid).")
@click.option("--log", "log", metavar="FILE", type=click.Path(), default=None,
              help="Append one JSON line per action run to FILE (default: stderr).")
def worker_command(remote: str, instance: str, slots: int, toolchains: tuple[str, ...], tools: tuple[str, ...],
                   name: str | None, log: str | None) -> None:
    """Run actions for a remote execution server (BuildGrid's Bots API)."""
    from mcpp.cas.remote.config import RemoteConfigError, parse_remote_url

    from ..core.settings import RemoteFlags, Settings

    command = Settings.read(os.environ, RemoteFlags(url=remote))
    home = command.home
    try:
        target = parse_remote_url(remote)
    except RemoteConfigError as e:
        raise McppError(str(e)) from None
    settings = command.remote()
    assert settings is not None  # --remote names the server
    if slots < 0:
        raise click.UsageError("--slots must be a number of actions, or 0 for all cores")
    from .lease_loop import Worker

    worker = Worker(target, instance or settings.instance_name, settings.security, home,
                    slots or os.cpu_count() or 1, _offered_tools(toolchains or ("gcc",), tools, home),
                    name or f"{socket.gethostname()}-{os.getpid()}", _log_sink(log))
    stop = threading.Event()

    def on_signal(_sig, _frame):
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    worker.run(stop)


def _offered_tools(toolchains: tuple[str, ...], extra: tuple[str, ...], home: Home) -> dict[str, str]:
    """path -> blake3 of every tool this worker offers."""
    from ..plan.model import ACTION_ENV
    from ..toolchain.compilers import resolve_toolchain
    from ..toolchain.linker import action_path, default_programs
    from .leased_action import tool_digest

    paths: list[str] = []
    for name in toolchains:
        tc = resolve_toolchain(name, home)
        # and the programs its drivers run to link (collect2, ld): tools of every link action
        paths += [tc.cc.path, tc.cxx.path, tc.ar, *default_programs(tc, action_path(ACTION_ENV))]
    for p in extra:
        if not os.path.isabs(p) or not os.path.isfile(p):
            raise McppError(f"--tool {p}: not an absolute path to a file")
        paths.append(p)
    return {p: tool_digest(p) for p in dict.fromkeys(paths)}


def _log_sink(path: str | None):
    lock = threading.Lock()
    stream = open(path, "a", buffering=1, encoding="utf-8") if path else sys.stderr

    def write(event: dict) -> None:
        event = {"time": round(time.time(), 3), **event}
        with lock:
            stream.write(json.dumps(event) + "\n")
            stream.flush()

    return write
