"""One command table (engine/core/commands.py) behind click's registration and the thin client's
routing: a command is registered and routed from it, and from nowhere else."""
from __future__ import annotations

import click
import pytest

from mcpp.engine.cli import app
from mcpp.engine.core.commands import COMMANDS, SERVED
from mcpp.engine.server.client import wanted


def test_click_registers_exactly_the_table():
    assert sorted(app.cli.commands) == sorted(name for name, _attr, _served in COMMANDS)
    for name, attr, _served in COMMANDS:
        assert app.cli.commands[name] is getattr(app, attr)


def test_the_client_routes_exactly_the_commands_the_table_serves(monkeypatch):
    monkeypatch.delenv("MCPP_NO_SERVER", raising=False)  # the suite's default; the client obeys it
    for name, _attr, served in COMMANDS:
        assert (wanted([name]) is not None) == served, name
    assert SERVED == ("build", "run", "test")


def test_a_table_row_without_a_click_command_stops_registration():
    group = click.Group("mcpp")
    namespace = {"build_cmd": app.build_cmd}
    with pytest.raises(RuntimeError, match="names `nothing_cmd` for `mcpp ghost`"):
        app._register(group, namespace, (("build", "build_cmd", True), ("ghost", "nothing_cmd", False)))
    assert list(group.commands) == ["build"]
