"""What every `mcpp` command line shares, read by click or not: the command's context, a build's
options from its flags, the build command itself, and the net that turns what a command raises
into `error: ...` and an exit code (`errors.py`: 2 for a usage or manifest error, 1 for a failed
build, test or run). A Python traceback reaching a user is a bug.

A plain `mcpp build` (engine/cli/flags.py's `plain_build`) runs from here without click
(engine/cli/dispatch.py); every other line is click's (engine/cli/app.py).
"""
from __future__ import annotations

import os
import sys
import time
import warnings

from mcpp.cas.statcache import StateDiscarded

from ..build.compose import BuildOptions, build
from ..build.memory import BuildMemory, NoMemory
from ..core import interrupt
from ..core.errors import McppError, environment_error
from ..core.settings import RemoteFlags, Settings
from ..package.model import Selection
from ..report.reporter import Reporter
from .flags import plain_build

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


class Launch:
    """What a command line is run with (`start`): the raw arguments, the build's memory and when
    the command began (a `time.time()` value: engine/core/command_clock.py)."""

    def __init__(self, argv: list[str], memory: BuildMemory, started: float | None = None) -> None:
        self.argv = argv
        self.memory = memory
        self.started = time.time() if started is None else started


class Ctx:
    """The context of one command: `mcpp`'s own options, its launch and its settings."""

    def __init__(self, verbose: int, quiet: bool, color: str, jobs: int | None, manifest_path: str | None,
                 launch: Launch, settings: Settings):
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


class UsageProblem(Exception):
    """Flags that contradict each other: click says it with the command's usage (app.py)."""


def split_features(values: tuple[str, ...]) -> tuple[str, ...]:
    out: list[str] = []
    for v in values:
        out += [f for f in v.replace(",", " ").split() if f]
    return tuple(out)


def options(ctx: Ctx, kw: dict, with_dev: bool = False) -> BuildOptions:
    """The build that `build`'s flags (engine/cli/flags.py's BUILD_FLAGS, as `kw`) ask for."""
    kw.pop("no_server", None)  # read by the server client (engine/server/client.py) before the command line
    ctx.quiet = ctx.quiet or kw.pop("quiet_local", False)
    ctx.verbose = ctx.verbose + kw.pop("verbose_local", 0)
    if kw["release"] and kw["profile"] and kw["profile"] != "release":
        raise UsageProblem("--release conflicts with --profile " + kw["profile"])
    profile = kw["profile"] or ("release" if kw["release"] else "dev")
    jobs = kw["jobs_local"] if kw["jobs_local"] is not None else ctx.jobs
    if jobs is not None and jobs < 0:
        raise UsageProblem("-j must be a number of parallel actions, or 0 for all cores")
    return BuildOptions(
        cwd=os.getcwd(), manifest_path=ctx.manifest_path, profile=profile,
        selection=Selection(packages=kw["packages"], features=split_features(kw["features"]),
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


def run_build(ctx: Ctx, opts: BuildOptions, message_format: str) -> None:
    """`mcpp build`: the build, and the record that lets the next identical one answer at once."""
    from ..build.compose import record_noop
    from ..state import noop

    reporter = ctx.reporter(message_format)
    started = noop.begin(ctx.argv)
    outcome = build(opts, reporter, memory=ctx.memory)
    # A build asked for its timings writes a report each time: never answer it from the no-op path.
    if reporter.warned or opts.timings or opts.trace:
        return
    if message_format == "human":
        record_noop(ctx.argv, outcome, ctx.quiet, started, opts.home)
    else:
        # A JSON build's record answers a later plain build (engine/state/noop.py), not this
        # command's caller: it is written after the reply. Until then the record is pending, and
        # a build that comes first takes the full path.
        ctx.memory.after_reply(lambda: record_noop(ctx.argv, outcome, ctx.quiet, started, opts.home))


def start(argv: list[str] | None, memory: BuildMemory | None, started: float | None) -> Launch:
    """What every command line does first: its launch, and the warnings and signals as `mcpp`
    says and takes them. `memory`: what its build may take from its host (a server's build child
    passes its own; None: the `mcpp` process's, which keeps nothing); `started`: when the command
    began, as `time.time()` (None: now)."""
    warnings.showwarning = _show_warning
    interrupt.install()
    return Launch(list(sys.argv[1:] if argv is None else argv), memory or NoMemory(), started)


def plain_build_command(launch: Launch) -> Callable[[], None] | None:
    """The build a plain `mcpp build` line asks for, read without click (engine/cli/flags.py);
    None for any other line, and for flags that contradict each other (click says so, with the
    usage)."""
    plain = plain_build(launch.argv)
    if plain is None:
        return None
    group, kw = plain
    ctx = Ctx(group["verbose"], group["quiet"], group["color"], group["jobs"], group["manifest_path"],  # type: ignore[arg-type]
              launch, Settings.read(os.environ))
    try:
        opts = options(ctx, kw)
    except UsageProblem:
        return None
    return lambda: run_build(ctx, opts, str(kw["message_format"]))


def guarded(command: Callable[[], object]) -> None:
    """Run `command`; what it raises becomes an error line and an exit code (never a traceback).
    Click's own exceptions are handled nearer the command (app.py's `click_main`)."""
    try:
        command()
    except McppError as e:
        Reporter().error(e.render())
        sys.exit(e.exit_code)
    except KeyboardInterrupt as e:
        # on a new line, as click's Abort does after its own (app.py's `click_main`)
        sys.stderr.write("\nerror: interrupted\n")
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


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """A dropped state file (`StateDiscarded`) is a warning to the user, not a Python warning."""
    if issubclass(category, StateDiscarded):
        Reporter().raw_warning(f"warning: {message}")
    else:
        _python_showwarning(message, category, filename, lineno, file, line)


_python_showwarning = warnings.showwarning
