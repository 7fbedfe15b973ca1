"""One command table (engine/core/commands.py) behind click's registration and the thin client's
routing: a command is registered and routed from it, and from nowhere else."""
from __future__ import annotations

import importlib

import click
from click.testing import CliRunner
import pytest

from mcpp.engine.cli import app
from mcpp.engine.core.commands import COMMANDS, SERVED
from mcpp.engine.server.client import wanted


def test_click_registers_exactly_the_table():
    ctx = click.Context(app.cli)
    assert app.cli.list_commands(ctx) == sorted(name for name, _attr, _served in COMMANDS)
    for name, attr, _served in COMMANDS:
        module, _sep, name_there = attr.rpartition(":")
        where = importlib.import_module(f"mcpp.engine.{module}") if module else app
        assert app.cli.get_command(ctx, name) is getattr(where, name_there), name


def test_a_row_naming_another_module_is_imported_only_when_its_command_is_looked_up():
    lazy = [(name, attr) for name, attr, _served in COMMANDS if ":" in attr]
    assert {name for name, _attr in lazy} >= {"cache", "publish", "server", "worker", "add", "update"}
    group = app._Commands("mcpp")
    app._register(group, {}, (("ghost", "cli.new:no_such_cmd", False),))
    assert group.list_commands(click.Context(group)) == ["ghost"]
    with pytest.raises(RuntimeError, match="names `cli.new:no_such_cmd` for `mcpp ghost`"):
        group.get_command(click.Context(group), "ghost")


def test_the_client_routes_exactly_the_commands_the_table_serves(monkeypatch):
    monkeypatch.delenv("MCPP_NO_SERVER", raising=False)  # the suite's default; the client obeys it
    for name, _attr, served in COMMANDS:
        assert (wanted([name]) is not None) == served, name
    assert SERVED == ("build", "run", "test")


def test_a_table_row_without_a_click_command_stops_registration():
    group = app._Commands("mcpp")
    namespace = {"build_cmd": app.build_cmd}
    with pytest.raises(RuntimeError, match="names `nothing_cmd` for `mcpp ghost`"):
        app._register(group, namespace, (("build", "build_cmd", True), ("ghost", "nothing_cmd", False)))
    assert list(group.commands) == ["build"]


def test_a_mistyped_command_is_answered_with_the_closest_one_wherever_it_lives():
    group = app._Commands("mcpp")  # a fresh group: nothing looked up yet
    app._register(group, vars(app))
    res = CliRunner().invoke(group, ["publsh"])
    assert res.exit_code == 2
    assert "No such command 'publsh'. Did you mean 'publish'?" in res.output
