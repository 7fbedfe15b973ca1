"""One build, end to end: load the graph, plan actions, run what is stale, report.

This is the only module that ties the layers together, and the build's composition root: the
`Home` (from `BuildOptions`), the `Stores` opened from it and the `Layout` of `target/` are made
once here and handed to each step, which is a call into the module that owns the concept
(graph, toolchain, planner, incremental state, scheduler, runner).
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import sys
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Container, cast

from mcpp.cas.action import ActionKind, Platform
from mcpp.cas.atomic import PUBLIC, write_if_changed
from mcpp.cas.home import Home

from mcpp.sandbox import SandboxUnavailable, make_sandbox

from ..core import build_env
from ..core.errors import BuildFailed, McppError
from ..core.settings import Settings, command_settings
from ..exec.action_runner import ActionRunner, SandboxRunner
from ..exec.discard import DISCARDED, Discard
from ..exec.head_start import HeadStart
from ..exec.sandbox_warm_up import SandboxWarmUp
from ..exec.staging import input_stager
from ..exec.stores import Stores
from ..manifest.load import display_path
from ..manifest.triples import host_triple
from ..package.graph import load_graph
from ..package.layout import Layout
from ..package.model import PackageGraph, Selection
from ..package.profiles import Profile, resolve_profile
from ..package.sources import glob_roots, package_sources
from ..payloads.environment import Environment, declares_any
from ..payloads import record as payload_record
from ..plan.model import ACTION_ENV
from ..plan.planner import Plan, Planner
from ..program.driver import ProgramInputs, check_loads, evaluate
from ..program.paths import PROGRAM_NAME
from ..report.diagnostics import coloured
from ..report.hidden_files import PackageDirs
from ..report.reporter import Reporter, Stopwatch
from ..state import noop
from ..state.incremental import BuildState, KeyComputer, ScanCache
from ..toolchain import linker
from ..toolchain.compilers import Toolchain, resolve_toolchain
from ..toolchain.cross import resolve_target_toolchain, toolchain_roots
from ..package.system_libs import PkgConfig, SystemFlags
from ..trust.policy import TrustPolicy
from .empty_packages import empty_package_warnings
from .memory import BuildMemory, NoMemory

if TYPE_CHECKING:  # imported by a build that asks for --timings or --trace
    from ..report.timings import TimingsRecorder
    from ..state.unchanged import Knowledge
    # imported once the plan is made (`_run_plan`): a first build's first compile, begun while
    # the rest is planned (engine/exec/head_start.py), runs while they load
    from ..exec.pipeline import ActionPipeline, Counters
    from ..exec.schedule import ScheduleResult


@dataclass
class BuildOptions:
    """What a command asks of a build (the command line's options)."""
    cwd: str = "."
    manifest_path: str | None = None
    profile: str = "dev"
    selection: Selection = field(default_factory=Selection)
    jobs: int = 0  # 0: the number of CPUs
    keep_going: bool = False
    toolchain: str | None = None
    sandbox: str | None = None  # bwrap | dir | off; None: bwrap when it works, else dir
    target_override: str | None = None  # build into this directory instead of <workspace>/target (host tools)
    # The command's settings (flags, `MCPP_*`, `$MCPP_HOME`, config.toml: engine/core/settings.py),
    # read once when the command starts; every store, cache and record of this build (and of
    # the host tool builds it starts) lives under its one home.
    settings: Settings = field(default_factory=command_settings)
    timings: str | None = None  # --timings: html | json report under target/mcpp-timings/
    trace: str | None = None  # --trace FILE: a Chrome trace-event file
    command_started: float | None = None  # when the command began, as time.time() (core/command_clock.py)
    # run/test/install use what they build: `--remote-download minimal` still fetches target/'s
    # artifacts and test binaries for them
    executes: bool = False

    @property
    def home(self) -> Home:
        return self.settings.home


@dataclass
class BuildOutcome:
    """What a build leaves: its package graph, plan, layout, toolchain and results."""
    graph: PackageGraph
    plan: Plan
    layout: Layout
    profile: Profile
    toolchain: Toolchain
    result: ScheduleResult
    elapsed: float
    discovered: dict[str, tuple[str, ...]] = field(default_factory=dict)  # action id -> headers read
    watched_files: list[str] = field(default_factory=list)  # build programs' reads, host tool sources
    watched_dirs: list[str] = field(default_factory=list)
    reads_env: bool = False  # a build program read an environment variable: no no-op fast path
    # path -> the stat a file was hashed (or written) at this build, or None (cas/statcache.py)
    read_stamp: Callable[[str], object] | None = None
    environment: Environment | None = None  # the payloads resolved, and what resolution read


class _BuildLock:
    """One build per target directory at a time; a second one waits, saying so (as Cargo)."""

    def __init__(self, lock_file: str, reporter: Reporter):
        os.makedirs(os.path.dirname(lock_file), exist_ok=True)
        self.fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            reporter.status("Blocking", "waiting for file lock on build directory", important=True)
            fcntl.flock(self.fd, fcntl.LOCK_EX)

    def release(self) -> None:
        os.close(self.fd)


def build(opts: BuildOptions, reporter: Reporter, *, with_tests: bool = False,
          runner: ActionRunner | None = None, memory: BuildMemory | None = None) -> BuildOutcome:
    """`memory`: what the build may take from its host and leaves to it (engine/build/memory.py;
    None: nothing, as in the `mcpp` process)."""
    clock = Stopwatch()
    # The build's threads (the scheduler's, the ingest, the warm-up) mostly wait on processes and
    # on C calls that let go of the GIL; each time one comes back it waits for the GIL, which a
    # busy main thread keeps for up to the switch interval: 5 ms by default, per hand-over.
    switch = sys.getswitchinterval()
    sys.setswitchinterval(min(switch, SWITCH_S))
    try:
        return _build(opts, reporter, clock, with_tests, runner, memory or NoMemory())
    finally:
        sys.setswitchinterval(switch)


def _build(opts: BuildOptions, reporter: Reporter, clock: Stopwatch, with_tests: bool,
           runner: ActionRunner | None, memory: BuildMemory) -> BuildOutcome:
    # What the build takes on trust, from its sandbox's promises (engine/trust/policy.py): results the
    # sandbox cannot prove hermetic are keyed apart and never uploaded.
    policy = TrustPolicy(opts.sandbox, opts.settings.remote())
    stores = Stores.open(opts.home, policy.remote(reporter.warning))
    graph = load_graph(opts.cwd, opts.manifest_path, opts.selection, opts.target_override, opts.settings)
    for pkg in graph.order:
        for w in pkg.manifest.warnings:
            reporter.raw_warning(w)
    profile = resolve_profile(graph.root_manifest, opts.profile)
    layout = Layout.of(graph, profile.name)
    lock = _BuildLock(layout.lock_file, reporter)
    warm = head = None
    try:
        stats, state, scans = memory.open_state(layout.stat_cache, layout.action_state, layout.execroot,
                                                layout.scan_cache)
        env = _environment(graph, layout, opts, reporter)
        # system libraries' flags: before the sandbox warms up, which binds the directories they name
        system_files, system_dirs, system_key = _system_libs(graph, opts, with_tests)
        cross = graph.context is not None and graph.context.cross
        if not cross:  # the host's toolchain adds no root to bind: its worker starts while the compilers are asked
            warm = _warm_up(opts, reporter, stores, env.roots() + system_dirs, runner, policy, memory, layout)
        toolchain = resolve_target_toolchain(opts.toolchain or graph.root_manifest.toolchain, opts.home,
                                             graph.context, graph.root_manifest, host_payload_dirs(env))
        if cross:  # its sysroot and prefix, bound read-only (toolchain_roots), are known once it is resolved
            warm = _warm_up(opts, reporter, stores, env.roots() + toolchain_roots(toolchain) + system_dirs, runner,
                            policy, memory, layout)
        head = _head_start(warm, opts, layout, stores, state, reporter)
        watched = _programs(graph, layout, toolchain, profile, opts, reporter, policy, env, memory)
        if warm is not None:  # its worker answers for the bwrap probe the first key would run
            policy.follow(warm.get)
        watched = (watched[0] + system_files, watched[1] + _pc_dirs(system_files), watched[2])
        if any(p.manifest.runtime_artifacts for p in graph.order):  # imported only then
            from . import prebuilt

            prebuilt.apply(graph, toolchain)  # a dependency's [[runtime.artifacts]]: choose one, or refuse

        def make(scan, includes, trees=None) -> Plan:
            return Planner(graph, toolchain, profile, layout=layout, scan=scan, with_tests=with_tests,
                           includes=includes, expand=memory.expand, trees=trees,
                           first_compile=head.offer if head is not None else None).build()

        if opts.target_override is None:
            # the context as a function: the in-process build never reads it, and reading the
            # toolchain's identity waits for the compilers' answers (engine/toolchain/compilers.py)
            plan = cast(Plan, memory.plan(make, scans.scan, scans.includes, graph,
                                          lambda: (toolchain.identity, profile, layout.target_dir, with_tests, env,
                                                   _linkers(toolchain), graph.archive_members, system_key)))
        else:  # a host tool's build inside the build: neither remembered nor given
            plan = make(scans.scan, scans.includes)
        announced: set[str] = set()
        first_counters = None
        trust_unchanged = True
        if plan.dynamic:  # sources a generator names as it runs: run it, then plan again (dynamic_trees.py)
            from ..plan import dynamic_trees

            first, first_counters = _run_plan(dynamic_trees.subset(plan, dynamic_trees.producers(plan)), graph, layout,
                                 toolchain, opts, reporter, state, scans, runner, stores, policy, memory,
                                 payload_roots=env.roots() + toolchain_roots(toolchain) + system_dirs, top=False,
                                 announced=announced)
            if not first.ok:
                names = ", ".join(first.failed[:3]) + (" ..." if len(first.failed) > 3 else "")
                raise BuildFailed(f"build failed: {len(first.failed)} action(s) failed ({names})")
            plan = make(scans.scan, scans.includes, dynamic_trees.list_trees(plan))
            # A generator that ran (or was restored) rewrote its tree after the server's watcher
            # said which files changed since the last build: what it knows unchanged is not.
            trust_unchanged = not first.succeeded
        for w in empty_package_warnings(graph, plan, memory.expand):
            reporter.raw_warning(w)
        adopted = head.settle({a.id: a for a in plan.actions}, plan.prereqs) if head is not None else None
        timings = _timings(opts, clock, {adopted: head.began} if head is not None and adopted is not None else None)
        result, counters = _run_plan(plan, graph, layout, toolchain, opts, reporter, state, scans, runner, stores,
                                     policy, memory, timings, env.roots() + toolchain_roots(toolchain) + system_dirs,
                                     top=opts.target_override is None, warm=warm, announced=announced,
                                     trust_unchanged=trust_unchanged, head=head)
        if first_counters is not None:
            _merge_first_phase(counters, first_counters)
        if timings is not None:  # also for a failed build: where the time went is as telling
            timings.finish(skipped=len(result.skipped))
            for path in timings.write(layout.target_dir, opts.timings, opts.trace):
                reporter.status("Timings", display_path(path))
        from .build_outputs import check_complete, make_artifact_links, write_compile_commands

        if opts.target_override is None:  # a host tool's build leaves its source tree alone
            write_compile_commands(layout, plan, changed=counters.fresh < len(plan.actions),
                                   link_at_root=graph.root_manifest.build.compile_commands == "root")
        if result.ok:
            check_complete(plan, set(result.succeeded) | set(result.fresh), counters.left_remote)
            make_artifact_links(plan)
    finally:
        if head is not None:
            head.close()
        lock.release()
        if warm is not None:
            memory.after_reply(warm.close)
    outcome = BuildOutcome(graph, plan, layout, profile, toolchain, result, clock.elapsed(),
                           {a.id: state.discovered(a.id) for a in plan.actions}, *watched,
                           read_stamp=stats.recorded, environment=env)
    record_last_build(opts.home, counters)
    for action_id in counters.healed:
        reporter.warning(f"a cached output of `{action_id}` was missing or corrupt in the store; "
                         "the action ran again and the cache is healed")
    reporter.event("build-finished", success=result.ok, executed=counters.executed,
                   cached=counters.cache_hits, remote=counters.remote_hits, fresh=counters.fresh,
                   failed=len(result.failed),
                   files_hashed=state.files_hashed, duration=round(outcome.elapsed, 3),
                   **({"remote_cache": counters.remote} if counters.remote is not None else {}))
    if not result.ok:
        names = ", ".join(result.failed[:3]) + (" ..." if len(result.failed) > 3 else "")
        raise BuildFailed(f"build failed: {len(result.failed)} action(s) failed ({names})")
    if counters.remote is not None:
        reporter.status("Remote", remote_line(counters.remote))
    reporter.status("Finished", f"{profile.summary} in {outcome.elapsed:.2f}s{_hits(counters)}")
    if opts.target_override is None:
        _bound_home(opts, memory)
    return outcome


def _system_libs(graph: PackageGraph, opts: BuildOptions, with_tests: bool) -> tuple[list[str], tuple[str, ...], tuple]:
    """Each package's system libraries (`{ pkg-config = ... }`, `{ system = ... }`), resolved once
    per build onto the package (engine/package/system_libs.py). Returns the `.pc` files (watched
    by the no-op record), the directories their flags name (bound into the sandbox) and what the
    flags are (part of a remembered plan's key). Nothing is asked when no package declares one."""
    if not any(p.manifest.system_libs or p.manifest.dev_system_libs for p in graph.order):
        return [], (), ()
    asker = PkgConfig(str(opts.home.root))
    files: list[str] = []
    dirs: list[str] = []
    key = []
    for pkg in graph.order:
        pkg.system = asker.flags_of(pkg.manifest.system_libs)
        pkg.dev_system = asker.flags_of(pkg.manifest.dev_system_libs) if with_tests else SystemFlags()
        for flags in (pkg.system, pkg.dev_system):
            files += flags.pc_files
            dirs += flags.dirs
        key.append((pkg.name, pkg.system.identity(), pkg.dev_system.identity()))
    asker.save()
    which = shutil.which("pkg-config")
    return files + ([which] if which else []), tuple(dict.fromkeys(dirs)), tuple(key)


def _pc_dirs(pc_files: list[str]) -> list[str]:
    """The directories pkg-config searched before finding each `.pc` file (PKG_CONFIG_PATH's, and
    the file's own): a module file appearing there changes which one is found."""
    if not pc_files:
        return []
    dirs = [d for d in os.environ.get("PKG_CONFIG_PATH", "").split(os.pathsep) if d]
    return list(dict.fromkeys(dirs + [os.path.dirname(f) for f in pc_files if f.endswith(".pc")]))


def _timings(opts: BuildOptions, clock: Stopwatch, begun: dict[str, float] | None) -> TimingsRecorder | None:
    """The recorder of --timings and --trace (None without them: the module is not imported);
    `begun`: the action begun before the schedule, with when (`_head_start`)."""
    if not (opts.timings or opts.trace):
        return None
    from ..report.timings import TimingsRecorder

    return TimingsRecorder(opts.jobs or os.cpu_count() or 1, command_started=opts.command_started,
                           build_started=clock.start, begun=begun)


def host_payload_dirs(env: Environment) -> tuple[str, ...]:
    """The installed host-axis payloads' directories (where a cross toolchain may come from)."""
    return tuple(p.directory for p in env.payloads if p.axis == "host" and p.directory)


def _bound_home(opts: BuildOptions, memory: BuildMemory) -> None:
    """`[cache] max-size`: the home bounded after the reply (engine/state/home_gc.py); a home
    without the key pays one lookup."""
    table = opts.settings.table("cache")
    if "max-size" not in table:
        return
    from ..state.home_gc import after_build as home_gc_after_build, cache_max_size  # only where configured

    cache_max_size(table["max-size"])  # a bad value is a usage error now, not after the reply
    def bound() -> None:
        home_gc_after_build(opts.home, table)

    memory.after_reply(bound)


def _environment(graph: PackageGraph, layout: Layout, opts: BuildOptions, reporter: Reporter) -> Environment:
    """Resolve and install the payloads of this build (before any program asks `xpkg_dir`), and
    record them in `target/<profile>/.mcpp/payloads.json`."""
    if declares_any(graph):
        from ..payloads.resolve import resolve_environment  # only a graph that declares a payload

        env = resolve_environment(graph, opts.settings, status=reporter.status, warn=reporter.warning)
    else:
        env = Environment()  # what the resolver answers for no declaration, without importing it
    if opts.target_override is None:
        payload_record.write(layout.payloads_record, env, graph.context.target.text, str(graph.context.accel))
    return env


def _programs(graph: PackageGraph, layout: Layout, toolchain: Toolchain, profile: Profile, opts: BuildOptions,
              reporter: Reporter, policy: TrustPolicy, env: Environment | None,
              memory: BuildMemory) -> tuple[list[str], list[str], bool]:
    """Before planning: build the host tools, then evaluate each package's build.star (whose
    actions and sources the planner needs). Returns the files and directories whose change
    must send the next no-op build down the full path."""

    checked = check_loads(graph, lambda m: reporter.status("Rules", f"{m.name} ({m.label})"), memory.expand)
    tools = None  # engine/build/host_tools.py: imported where a package declares a tool or has a program
    if any(p.tool_edges for p in graph.order):
        from .host_tools import ToolBuilder, host_tool_options

        def build_package(cwd: str, selection: Selection, target_dir: str):
            sub = host_tool_options(opts, cwd=cwd, selection=selection, target_override=target_dir,
                                    toolchain=opts.toolchain or graph.root_manifest.toolchain)
            quiet = Reporter(quiet=True, color="always" if reporter.color else "never", out=reporter.err,
                             err=reporter.err)
            outcome = build(sub, quiet, memory=memory)
            return outcome.plan.execroot, {a.name: a.path for a in outcome.plan.artifacts if a.kind == "bin"}

        # A tool a build that is not hermetic makes is published apart (engine/trust/policy.py).
        # Host tools build for the host, with the host's toolchain, also in a cross build.
        host_tc = resolve_toolchain(opts.toolchain or graph.root_manifest.toolchain, opts.home) \
            if graph.context is not None and graph.context.cross else toolchain
        tools = ToolBuilder(graph, host_tc.identity, policy.tool_host(host_triple().text), profile.name,
                            build_package, reporter.status, opts.home).resolve()
    inputs = cache = None
    if any(c.path is not None for c in checked.values()):  # the evaluator is imported only then
        from ..program.api_context import context_extras
        from ..program.cache import ProgramCache
        from ..program.context import AccelEntry, PayloadRef
        from ..program.probe import ProbeSettings
        from .host_tools import HostTools

        tools = tools if tools is not None else HostTools()
        inputs = ProgramInputs(
            gen_dir=layout.gen_dir, profile=profile.name,
            target=graph.context.target.text, host=graph.context.host.text,
            accel=tuple(AccelEntry(e.name, e.version, tuple(e.archs), e.floor) for e in graph.context.accel.entries),
            tools_of=tools.visible_to,
            payloads=tuple(PayloadRef(p.namespace, p.name, p.directory, p.version) for p in (env.payloads if env else ())),
            extras=lambda pkg, modules: context_extras(pkg, modules, toolchain, profile, layout.out_dir),
            probes=ProbeSettings(opts.sandbox, str(opts.home.root), os.path.join(layout.program_cache, "probes"),
                                 policy.apart))
        cache = ProgramCache(layout.program_cache)
    watched, reads_env = evaluate(graph, checked, inputs, cache, reporter, expand=memory.expand)
    # Every package's build.star, present or not: one appearing must end the no-op.
    programs = [os.path.join(p.root, PROGRAM_NAME) for p in graph.order]
    if tools is None:
        return watched + programs, [], reads_env
    return watched + programs + tools.watched_files, tools.watched_dirs, reads_env


def _merge_first_phase(counters: Counters, first: Counters) -> None:
    """What the generators of a two-phase build did, counted once: the second phase found the
    actions the first ran or restored fresh."""
    done = first.executed + first.cache_hits + first.remote_hits
    counters.executed += first.executed
    counters.cache_hits += first.cache_hits
    counters.remote_hits += first.remote_hits
    counters.fresh = max(0, counters.fresh - done)
    counters.healed += first.healed


def _hits(counters: Counters) -> str:
    """` (3 cached, 12 remote hits)`: what the build restored instead of running."""
    parts = []
    if counters.cache_hits:
        parts.append(f"{counters.cache_hits} cached")
    if counters.remote_hits:
        parts.append(f"{counters.remote_hits} remote hit{'' if counters.remote_hits == 1 else 's'}")
    return f" ({', '.join(parts)})" if parts else ""


def remote_line(summary: dict) -> str:
    """`grpc://cache:50051: 12 hits, 3 misses, 3 uploads, 1.2 MiB down, 40.0 KiB up, 7 retries,
    14 outputs left remote, 2 fetched later` and, where they apply, the refused results (with the key names they claimed) and why the
    remote was turned off."""
    parts = [f"{summary['hits']} hits", f"{summary['misses']} misses", f"{summary['uploads']} uploads"
             + (f" ({summary['republished']} republished)" if summary.get("republished") else ""),
             f"{_size(summary['bytes_down'])} down", f"{_size(summary['bytes_up'])} up"]
    if summary["retries"]:
        parts.append(f"{summary['retries']} retries")
    if summary.get("kept_remote"):  # `--remote-download toplevel|minimal`: outputs left on the server
        parts.append(f"{summary['kept_remote']} outputs left remote")
    if summary.get("fetched_later"):  # ... and those an action or `mcpp run` needed after all
        parts.append(f"{summary['fetched_later']} fetched later")
    refused = summary["refused"]
    if refused["count"]:
        keys = f" (claimed keys: {', '.join(refused['keys'])})" if refused["keys"] else ""
        parts.append(f"{refused['count']} refused: " + ", ".join(
            f"{n} {why}" for why, n in sorted(refused["reasons"].items())) + keys)
    if summary["corrupt"]:
        parts.append(f"{summary['corrupt']} corrupt")
    if summary["disabled"]:
        parts.append(f"disabled: {summary['disabled']}")
    return f"{summary['url']}: " + ", ".join(parts)


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    return f"{n / 1024:.1f} KiB" if n < 1 << 20 else f"{n / (1 << 20):.1f} MiB"


def record_last_build(home: Home, counters: Counters) -> None:
    """Remember the hit rate of this build for `mcpp cache stats` (a file rewritten only when it
    changes: one no-op after another reads it, and writes nothing)."""
    data = {"fresh": counters.fresh, "cache_hits": counters.cache_hits, "remote_hits": counters.remote_hits,
            "executed": counters.executed, "failed": counters.failed}
    try:
        write_if_changed(str(home.last_build), json.dumps(data).encode(), mode=PUBLIC)
    except OSError:
        pass


def _run_plan(plan: Plan, graph: PackageGraph, layout: Layout, toolchain: Toolchain, opts: BuildOptions,
              reporter: Reporter, state: BuildState, scans: ScanCache, runner: ActionRunner | None,
              stores: Stores, policy: TrustPolicy, memory: BuildMemory, timings: TimingsRecorder | None = None,
              payload_roots: tuple[str, ...] = (), top: bool = True,
              warm: SandboxWarmUp | None = None, announced: set[str] | None = None,
              trust_unchanged: bool = True, head: HeadStart | None = None) -> tuple[ScheduleResult, Counters]:
    """Schedule every action of the plan through the pipeline; save the state, also on failure.
    `top`: the build the user asked for, not a host tool's build inside it; `warm`: its
    sandbox, made ahead (`_warm_up`); `trust_unchanged`: whether a warm server's knowledge of
    unchanged keys holds (engine/state/unchanged.py); `head`: the action begun before the
    schedule, taken where `settle` adopted it (engine/exec/head_start.py)."""
    # Imported here, not with the module: a first build's first compile (`head`) runs meanwhile.
    from ..exec.explain import ExplainLog
    from ..exec.larger_first import by_size
    from ..exec.pipeline import ActionPipeline
    from ..exec.schedule import run_graph

    # Results the sandbox cannot prove hermetic are keyed apart (engine/trust/policy.py); the sandbox's
    # promises are looked up when the first key is made.
    platform = Platform(toolchain.identity, host_triple().text)
    keys = KeyComputer(state, platform, plan.generated, memory.unchanged(plan.execroot) if top and trust_unchanged else None,
                       memo=policy.memoizes_keys, namespace_of=policy.namespace)
    if head is not None and head.adopted is not None:  # its run read these bytes: keyed by them
        keys.hashed_as(head.digests)
    if runner is None:
        seen: dict[str, tuple[int, int]] = {}  # the area files' identities, for prepared trees
        changed: set[str] = set()  # inputs saved anew after they were hashed
        stage = input_stager(plan.execroot, keys.digest_of, stores, seen, changed=changed)
        make = warm.get if warm is not None else \
            lambda: _make_sandbox(opts.sandbox, str(stores.home.root), reporter, payload_roots)
        runner = SandboxRunner(make, plan.execroot, stage, seen, prestages=policy.stages_inputs, changed=changed,
                               discard=Discard(os.path.join(layout.work_dir, DISCARDED)))
    executing = stores.remote is not None and stores.remote.execute and isinstance(runner, SandboxRunner)
    if executing:  # imported only for remote execution
        from ..exec.remote_exec_runner import remote_exec_jobs, with_remote_execution
    jobs = opts.jobs or (remote_exec_jobs(0) if executing else os.cpu_count() or 1)
    workers, slots = jobs, None
    endpoint = stores.remote_endpoint(reporter.warning)
    remote = stores.remote_cache(endpoint, _content_of(plan), reporter.warning,
                                 note=lambda text: reporter.raw_warning(f"note: {text}"))
    if remote is not None:
        # Remote lookups mostly wait on the server: `--remote-jobs` of them overlap whatever -j
        # is, and at most -j local processes run (the pipeline takes a slot around each one).
        workers, slots = max(jobs, remote.settings.jobs), threading.BoundedSemaphore(jobs)
    # remote runs hold no local slot; the runner keeps local ones at the core count
    if executing and isinstance(runner, SandboxRunner):
        runner, slots = with_remote_execution(runner, endpoint, stores.blobs, policy, reporter.warning,
                                              opts.settings.remote_exec_wait()), None
    pipeline = ActionPipeline(plan, state, keys, runner, stores, reporter,
                              ExplainLog(layout.explain_log, f"{platform.toolchain} on {platform.host}"), remote, slots,
                              policy)
    pipeline.timings = timings
    pipeline.head = head
    if remote is not None and top and remote.settings.download != "all":
        pipeline.keep_remote = _kept_on_server(plan, layout, remote.settings.download, opts.executes)
    pipeline.package_dirs = lambda: {p.name: PackageDirs(p.name, p.manifest.root) for p in graph.order}
    packages = {p.name: p for p in graph.order}
    announced = set() if announced is None else announced  # packages whose `Compiling` line was shown
    reporter.event("build-started", actions=len(plan.actions), jobs=jobs)

    def on_start(action_id: str) -> None:
        name = plan.package_of[action_id]
        if name not in announced and name in packages:
            announced.add(name)
            pkg = packages[name]
            reporter.status("Compiling", f"{pkg.name} v{pkg.version} ({_shown_dir(pkg.root)})")
        if reporter.verbose:
            from ..report.shell_text import pasteable  # only `-v` shows commands

            reporter.status("Running", "`" + pasteable(pipeline.by_id[action_id], plan.execroot) + "`")

    def before_wait() -> None:  # the scheduler thread is about to wait for a running action
        reporter.flush()
        pipeline.idle()

    def last_running() -> None:  # the last action runs alone (a link): what follows it, on the free core
        pipeline.last_running()
        if top:  # what write_compile_commands writes after it; a warm server's plan holds it already
            from .build_outputs import compile_commands_json

            compile_commands_json(plan)

    completed = False
    try:
        execroot_slash = os.path.join(plan.execroot, "")
        actions = by_size(plan, lambda rel: state.stats.size(execroot_slash + rel))
        order = memory.edited_first(actions, plan.execroot, state.discovered, plan.made_by) if top else [a.id for a in actions]
        if head is not None and head.adopted is not None:  # running already: first, a lane waits for it at once
            order = [head.adopted] + [i for i in order if i != head.adopted]
        with reporter.held():
            result = run_graph(order, plan.prereqs, jobs=workers, check=pipeline.check,
                               execute=timings.timed(pipeline.restore_or_run) if timings else pipeline.restore_or_run,
                               finish=pipeline.finish, keep_going=opts.keep_going,
                               on_start=on_start, on_progress=reporter.progress, before_wait=before_wait,
                               proceed=lambda outcome: outcome.succeeded,
                               on_abort=endpoint.cancel if endpoint is not None else lambda: None,
                               here=timings.timed(pipeline.restore_here) if timings else pipeline.restore_here,
                               last_running=last_running)
            pipeline.settle_writes()  # the restored outputs still being written (restore_writer.py)
        if timings is not None:
            timings.mark("actions-end")
        if isinstance(runner, SandboxRunner):
            runner.settle()  # the stale outputs it moved aside are deleted: target/ is final
        # The records go to disk while the ingest finishes the last outputs (zstd lets go of
        # the GIL): an action whose outputs then fail to store is forgotten by `drain`, and the
        # state is written again below. A crash in between leaves a state that takes the action
        # as done, which it is (its outputs are in target/); only its cache entry is missing.
        _save_records(state, scans, pipeline)
        if timings is not None:
            timings.mark("records-saved")
        pipeline.drain(result)  # the store ingest the actions left behind (cas/ingest.py)
        if timings is not None:
            timings.mark("outputs-stored")
        completed = True
        if top:  # for a server, made after the client has its answer
            memory.learned(lambda: _knowledge(result, state, keys, pipeline.remote_only))
    finally:
        pipeline.writer.close()  # interrupted or failed: nothing is written into target/ after the build
        pipeline.ingest.abandon()  # interrupted: jobs not started are dropped, none is torn
        if head is not None:  # a run begun ahead that no lane took: ended before its sandbox is shut down
            head.wait()
        if isinstance(runner, SandboxRunner):
            # On Ctrl-C or a failure now: it kills running actions and removes their directories.
            # After a whole build only idle workers and their slots are left: after the reply.
            if completed and top:
                memory.after_reply(runner.shutdown)
            else:
                runner.shutdown()
        reporter.end_progress()
        _save_records(state, scans, pipeline)  # each writes only what changed since it last wrote
        if endpoint is not None and not completed:
            endpoint.cancel()  # interrupted: end retry waits and calls in flight now
        pipeline.counters.left_remote = set(pipeline.remote_only)
        if remote is not None:
            remote.close(wait=completed)  # uploads still queued finish before `Finished`
            if endpoint is not None and endpoint.contacted:
                pipeline.counters.remote = remote.summary()
        if endpoint is not None:
            endpoint.close()
    return result, pipeline.counters


def _save_records(state: BuildState, scans: ScanCache, pipeline: ActionPipeline) -> None:
    state.save()
    scans.save()
    pipeline.explain.save()
    pipeline.warned.save()


def _knowledge(result: ScheduleResult, state: BuildState, keys: KeyComputer,
               absent: Container[str] = ()) -> Knowledge:
    """What the next server build of this request may take as known (engine/state/unchanged.py).
    Outputs left on the remote (`absent`, `--remote-download`) are not on disk: never proven."""
    validated = {}
    for action_id in (*result.fresh, *result.succeeded):
        rec = state.recorded(action_id)
        if rec is not None:
            validated[action_id] = rec[0]
    from ..state.unchanged import learn  # only a server's build hands knowledge on

    produced = {rel: d for rel, d in keys.produced.items() if rel not in absent} if absent else keys.produced
    return learn(state.execroot, validated, produced, keys.settled, keys.tools, keys.proven)


def _kept_on_server(plan: Plan, layout: Layout, download: str, executes: bool) -> Callable[[str], bool]:
    """Which outputs of a remote hit stay on the server (`--remote-download`): under `toplevel`
    all but the plan's artifacts (target/<profile>/'s binaries and libraries) and test
    binaries; under `minimal` all, unless the command runs or installs what it builds. A local
    action that reads one fetches it."""
    if download == "minimal" and not executes:
        return lambda path: True
    artifacts = {a.path for a in plan.artifacts}
    tests = layout.exec_path(os.path.join(layout.work_dir, "tests")) + "/"
    return lambda path: path not in artifacts and not path.startswith(tests)


def _content_of(plan: Plan):
    """An input's bytes for the remote cache: a generated file's from the plan, else the file's."""
    def content_of(rel: str) -> bytes:
        data = plan.generated.get(rel)
        if data is not None:
            return data
        with open(os.path.join(plan.execroot, rel), "rb") as f:
            return f.read()

    return content_of


_SANDBOX_WARNED: set[str] = set()
SWITCH_S = 0.0002  # the interpreter's switch interval during a build (see `build`)


def _make_sandbox(name: str | None, work_root: str, reporter: Reporter, payload_roots: tuple[str, ...] = ()):
    try:
        sandbox, warning = make_sandbox(name, work_root, payload_roots)
    except SandboxUnavailable as e:
        raise McppError(str(e)) from None
    _sandbox_warning(reporter, warning)
    if not sandbox.guarantees.stages_inputs:
        reporter.warning(f"--sandbox {sandbox.name}: actions run directly in the project directory with no "
                         "isolation; this build is not hermetic")
    return sandbox


def _sandbox_warning(reporter: Reporter, warning: str | None) -> None:
    if warning and warning not in _SANDBOX_WARNED:
        _SANDBOX_WARNED.add(warning)
        reporter.warning(warning)


def _warm_up(opts: BuildOptions, reporter: Reporter, stores: Stores, roots: tuple[str, ...],
             runner: ActionRunner | None, policy: TrustPolicy, memory: BuildMemory,
             layout: Layout) -> SandboxWarmUp | None:
    """Make the sandbox and start its first worker while the build plans, when it will
    probably run an action: in a server's build child whose watcher saw a file change since
    the last build of the same request, or that has no such build to go by; in any build that
    can restore nothing (`_restores_nothing`: the first build of a fresh home, which in the
    `mcpp` process has no watcher to ask), whose first compile then finds its worker started
    while the build planned instead of waiting for the bwrap probe and the worker. Never for a no-op
    (the watcher saw nothing), a host tool's build, a sandbox with no worker (one that does not
    stage inputs), remote execution, or a runner given by the caller. The next build of the
    same request in a server begins the same sandbox early when it has a worker."""
    if runner is not None or opts.target_override is not None:
        return None
    settings = (opts.sandbox, str(stores.home.root), roots)
    # Handed over (for the next build's early start) only where a worker can start early: a
    # sandbox that stages inputs.
    warm = memory.sandbox(settings if policy.stages_inputs else None)
    if warm is None and policy.stages_inputs and not (stores.remote is not None and stores.remote.execute) \
            and (memory.likely_work() or _restores_nothing(layout, stores)):
        warm = SandboxWarmUp(settings)
    if warm is not None:
        warm.report = lambda warning: _sandbox_warning(reporter, warning)
    return warm


def _head_start(warm: SandboxWarmUp | None, opts: BuildOptions, layout: Layout, stores: Stores, state: BuildState,
                reporter: Reporter) -> HeadStart | None:
    """Where every action of the build will run (`_restores_nothing`) in the sandbox begun early,
    the planner's first ordinary compile starts as soon as it is planned, while the rest of the
    build is planned (engine/exec/head_start.py): a first build's first compile then waits for
    its own unit, not for all of them."""
    if warm is None or opts.target_override is not None or not _restores_nothing(layout, stores):
        return None
    return HeadStart(layout.execroot, warm.get, state.digest, stores,
                     lambda a: coloured(a) if reporter.compiler_colour else a)


def _restores_nothing(layout: Layout, stores: Stores) -> bool:
    """Whether every action of this build will run: no action state in its target directory
    (a first build), no action cache in the home to restore from and no remote (two stats)."""
    return stores.remote is None and not os.path.exists(layout.action_state) and not os.path.isdir(stores.home.ac)


def _shown_dir(path: str) -> str:
    shown = display_path(path)
    return "." if shown in ("", ".") else shown


def record_noop(argv: list[str], outcome: BuildOutcome, quiet: bool, started: int | None,
                home: Home) -> None:
    """Let the next identical `mcpp build` answer from stats alone (engine/state/noop.py). `started`:
    when the build began, on the file system's clock (`noop.begin`)."""

    plan, graph, env = outcome.plan, outcome.graph, outcome.environment
    if outcome.reads_env or _planned_nothing_for_sources(outcome) or env is None or env.read_remote:
        return  # an environment variable a program read, an index on a server: no stat shows them unchanged
    files = [graph.root_manifest.path] + [p.manifest.path for p in graph.order] + noop.engine_files()
    if graph.lock_file is not None:  # `mcpp update` moves the versions a build reads
        files.append(graph.lock_file)
    files += [os.path.join(str(home.root), name) for name in build_env.HOME_FILES]
    files += env.read
    files.append(outcome.layout.compile_commands)
    files += outcome.watched_files
    # A manifest appearing above the working directory could make it a workspace member.
    files += [os.path.join(d, "mcpp.toml") for d in noop.ancestors(os.getcwd())]
    execroot = plan.execroot
    # Each path of the plan once (hundreds of compiles name the same headers, the link every
    # object), then made absolute: the record holds each file once whatever the order. Gathered
    # in one list and deduplicated once, then joined by concatenation: at 1,000 units ~4,500
    # `os.path.join` calls and a dict per action were half this function's time, after the reply.
    ins: list[str] = []
    outs: list[str] = []
    tools: list[str] = []
    discovered = outcome.discovered
    for a in plan.actions:
        ins += a.inputs
        ins += discovered.get(a.id, ())
        outs += a.outputs
        tools += a.tools
    inputs, outputs = list(dict.fromkeys(ins)), list(dict.fromkeys(outs))
    made = _absolute(execroot, outputs)
    trees = _tree_paths(execroot, outputs)
    files += _absolute(execroot, inputs) + made
    files += _tree_paths(execroot, inputs) + trees
    files += dict.fromkeys(tools)
    written = {outcome.layout.compile_commands, *_absolute(execroot, plan.generated), *made, *trees}
    # Only the directories globs read: other files (editor swaps, another tool's logs) beside
    # the manifest must not send every no-op down the full path.
    dirs: list[str] = []
    for p in graph.order:
        roots = glob_roots(p)
        if p.program is not None:  # its globs may walk anywhere in the package: walk it once, whole
            roots = [p.root] + [r for r in roots if os.path.relpath(r, p.root).startswith("..")]
        for root in roots:
            dirs += noop.walked_dirs(root)
    dirs += outcome.watched_dirs  # a host tool's new file
    dirs += [d for d in os.environ.get("PATH", "").split(os.pathsep) if d]
    # where a link's driver looks for its linker: a new `ld` there changes the link's key
    dirs += linker.watched_dirs(outcome.toolchain, [a.argv for a in plan.actions if a.kind == ActionKind.LINK],
                                linker.action_path(ACTION_ENV))
    line = None if quiet else ("Finished".rjust(12), f"{outcome.profile.summary} in {{elapsed}}")
    noop.record(argv, line, files, dirs, len(plan.actions), started, outcome.read_stamp, written)


def _linkers(toolchain: Toolchain) -> tuple[str, ...]:
    """The linker programs a link runs (engine/toolchain/linker.py): tools of the planned links, so a
    remembered plan is taken again only while they are the same files."""
    return linker.default_programs(toolchain, linker.action_path(ACTION_ENV))


def _absolute(execroot: str, paths) -> list[str]:
    """`os.path.join(execroot, p)` for each of `paths` (relative to the execroot or absolute)."""
    prefix = os.path.join(execroot, "")
    return [p if p.startswith("/") else prefix + p for p in paths]


def _tree_paths(execroot: str, paths) -> list[str]:
    """Everything inside the tree outputs among `paths` (`gen/docs/`): a directory's own stat
    does not change when a file deep inside it is edited."""
    out: list[str] = []
    for p in paths:
        if p.endswith("/"):
            for dirpath, dirnames, filenames in os.walk(os.path.join(execroot, p)):
                out += [os.path.join(dirpath, n) for n in dirnames + filenames]
    return out


def _planned_nothing_for_sources(outcome: BuildOutcome) -> bool:
    """A package with sources that planned no action is not a result to remember: whatever hid
    its sources (an unreadable directory, a file caught mid-move) must be looked at again by the
    next build, not answered `Finished` from stats that a `chmod` does not change."""

    planned = set(outcome.plan.package_of.values())
    for pkg in outcome.graph.order:
        if pkg.name not in planned:
            try:
                if any(s.role != "device" for s in package_sources(pkg)):
                    return True
            except McppError:
                return True
    return False
