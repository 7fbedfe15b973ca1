"""The `mcpp` command line as click reads it: every command but a plain `mcpp build`, which
engine/cli/dispatch.py runs without importing click (engine/cli/flags.py declares the options both
read).

Nothing below this module prints an error or exits: they raise `McppError`, and launch.py's
`guarded` turns it into `error: ...` and its exit code (`errors.py`: 2 for a usage or manifest
error, 1 for a failed build, test or run). A Python traceback reaching a user is a bug.
"""
from __future__ import annotations

import os
import shutil
import sys

import click

from ..build.memory import NoMemory
from ..core.commands import COMMANDS
from ..core import interrupt
from ..core.errors import EXIT_USER_ERROR, McppError, display_path
from ..core.settings import Settings
from ..package.graph import load_graph
from ..package.model import Selection
from .flags import BOOL_PAIR, BUILD_FLAGS, CONTEXT_FLAGS, COUNT, FLAG, GLOBAL_FLAGS, MULTIPLE, OPTIONAL, Flag
from .launch import Ctx, Launch, UsageProblem, options, run_build, split_features


def _option(flag: Flag):
    """The click option of a flag of engine/cli/flags.py."""
    names = (*flag.names, flag.dest) if flag.kind != BOOL_PAIR else (f"{flag.names[0]}/{flag.off[0]}", flag.dest)
    kw: dict = {"help": flag.help, "metavar": flag.metavar}
    if flag.kind == FLAG:
        kw["is_flag"] = True
    elif flag.kind == COUNT:
        kw["count"] = True
    else:
        kw["default"] = flag.default
        if flag.kind == MULTIPLE:
            kw["multiple"] = True
        if flag.choices is not None:
            kw["type"] = click.Choice(flag.choices)
        elif flag.number is not None:
            low, high = flag.number
            kw["type"] = int if low is None and high is None else click.IntRange(low, high)
        elif flag.path:
            kw["type"] = click.Path()
        if flag.kind == OPTIONAL:
            kw.update(is_flag=False, flag_value=flag.flag_value)
    if kw.get("metavar") is None:
        kw.pop("metavar", None)
    return click.option(*names, **kw)


def _apply(flags: tuple[Flag, ...]):
    def decorate(fn):
        for flag in reversed(flags):
            fn = _option(flag)(fn)
        return fn
    return decorate


def build_flags(fn):
    """The flags `build`, `run` and `test` share."""
    return _apply(BUILD_FLAGS)(fn)


def _options(ctx: Ctx, kw: dict, with_dev: bool = False):
    try:
        return options(ctx, kw, with_dev)
    except UsageProblem as e:
        raise click.UsageError(str(e)) from None


class _Commands(click.Group):
    """The `mcpp` group: commands that live in their own module (a table row `module:attr`,
    engine/core/commands.py) are imported when they run or when `--help` lists them, so a build
    never pays for the modules of `cache`, `publish`, `server`, `worker` and the rest."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.lazy: dict[str, str] = {}  # command name -> "module:attr", module under mcpp.engine

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            self.add_command(_load(cmd_name, self.lazy[cmd_name]), cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple:
        # click suggests close names from the commands loaded: a name that is none loads them all.
        if args and self.get_command(ctx, click.utils.make_str(args[0])) is None:
            for name in self.lazy:
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)


def _load(name: str, where: str) -> click.Command:
    import importlib

    module, _sep, attr = where.partition(":")
    command = getattr(importlib.import_module(f"mcpp.engine.{module}"), attr, None)
    if not isinstance(command, click.Command):
        raise RuntimeError(f"engine/core/commands.py names `{where}` for `mcpp {name}`; it is no click command")
    return command


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@_apply(GLOBAL_FLAGS)
@click.version_option(package_name="mcpp", prog_name="mcpp")
@click.pass_context
def cli(ctx, verbose, quiet, color, jobs, manifest_path, no_server):
    """mcpp: a hermetic build engine for C and C++."""
    launch = ctx.obj if isinstance(ctx.obj, Launch) else Launch([], NoMemory())
    ctx.obj = Ctx(verbose, quiet, color, jobs, manifest_path, launch, Settings.read(os.environ))


@click.command("build")
@build_flags
@click.pass_obj
def build_cmd(ctx: Ctx, **kw):
    """Build the package (or workspace)."""
    run_build(ctx, _options(ctx, kw), kw["message_format"])


@click.command("clean")
@click.pass_obj
def clean_cmd(ctx: Ctx):
    """Remove target/."""
    graph = load_graph(os.getcwd(), ctx.manifest_path, Selection())
    target = graph.target_dir
    if os.path.isdir(target):
        shutil.rmtree(target)
        ctx.reporter().status("Removed", display_path(target))


_VCS = click.option("--vcs", type=click.Choice(["git", "none"]), default="git",
                    help="Start a git repository (default; not inside an existing one) or none.")


@click.command("new")
@click.argument("name")
@click.option("--lib", is_flag=True, help="Create a library package with a module interface.")
@_VCS
@click.pass_obj
def new_cmd(ctx: Ctx, name, lib, vcs):
    """Create a new package in directory NAME."""
    from .new import new_package

    path = new_package(os.getcwd(), name, lib)
    _finish_scaffold(ctx, path, vcs)
    ctx.reporter().status("Created", f"{'library' if lib else 'binary (application)'} `{os.path.basename(path)}` package")


@click.command("init")
@click.argument("path", default=".", required=False)
@click.option("--lib", is_flag=True, help="Create a library package with a module interface.")
@click.option("--name", "name", metavar="NAME", help="Package name (default: the directory's name).")
@_VCS
@click.pass_obj
def init_cmd(ctx: Ctx, path, lib, name, vcs):
    """Make the existing directory PATH (default: here) a package; existing files are kept."""
    from .new import init_package

    dest, name = init_package(os.path.join(os.getcwd(), path), name, lib)
    _finish_scaffold(ctx, dest, vcs)
    ctx.reporter().status("Created", f"{'library' if lib else 'binary (application)'} `{name}` package")


def _finish_scaffold(ctx: Ctx, path: str, vcs: str) -> None:
    """What `new` and `init` do after the files: git, and joining an enclosing workspace."""
    from .new import add_workspace_member, enclosing_workspace, init_vcs

    workspace = enclosing_workspace(path)
    init_vcs(path, vcs)
    if workspace is None:
        return
    reporter = ctx.reporter()
    try:
        member = add_workspace_member(workspace, path)
    except McppError as e:
        reporter.warning(e.message)
        return
    if member is not None:
        reporter.status("Adding", f"`{member}` as member of workspace at `{display_path(os.path.dirname(workspace))}`")


@click.command("explain")
@click.argument("action", required=False)
@click.option("--release", is_flag=True, help="Explain an action of the release profile's build.")
@click.option("--profile", "profile", metavar="NAME", help="Explain an action of the named profile's build.")
@click.pass_obj
def explain_cmd(ctx: Ctx, action, release, profile):
    """Why ACTION ran: its key inputs and what changed since the run before.

    Without ACTION, list the actions that can be explained."""
    from ..exec.explain import explain_lines, find_action, list_lines, load_records
    from ..package.layout import Layout

    if release and profile and profile != "release":
        raise click.UsageError("--release conflicts with --profile " + profile)
    profile = profile or ("release" if release else "dev")
    graph = load_graph(os.getcwd(), ctx.manifest_path, Selection())
    path = Layout.of(graph, profile).explain_log
    records = load_records(path)
    damaged = McppError(f"the explain log `{display_path(path)}` is damaged (written by another version?); "
                        f"build again to rewrite it")
    if not isinstance(records, dict):
        raise damaged
    if action is None:
        click.echo("\n".join(list_lines(records, profile)))
        return
    action_id = find_action(records, action)
    try:
        if not isinstance(records[action_id], list):
            raise TypeError
        lines = explain_lines(action_id, records[action_id])
    except (AttributeError, IndexError, KeyError, TypeError, ValueError):
        raise damaged from None
    click.echo("\n".join(lines))


@click.command("metadata")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              help="text: the flat folded manifest per package; json: with the package graph.")
@click.option("--features", "features", multiple=True, metavar="LIST",
              help="Comma- or space-separated features to activate.")
@click.option("--all-features", is_flag=True, help="Activate every feature.")
@click.option("--no-default-features", is_flag=True, help="Do not activate the `default` feature.")
@click.option("-p", "--package", "packages", multiple=True, metavar="NAME", help="Package(s) to show.")
@_apply(CONTEXT_FLAGS)
@click.pass_obj
def metadata_cmd(ctx: Ctx, fmt, **kw):
    """The folded manifest(s) and package graph of this build (target, features, accel applied)."""
    from . import metadata

    selection = Selection(packages=kw["packages"], features=split_features(kw["features"]),
                          all_features=kw["all_features"], no_default_features=kw["no_default_features"],
                          target=kw["target"], accel=kw["accel"], no_accel=kw["no_accel"], strict=kw["strict"])
    graph = metadata.collect(os.getcwd(), ctx.manifest_path, selection)
    reporter = ctx.reporter()
    for w in metadata.warnings(graph):
        reporter.raw_warning(w)
    settings = ctx.settings  # the payload environment is resolved against the command's one home
    warn = reporter.warning  # an index accepted unverified says so here too
    click.echo(metadata.render_json(graph, settings=settings, warn=warn) if fmt == "json"
               else metadata.render_text(graph, settings, warn), nl=False)


def click_main(launch: Launch) -> None:
    """The command line `launch` as click reads it, click's own errors said as click says them
    (engine/cli/launch.py's `guarded` says the rest)."""
    try:
        cli.main(args=launch.argv, prog_name="mcpp", standalone_mode=False, obj=launch)
    except click.exceptions.Abort as e:
        sys.stderr.write("error: interrupted\n")
        sys.exit(interrupt.exit_code(e))
    except click.ClickException as e:
        e.show()
        sys.exit(EXIT_USER_ERROR)


def _register(group: _Commands, namespace: dict, table=COMMANDS) -> None:
    """Each command of the table (engine/core/commands.py), in its order, and nothing else: one
    named `module:attr` is imported when it is first looked up (`_Commands`)."""
    for name, attr, _served in table:
        if ":" in attr:
            group.lazy[name] = attr
            continue
        command = namespace.get(attr)
        if not isinstance(command, click.Command):
            raise RuntimeError(f"engine/core/commands.py names `{attr}` for `mcpp {name}`; engine/cli/app.py has none")
        group.add_command(command, name)


_register(cli, globals())
