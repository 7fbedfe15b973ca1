"""`mcpp server status|list|stop`: the warm build servers (docs/server.md)."""
from __future__ import annotations

import json
import os
import time

import click

from . import client, registry
from ..core.errors import McppError
from .paths import Unsafe, home_dir, server_id, workspace_root

_STOP_WAIT_S = 10.0  # how long `stop` waits for an idle server's process to exit


def _ident(manifest_path: str | None) -> str | None:
    start = os.path.dirname(os.path.abspath(manifest_path)) if manifest_path else os.getcwd()
    root = workspace_root(start)
    if root is None:
        return None
    home = home_dir()
    return server_id(root, home)


@click.group("server")
def server_group():
    """The warm build servers (build, run and test go through the workspace's)."""


@server_group.command("status")
@click.pass_obj
def status_cmd(ctx):
    """Whether a server runs for this workspace, and what it holds."""
    info = _ask(ctx, "status")
    if info is None:
        return
    for key, value in info.items():
        click.echo(f"{key}: {value}")


@server_group.command("list")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              help="text: a table; json: one object per server.")
def list_cmd(fmt):
    """Every mcpp server of this user: workspace, home, pid, memory and idle time."""
    found = _unsafe_is_an_error(lambda: registry.servers())
    if fmt == "json":
        click.echo(json.dumps([{"workspace": s.root, "home": s.home, "pid": s.pid, "memory_kb": s.memory_kb,
                                "idle_s": s.idle_s, "running": s.running} for s in found], indent=2))
        return
    if not found:
        click.echo("no mcpp server running")
        return
    rows = [("WORKSPACE", "HOME", "PID", "MEMORY", "IDLE")]
    rows += [(s.root, s.home, str(s.pid), _mib(s.memory_kb), "building" if s.running else _duration(s.idle_s))
             for s in sorted(found, key=lambda s: (s.home, s.root))]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(cell.rjust(w) if i in (2, 3) else cell.ljust(w)
                             for i, (cell, w) in enumerate(zip(row, widths))).rstrip())
    total = sum(s.memory_kb for s in found)
    click.echo(f"{len(found)} server{'s' if len(found) != 1 else ''}, {_mib(total)}")


@server_group.command("stop")
@click.option("--all", "every", is_flag=True, help="Stop every server of this $MCPP_HOME, not only this workspace's.")
@click.pass_obj
def stop_cmd(ctx, every):
    """Stop this workspace's server (after the builds it is running)."""
    if every:
        home = home_dir()
        _unsafe_is_an_error(lambda: _await_starting(home))
        found = _unsafe_is_an_error(lambda: registry.servers(home))
        stopped = [s for s in found if registry.stop(s)]
        registry.wait_gone([s.pid for s in stopped if not s.running], _STOP_WAIT_S)
        busy = sum(1 for s in stopped if s.running)
        click.echo(f"stopped {len(stopped)} server{'s' if len(stopped) != 1 else ''}"
                   + (f" ({busy} after the builds they are running)" if busy else ""))
        return
    info = _ask(ctx, "stop")
    if info is None:
        return
    running = info.get("running", 0)
    if running:
        click.echo(f"stopping server after its {running} running build(s)")
        return
    if isinstance(info.get("pid"), int):
        registry.wait_gone([info["pid"]], _STOP_WAIT_S)
    click.echo("stopped server")


def _await_starting(home: str, ident: str | None = None) -> bool:
    """Wait (up to `_STOP_WAIT_S` in all) for the servers of `home` (of `ident` only, when given)
    that run but do not listen yet, so that a `stop` right after a build stops the server that
    build's command started on its way out; whether any of them listens now."""
    deadline = time.monotonic() + _STOP_WAIT_S
    listening = False
    for starting_ident, pid in registry.starting(home, ident):
        listening |= registry.await_listening(starting_ident, pid, max(0.0, deadline - time.monotonic()))
    return listening


def _ask(ctx, op: str) -> dict | None:
    """The answer of this workspace's server to `op`, or None (said to the user) when none runs.
    A server still starting (the one the last command started on its way out) is waited for and
    asked as one that was up. Where no server may run (the socket directory is not private), an
    error (exit 2)."""
    ident = _ident(ctx.manifest_path)
    if ident is None:
        info = None
    else:
        info = _unsafe_is_an_error(lambda: client.request_once(ident, {"op": op}))
        if info is None and _unsafe_is_an_error(lambda: _await_starting(home_dir(), ident)):
            info = _unsafe_is_an_error(lambda: client.request_once(ident, {"op": op}))
    if info is None:
        click.echo("no server running for this workspace")
    return info


def _unsafe_is_an_error(ask):
    try:
        return ask()
    except Unsafe as e:
        raise McppError(f"no mcpp server can run: {e}",
                        notes=["note: builds run in process meanwhile; see `Sockets` in docs/server.md"]) from None


def _mib(kb: int) -> str:
    return f"{kb / 1024:.1f} MiB"


def _duration(seconds: float) -> str:
    """`45s`, `3m05s`, `2h10m`."""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"
