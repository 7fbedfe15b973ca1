"""`mcpp server status|stop`: the warm build server of the workspace here (docs/server.md)."""
from __future__ import annotations

import os

import click

from . import client
from ..core.errors import McppError
from .paths import Unsafe, home_dir, server_id, workspace_root


def _ident(manifest_path: str | None) -> str | None:
    start = os.path.dirname(os.path.abspath(manifest_path)) if manifest_path else os.getcwd()
    root = workspace_root(start)
    if root is None:
        return None
    home = home_dir()
    return server_id(root, home)


@click.group("server")
def server_group():
    """The warm build server of this workspace (build, run and test go through it)."""


@server_group.command("status")
@click.pass_obj
def status_cmd(ctx):
    """Whether a server runs for this workspace, and what it holds."""
    info = _ask(ctx, "status")
    if info is None:
        return
    for key, value in info.items():
        click.echo(f"{key}: {value}")


@server_group.command("stop")
@click.pass_obj
def stop_cmd(ctx):
    """Stop this workspace's server (after the builds it is running)."""
    info = _ask(ctx, "stop")
    if info is None:
        return
    running = info.get("running", 0)
    click.echo(f"stopping server after its {running} running build(s)" if running else "stopped server")


def _ask(ctx, op: str) -> dict | None:
    """The answer of this workspace's server to `op`, or None (said to the user) when none runs.
    Where no server may run (the socket directory is not private), an error (exit 2)."""
    ident = _ident(ctx.manifest_path)
    try:
        info = client.request_once(ident, {"op": op}) if ident else None
    except Unsafe as e:
        raise McppError(f"no mcpp server can run: {e}",
                        notes=["note: builds run in process meanwhile; see `Sockets` in docs/server.md"]) from None
    if info is None:
        click.echo("no server running for this workspace")
    return info
