"""The `mcpp` command line (click). Parses flags, calls the engine, renders errors.

Nothing below this module prints an error or exits: they raise `McppError`, and `main` turns it
into `error: ...` and its exit code (`errors.py`: 2 for a usage or manifest error, 1 for a failed
build, test or run). A Python traceback reaching a user is a bug.
"""
from __future__ import annotations

import os
import shutil
import sys
import time
import warnings

import click

from mcpp.cas.statcache import StateDiscarded
from mcpp.sandbox import NAMES as SANDBOXES

from ..build.compose import BuildOptions, build
from ..build.memory import BuildMemory, NoMemory
from ..core.commands import COMMANDS
from ..core import interrupt
from ..core.errors import EXIT_USER_ERROR, McppError, display_path, environment_error
from ..core.settings import RemoteFlags, Settings
from ..package.graph import load_graph
from ..package.model import Selection
from ..report.reporter import Reporter


class _Launch:
    """What `main` hands the command line: the raw arguments, the build's memory and when the
    command began (a `time.time()` value: engine/core/command_clock.py)."""

    def __init__(self, argv: list[str], memory: BuildMemory, started: float | None = None) -> None:
        self.argv = argv
        self.memory = memory
        self.started = time.time() if started is None else started


class _Ctx:
    def __init__(self, verbose: int, quiet: bool, color: str, jobs: int, manifest_path: str | None,
                 launch: _Launch, settings: Settings):
        self.argv = launch.argv
        self.memory = launch.memory  # where a build takes warm state from (engine/build/memory.py)
        self.started = launch.started
        self.settings = settings  # flags aside, what the command was told: read once, here
        self.verbose = verbose
        self.quiet = quiet
        self.color = color
        self.jobs = jobs
        self.manifest_path = manifest_path

    def reporter(self, message_format: str = "human") -> Reporter:
        return Reporter(verbose=self.verbose, quiet=self.quiet, json_mode=message_format == "json",
                        color=self.color)


def _split_features(values: tuple[str, ...]) -> tuple[str, ...]:
    out: list[str] = []
    for v in values:
        out += [f for f in v.replace(",", " ").split() if f]
    return tuple(out)


def context_flags() -> list:
    """What a manifest is folded for: shared by build, run, test and metadata."""
    return [
        click.option("--target", "target", metavar="TRIPLE", default=None,
                     help="Target triple (default: the host); selects [target.<triple>] and cfg(...) sections."),
        click.option("--accel", "accel", metavar="SPEC", default=None,
                     help="Accelerator set for this build, e.g. 'cuda12.9+{sm_89}, vulkan1.2' "
                          "(default: [build] accel)."),
        click.option("--no-accel", "no_accel", is_flag=True, help="Build with the empty accelerator set."),
        click.option("--strict", is_flag=True, help="Unknown manifest keys are errors, not warnings."),
    ]


def lock_flags() -> list:
    """How index dependencies are resolved (docs/dependencies.md)."""
    return [
        click.option("--locked", is_flag=True, help="Refuse to build if mcpp.lock would change."),
        click.option("--offline", is_flag=True,
                     help="Never read the library index: index packages from the source cache or vendor/."),
    ]


def _apply(options):
    def decorate(fn):
        for opt in reversed(options()):
            fn = opt(fn)
        return fn
    return decorate


def build_flags(fn):
    """The flags `build`, `run` and `test` share."""
    options = [
        click.option("--release", is_flag=True, help="Build with the release profile."),
        click.option("--profile", "profile", metavar="NAME", help="Build with the named profile."),
        click.option("--features", "features", multiple=True, metavar="LIST",
                     help="Comma- or space-separated features to activate."),
        click.option("--all-features", is_flag=True, help="Activate every feature."),
        click.option("--no-default-features", is_flag=True, help="Do not activate the `default` feature."),
        *context_flags(),
        click.option("-p", "--package", "packages", multiple=True, metavar="NAME", help="Package(s) to build."),
        click.option("--toolchain", metavar="NAME", help="gcc (default), gcc-NN, clang (the newest installed clang-NN) or clang-NN."),
        click.option("--keep-going", is_flag=True, help="Build as much as possible after a failure."),
        click.option("--sandbox", type=click.Choice(SANDBOXES), default=None,
                     help="How actions are isolated (default: bwrap when it works, else dir)."),
        click.option("--remote", "remote", metavar="URL", default=None,
                     help="Remote cache (REAPI): grpcs://HOST:PORT (TLS), grpc://HOST:PORT or unix:PATH "
                          "(else MCPP_REMOTE, else [remote] url in $MCPP_HOME/config.toml)."),
        click.option("--remote-upload/--no-remote-upload", "remote_upload", default=None,
                     help="Upload results of actions run here to the remote cache."),
        click.option("--remote-exec/--no-remote-exec", "remote_exec", default=None,
                     help="Run actions on the remote server's workers (REAPI Execute; docs/remote.md)."),
        click.option("--remote-retries", "remote_retries", type=click.IntRange(min=0), default=None, metavar="N",
                     help="Retries of a remote call that failed transiently, under a per-build budget "
                          "(default 5; 0: none; else [remote] retries)."),
        click.option("--remote-jobs", "remote_jobs", type=click.IntRange(1, 1024), default=None, metavar="N",
                     help="Remote cache lookups in flight at once, whatever -j is (default 32; else [remote] jobs)."),
        click.option("--remote-download", "remote_download", type=click.Choice(["all", "toplevel", "minimal"]),
                     default=None, help="What remote hits download: every output, target/'s artifacts (default) "
                                        "or only what local actions need (else [remote] download)."),
        click.option("--remote-instance-name", "remote_instance", metavar="NAME", default=None,
                     help="REAPI instance name (else [remote] instance; default \"\")."),
        click.option("--remote-header", "remote_headers", metavar="KEY=VALUE", multiple=True,
                     help="Send this header with every remote call (repeatable; with [remote] headers)."),
        click.option("--message-format", type=click.Choice(["human", "json"]), default="human",
                     help="json: one JSON object per build event on stdout."),
        click.option("--timings", type=click.Choice(["html", "json"]), is_flag=False, flag_value="html",
                     default=None, help="Write a timings report to target/mcpp-timings/ (html, or =json)."),
        click.option("--trace", "trace", metavar="FILE", type=click.Path(), default=None,
                     help="Write a Chrome trace-event file of the build (Perfetto, chrome://tracing)."),
        click.option("-j", "--jobs", "jobs_local", type=int, default=None, metavar="N",
                     help="Parallel actions (default and 0: number of CPUs)."),
        # Accepted after the subcommand too (`mcpp build -q`), as Cargo does.
        click.option("-q", "--quiet", "quiet_local", is_flag=True, help="Print only errors and warnings."),
        click.option("-v", "--verbose", "verbose_local", count=True, help="Print commands as they run."),
        click.option("--no-server", "no_server", is_flag=True,
                     help="Build in this process, not in the workspace's warm server (docs/server.md)."),
        *lock_flags(),
    ]
    for opt in reversed(options):
        fn = opt(fn)
    return fn


def _options(ctx: _Ctx, kw: dict, with_dev: bool = False) -> BuildOptions:
    kw.pop("no_server", None)  # read by the server client (engine/server/client.py) before click
    ctx.quiet = ctx.quiet or kw.pop("quiet_local", False)
    ctx.verbose = ctx.verbose + kw.pop("verbose_local", 0)
    if kw["release"] and kw["profile"] and kw["profile"] != "release":
        raise click.UsageError("--release conflicts with --profile " + kw["profile"])
    profile = kw["profile"] or ("release" if kw["release"] else "dev")
    jobs = kw["jobs_local"] if kw["jobs_local"] is not None else ctx.jobs
    if jobs is not None and jobs < 0:
        raise click.UsageError("-j must be a number of parallel actions, or 0 for all cores")
    return BuildOptions(
        cwd=os.getcwd(), manifest_path=ctx.manifest_path, profile=profile,
        selection=Selection(packages=kw["packages"], features=_split_features(kw["features"]),
                            all_features=kw["all_features"], no_default_features=kw["no_default_features"],
                            with_dev_deps=with_dev, target=kw["target"], accel=kw["accel"],
                            no_accel=kw["no_accel"], strict=kw["strict"], locked=kw["locked"],
                            offline=kw["offline"]),
        jobs=jobs or 0, keep_going=kw["keep_going"], toolchain=kw["toolchain"], sandbox=kw["sandbox"],
        timings=kw["timings"], trace=kw["trace"], command_started=ctx.started,
        settings=ctx.settings.with_flags(RemoteFlags(
            kw["remote"], kw["remote_upload"], kw["remote_exec"], retries=kw["remote_retries"],
            instance_name=kw["remote_instance"], remote_jobs=kw["remote_jobs"], headers=tuple(kw["remote_headers"]),
            download=kw["remote_download"])))


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
@click.option("-v", "--verbose", count=True, help="Print commands as they run.")
@click.option("-q", "--quiet", is_flag=True, help="Print only errors and warnings.")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto")
@click.option("-j", "--jobs", type=int, default=None, metavar="N", help="Parallel actions (0: number of CPUs).")
@click.option("--manifest-path", type=click.Path(), default=None, help="Path to mcpp.toml.")
@click.option("--no-server", is_flag=True, help="Build in this process, not in the workspace's warm server.")
@click.version_option(package_name="mcpp", prog_name="mcpp")
@click.pass_context
def cli(ctx, verbose, quiet, color, jobs, manifest_path, no_server):
    """mcpp: a hermetic build engine for C and C++."""
    launch = ctx.obj if isinstance(ctx.obj, _Launch) else _Launch([], NoMemory())
    ctx.obj = _Ctx(verbose, quiet, color, jobs, manifest_path, launch, Settings.read(os.environ))


@click.command("build")
@build_flags
@click.pass_obj
def build_cmd(ctx: _Ctx, **kw):
    """Build the package (or workspace)."""
    from ..build.compose import record_noop
    from ..state import noop

    opts = _options(ctx, kw)
    reporter = ctx.reporter(kw["message_format"])
    started = noop.begin(ctx.argv)
    outcome = build(opts, reporter, memory=ctx.memory)
    # A build asked for its timings writes a report each time: never answer it from the no-op path.
    if reporter.warned or opts.timings or opts.trace:
        return
    if kw["message_format"] == "human":
        record_noop(ctx.argv, outcome, ctx.quiet, started, opts.home)
    else:
        # A JSON build's record answers a later plain build (engine/state/noop.py), not this
        # command's caller: it is written after the reply. Until then the record is pending, and
        # a build that comes first takes the full path.
        ctx.memory.after_reply(lambda: record_noop(ctx.argv, outcome, ctx.quiet, started, opts.home))


@click.command("clean")
@click.pass_obj
def clean_cmd(ctx: _Ctx):
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
def new_cmd(ctx: _Ctx, name, lib, vcs):
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
def init_cmd(ctx: _Ctx, path, lib, name, vcs):
    """Make the existing directory PATH (default: here) a package; existing files are kept."""
    from .new import init_package

    dest, name = init_package(os.path.join(os.getcwd(), path), name, lib)
    _finish_scaffold(ctx, dest, vcs)
    ctx.reporter().status("Created", f"{'library' if lib else 'binary (application)'} `{name}` package")


def _finish_scaffold(ctx: _Ctx, path: str, vcs: str) -> None:
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
def explain_cmd(ctx: _Ctx, action, release, profile):
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
@_apply(context_flags)
@click.pass_obj
def metadata_cmd(ctx: _Ctx, fmt, **kw):
    """The folded manifest(s) and package graph of this build (target, features, accel applied)."""
    from . import metadata

    selection = Selection(packages=kw["packages"], features=_split_features(kw["features"]),
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


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """A dropped state file (`StateDiscarded`) is a warning to the user, not a Python warning."""
    if issubclass(category, StateDiscarded):
        Reporter().raw_warning(f"warning: {message}")
    else:
        _python_showwarning(message, category, filename, lineno, file, line)


_python_showwarning = warnings.showwarning


def main(argv: list[str] | None = None, memory: BuildMemory | None = None, started: float | None = None) -> None:
    """`mcpp ARGV`; `memory`: what its build may take from its host (a server's build child
    passes its own; None: the `mcpp` process's, which keeps nothing); `started`: when the
    command began, as `time.time()` (None: now)."""
    launch = _Launch(list(sys.argv[1:] if argv is None else argv), memory or NoMemory(), started)
    warnings.showwarning = _show_warning
    interrupt.install()
    try:
        cli.main(args=argv, prog_name="mcpp", standalone_mode=False, obj=launch)
    except McppError as e:
        Reporter().error(e.render())
        sys.exit(e.exit_code)
    except click.exceptions.Abort as e:
        sys.stderr.write("error: interrupted\n")
        sys.exit(interrupt.exit_code(e))
    except click.ClickException as e:
        e.show()
        sys.exit(EXIT_USER_ERROR)
    except KeyboardInterrupt as e:
        sys.stderr.write("error: interrupted\n")
        sys.exit(interrupt.exit_code(e))
    except BrokenPipeError:
        sys.exit(1)
    except OSError as e:
        err = environment_error(e)
        Reporter().error(err.render())
        sys.exit(err.exit_code)
    except Exception as e:  # noqa: BLE001 - the last net: a bug, said as one, never a traceback
        if os.environ.get("MCPP_TRACEBACK"):
            raise
        Reporter().error(f"error: internal error: {type(e).__name__}: {str(e)[:500]}\n"
                         f"note: this is a bug in mcpp; run again with MCPP_TRACEBACK=1 to see where it happened")
        sys.exit(1)
    sys.exit(0)


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
