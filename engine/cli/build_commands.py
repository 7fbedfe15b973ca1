"""`mcpp run`, `mcpp test` and `mcpp install`: a build (engine/cli/app.py's flags and options),
then what is done with it. Their click commands are made when one of them is looked up (the
command table, engine/core/commands.py), so that a `mcpp build` does not make them.
"""
from __future__ import annotations

import sys
from dataclasses import replace

import click

from ..build.compose import build
from .app import _options, build_flags
from .launch import Ctx


class _RunCommand(click.Command):
    """`mcpp run [OPTIONS] [BIN] [-- ARGS]`: everything before the first `--` is parsed as
    `build`'s would be (an unknown option is an error with click's did-you-mean, never a binary
    name); everything after it goes to the program untouched, options and `--` included."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            cut = args.index("--")
            args, ctx.meta["mcpp.program_args"] = args[:cut], args[cut + 1:]
        else:
            ctx.meta["mcpp.program_args"] = []
        return super().parse_args(ctx, args)

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        return super().collect_usage_pieces(ctx) + ["[-- ARGS]..."]


@click.command("run", cls=_RunCommand)
@build_flags
@click.argument("binary", metavar="[BIN]", nargs=-1)
@click.pass_obj
def run_cmd(ctx: Ctx, binary, **kw):
    """Build, then run a binary: mcpp run [BIN] [-- ARGS]."""
    from .run import run_binary

    if len(binary) > 1:
        raise click.UsageError(f"unexpected argument {binary[1]!r}; pass program arguments after `--`: "
                               f"mcpp run {binary[0]} -- {' '.join(binary[1:])}")
    args = list(click.get_current_context().meta["mcpp.program_args"])
    name = binary[0] if binary else None
    opts = replace(_options(ctx, kw), executes=True)
    reporter = ctx.reporter(kw["message_format"])
    outcome = build(opts, reporter, memory=ctx.memory)
    sys.exit(run_binary(outcome, name, args, reporter))


@click.command("test")
@build_flags
@click.option("--timeout", "timeout", type=click.FloatRange(min=0), default=300, metavar="SECS",
              help="Kill a test still running after SECS seconds (default 300; 0: no limit).")
@click.argument("pattern", required=False)
@click.pass_obj
def test_cmd(ctx: Ctx, pattern, timeout, **kw):
    """Build and run the tests (tests/ and test/, or [test] dirs), one binary each."""
    from .run_tests import run_tests

    opts = replace(_options(ctx, kw, with_dev=True), executes=True)
    reporter = ctx.reporter(kw["message_format"])
    outcome = build(opts, reporter, with_tests=True, memory=ctx.memory)
    sys.exit(run_tests(outcome, pattern, reporter, json_mode=kw["message_format"] == "json", timeout=timeout))


@click.command("install")
@build_flags
@click.option("--prefix", "prefix", required=True, metavar="DIR",
              help="Install under DIR: bin/, lib/ (with lib/pkgconfig/NAME.pc) and include/.")
@click.pass_obj
def install_cmd(ctx: Ctx, prefix, **kw):
    """Build (release profile unless --profile), then install binaries, libraries, headers and
    a pkg-config file under --prefix ($DESTDIR in front, as `make install`)."""
    from .install import install

    kw["release"] = kw["release"] or not kw["profile"]
    opts = replace(_options(ctx, kw), executes=True)
    reporter = ctx.reporter(kw["message_format"])
    install(build(opts, reporter, memory=ctx.memory), prefix, reporter)
