"""One build, end to end: load the graph, plan actions, run what is stale, report.

This is the only module that ties the layers together; each step below is a call into the
module that owns the concept (graph, toolchain, planner, incremental state, scheduler, runner).
"""
from __future__ import annotations

import fcntl
import json
import os
import platform as host_platform
from dataclasses import dataclass, field

from cas.action import Action, Platform

from .depfile import discovered_inputs
from .errors import BuildFailed, McppError
from .execute import ActionRunner, LocalRunner, RunResult
from .graph import PackageGraph, Selection, load_graph
from .incremental import BuildState, KeyComputer
from .manifest.load import display_path
from .plan.planner import Plan, Planner
from .profiles import Profile, resolve_profile
from .report import Reporter, Stopwatch
from .schedule import ScheduleResult, run_graph
from .toolchain import Toolchain, resolve_toolchain


@dataclass
class BuildOptions:
    cwd: str = "."
    manifest_path: str | None = None
    profile: str = "dev"
    selection: Selection = field(default_factory=Selection)
    jobs: int = 0  # 0: the number of CPUs
    keep_going: bool = False
    toolchain: str | None = None


@dataclass
class BuildOutcome:
    graph: PackageGraph
    plan: Plan
    profile: Profile
    toolchain: Toolchain
    result: ScheduleResult
    elapsed: float


def host_triple() -> str:
    machine = host_platform.machine()
    return f"{machine}-linux-gnu" if host_platform.system() == "Linux" else f"{machine}-{host_platform.system().lower()}"


class _BuildLock:
    """One build per target directory at a time; a second one waits, saying so (as Cargo)."""

    def __init__(self, target_dir: str, reporter: Reporter):
        os.makedirs(target_dir, exist_ok=True)
        self.fd = os.open(os.path.join(target_dir, ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            reporter.status("Blocking", "waiting for file lock on build directory", important=True)
            fcntl.flock(self.fd, fcntl.LOCK_EX)

    def release(self) -> None:
        os.close(self.fd)


def build(opts: BuildOptions, reporter: Reporter, *, with_tests: bool = False,
          runner: ActionRunner | None = None) -> BuildOutcome:
    clock = Stopwatch()
    graph = load_graph(opts.cwd, opts.manifest_path, opts.selection)
    for pkg in graph.order:
        for w in pkg.manifest.warnings:
            reporter.raw_warning(w)
    toolchain = resolve_toolchain(opts.toolchain or graph.root_manifest.toolchain)
    profile = resolve_profile(graph.root_manifest, opts.profile)
    lock = _BuildLock(graph.target_dir, reporter)
    try:
        execroot_state_dir = os.path.join(graph.target_dir, profile.name, ".mcpp")
        planner_state = None
        # The planner needs module scans, which the state caches by source digest.
        from .plan.planner import common_root

        execroot = common_root([p.root for p in graph.order] + [graph.workspace_root])
        planner_state = BuildState(execroot_state_dir, execroot)
        plan = Planner(graph, toolchain, profile, scan=planner_state.scan, with_tests=with_tests).build()
        _write_compile_commands(graph, plan)
        result = _execute(plan, graph, toolchain, opts, reporter, planner_state,
                          runner or LocalRunner(plan.execroot))
    finally:
        lock.release()
    outcome = BuildOutcome(graph, plan, profile, toolchain, result, clock.elapsed())
    reporter.event("build-finished", success=result.ok, executed=len(result.succeeded),
                   fresh=len(result.fresh), failed=len(result.failed), duration=round(outcome.elapsed, 3))
    if not result.ok:
        names = ", ".join(result.failed[:3]) + (" ..." if len(result.failed) > 3 else "")
        raise BuildFailed(f"build failed: {len(result.failed)} action(s) failed ({names})")
    reporter.status("Finished", f"{profile.summary} in {outcome.elapsed:.2f}s")
    return outcome


def _execute(plan: Plan, graph: PackageGraph, toolchain: Toolchain, opts: BuildOptions,
             reporter: Reporter, state: BuildState, runner: ActionRunner) -> ScheduleResult:
    platform = Platform(toolchain.identity, host_triple())
    keys = KeyComputer(state, platform, plan.generated)
    by_id: dict[str, Action] = {a.id: a for a in plan.actions}
    packages = {p.name: p for p in graph.order}
    announced: set[str] = set()
    jobs = opts.jobs or os.cpu_count() or 1
    reporter.event("build-started", actions=len(plan.actions), jobs=jobs)

    def check(action_id: str) -> bool:
        fresh = keys.fresh(by_id[action_id])
        if fresh:
            a = by_id[action_id]
            reporter.event("action-finished", id=a.id, kind=a.kind, package=plan.package_of[a.id], status="fresh")
        return fresh

    def on_start(action_id: str) -> None:
        name = plan.package_of[action_id]
        if name not in announced and name in packages:
            announced.add(name)
            pkg = packages[name]
            reporter.status("Compiling", f"{pkg.name} v{pkg.version} ({_shown_dir(pkg.root)})")
        a = by_id[action_id]
        if reporter.verbose:
            reporter.status("Running", "`" + " ".join(a.argv) + "`")

    def execute(action_id: str) -> RunResult:
        a = by_id[action_id]
        for path in a.inputs:
            if path in plan.generated:
                _write_if_changed(os.path.join(plan.execroot, path), plan.generated[path])
        return runner.run(a)

    def finish(action_id: str, res: RunResult) -> bool:
        a = by_id[action_id]
        text = (res.stdout + res.stderr).decode("utf-8", "replace")
        ok = res.exit_code == 0 and all(os.path.exists(os.path.join(plan.execroot, o)) for o in a.outputs)
        if text:
            reporter.diagnostics(text)
            reporter.event("compiler-message", id=a.id, package=plan.package_of[a.id], message=text)
        if not ok:
            state.forget(a.id)
            if res.exit_code == 0:
                missing = [o for o in a.outputs if not os.path.exists(os.path.join(plan.execroot, o))]
                reporter.error(f"error: action `{a.id}` did not produce {', '.join(missing)}")
            reporter.event("action-finished", id=a.id, kind=a.kind, package=plan.package_of[a.id],
                           status="failed", exit_code=res.exit_code, duration=round(res.duration, 3))
            return False
        discovered: tuple[str, ...] = ()
        if a.depfile:
            with open(os.path.join(plan.execroot, a.depfile), encoding="utf-8", errors="replace") as f:
                discovered = discovered_inputs(f.read(), plan.execroot, set(a.inputs) | set(a.outputs))
        outputs = {}
        for out in a.outputs:
            d = state.digest(out)
            keys.produced[out] = d
            outputs[out] = str(d)
        state.record(a.id, keys.key(a, discovered), discovered, outputs)
        reporter.event("action-finished", id=a.id, kind=a.kind, package=plan.package_of[a.id],
                       status="executed", exit_code=0, duration=round(res.duration, 3))
        return True

    try:
        return run_graph([a.id for a in plan.actions], plan.prereqs, jobs=jobs, check=check,
                         execute=execute, finish=finish, keep_going=opts.keep_going, on_start=on_start,
                         on_progress=reporter.progress)
    finally:
        reporter.end_progress()
        state.save()


def _shown_dir(path: str) -> str:
    shown = display_path(path)
    return "." if shown in ("", ".") else shown


def _write_if_changed(path: str, data: bytes) -> None:
    try:
        with open(path, "rb") as f:
            if f.read() == data:
                return
    except FileNotFoundError:
        pass
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _write_compile_commands(graph: PackageGraph, plan: Plan) -> None:
    path = os.path.join(graph.workspace_root, "compile_commands.json")
    data = (json.dumps(plan.compile_commands, indent=1) + "\n").encode()
    _write_if_changed(path, data)


__all__ = ["BuildOptions", "BuildOutcome", "build", "McppError"]
