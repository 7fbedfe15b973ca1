"""When each action of a build ran, on which worker, and what became of it (`mcpp build --timings`).

A `TimingsRecorder` is handed to the scheduler's `execute` (wrapped by `timed`) and to the
pipeline (which calls `status` when it knows whether an action was executed, restored from the
cache or the remote, fresh or failed). It keeps only plain numbers, so recording costs nothing a
build would notice; the report is written once, after the build, as JSON (`--timings=json`), as
a Chrome trace-event file (`--trace FILE`, which Perfetto and chrome://tracing open) or as a
self-contained HTML page (engine/report/timings_html.py), like `cargo build --timings`.
"""
from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Callable

from ..core.command_clock import monotonic_of
from ..core.errors import McppError

KEEP = 10  # dated reports kept in target/mcpp-timings/, besides the latest one


@dataclass
class ActionTiming:
    id: str
    kind: str = ""
    package: str = ""
    status: str = ""  # executed | cached | remote | fresh | failed
    start: float = 0.0  # seconds since the build's actions began
    end: float = 0.0
    lane: int = -1  # worker lane; -1: never ran on a worker (fresh)
    process: float = -1.0  # when its process started (after its inputs were staged); -1: not known


class TimingsRecorder:
    """`command_started`: when the command began (a `time.time()` value, possibly another
    process's: engine/core/command_clock.py); `build_started`: when the build began
    (`time.monotonic()`). The trace places both before the actions (`trace`). `begun`: actions
    begun before the schedule (engine/exec/head_start.py), by id, with when: the actions start
    with the first of them, else now."""

    def __init__(self, jobs: int, command_started: float | None = None, build_started: float | None = None,
                 begun: dict[str, float] | None = None):
        self.jobs = jobs
        now = time.monotonic()
        self.t0 = min([now, *(begun or {}).values()])
        self.scheduled_at = now if self.t0 < now else None  # the schedule's start, when it came later
        self.command_at = monotonic_of(command_started) if command_started is not None else None
        self.command_started = command_started
        self.build_at = build_started
        self.started_at = datetime.now(timezone.utc)
        self.cpu0 = _machine_cpu()
        self.wall = 0.0
        self.cpu_use = 0.0
        self.actions: dict[str, ActionTiming] = {}
        self.skipped = 0  # actions never started: a prerequisite failed (they have no bar)
        self.later_marks: list[tuple[str, float]] = []  # `mark`: the build's steps after its actions
        self._lanes: dict[int, int] = {}  # worker thread ident -> lane
        self._lock = threading.Lock()
        self._began = dict(begun or {})  # action id -> when it began, before a lane took it: its bar starts there

    def _get(self, action_id: str) -> ActionTiming:
        t = self.actions.get(action_id)
        if t is None:
            t = self.actions[action_id] = ActionTiming(action_id)
        return t

    def timed(self, execute: Callable[[str], object]) -> Callable[[str], object]:
        """`execute` as the scheduler calls it on worker threads, noting start, end and lane."""
        def run(action_id: str):
            start = time.monotonic() - self.t0
            try:
                return execute(action_id)
            finally:
                end = time.monotonic() - self.t0
                if action_id in self._began:  # (its check on the scheduler's thread is timed too: kept for the lane)
                    start = self._began[action_id] - self.t0
                with self._lock:
                    lane = self._lanes.setdefault(threading.get_ident(), len(self._lanes))
                    t = self._get(action_id)
                    t.start, t.end, t.lane = start, end, lane
        return run

    def status(self, action_id: str, kind: str, package: str, status: str) -> None:
        """What became of an action; a fresh one never reached a worker: it is timed when checked."""
        with self._lock:
            t = self._get(action_id)
            t.kind, t.package, t.status = kind, package, status
            if status == "fresh":
                t.start = t.end = time.monotonic() - self.t0

    def process_started(self, action_id: str) -> None:
        """The action's process is about to start, its inputs staged (the sandbox's `started`): the
        trace says how long after the action's start (`staged_ms`), which tells the engine's part
        of a slow action from its program's."""
        with self._lock:
            self._get(action_id).process = time.monotonic() - self.t0

    def mark(self, name: str) -> None:
        """An instant of the build after its actions (the schedule's end, the outputs stored),
        shown in the trace beside the ones before them: where an edit's time after its link goes."""
        self.later_marks.append((name, time.monotonic()))

    def finish(self, skipped: int = 0) -> None:
        self.mark("build-end")
        self.skipped = skipped
        self.wall = time.monotonic() - self.t0
        cpu1 = _machine_cpu()
        if self.cpu0 and cpu1 and cpu1[1] > self.cpu0[1]:
            self.cpu_use = (cpu1[0] - self.cpu0[0]) / (cpu1[1] - self.cpu0[1])

    # -- the report's data ----------------------------------------------------------------------
    def data(self) -> dict:
        actions = sorted(self.actions.values(), key=lambda t: (t.start, t.id))
        counts: dict[str, int] = {}
        for t in actions:
            counts[t.status] = counts.get(t.status, 0) + 1
        busy = sum(t.end - t.start for t in actions if t.lane >= 0)
        return {
            "version": 1,
            "started_at": self.started_at.isoformat(timespec="seconds"),
            "summary": {
                "actions": len(actions),
                "packages": len({t.package for t in actions}),
                "executed": counts.get("executed", 0), "cached": counts.get("cached", 0),
                "remote": counts.get("remote", 0), "fresh": counts.get("fresh", 0),
                "failed": counts.get("failed", 0), "skipped": self.skipped,
                "jobs": self.jobs, "lanes": len(self._lanes),
                # to the microsecond, as each action's start and end: rounded coarser, the wall
                # could read shorter than the last action's end (a 21.206 ms link in 21.2 ms)
                "wall_s": round(self.wall, 6),
                "busy_s": round(busy, 4),  # worker time spent on actions
                # How busy the machine's CPUs were during the build (0..1), as Cargo's report shows:
                # actions run in long-lived sandbox workers, whose compilers' CPU time mcpp cannot
                # attribute to itself.
                "cpu_use": round(self.cpu_use, 4),
                "cpus": os.cpu_count() or 1,
            },
            "actions": [{**asdict(t), "start": round(t.start, 6), "end": round(t.end, 6),
                         "duration": round(t.end - t.start, 6)} for t in actions],
        }

    def trace(self) -> dict:
        """Chrome trace events: one complete event ("X") per action on its worker's thread row,
        and instant events ("i") for the command's start (at 0 when known, so that an action's
        `ts` is how long after the command it began; its `unix_time` is that moment on the wall
        clock: the process's start as the kernel counts it, in whole clock ticks), the build's
        and the actions' start, the schedule's where an action began before it
        (engine/exec/head_start.py), and the steps after the actions (`mark`: "actions-end",
        "records-saved", "outputs-stored", "build-end")."""
        events: list[dict] = [{"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "mcpp build"}}]
        marks = [(name, at) for name, at in (("command-start", self.command_at), ("build-start", self.build_at),
                                             ("actions-start", self.t0), ("schedule-start", self.scheduled_at),
                                             *self.later_marks)
                 if at is not None]
        origin = min(at for _, at in marks)
        shift = self.t0 - origin  # seconds from the trace's 0 to the actions' start
        for name, at in marks:
            events.append({"name": name, "cat": "command", "ph": "i", "s": "g", "pid": 1, "tid": 0,
                           "ts": round((at - origin) * 1e6, 1)})
            if name == "command-start" and self.command_started is not None:
                # its 0 on the wall clock, for a harness that timed the command's launch (bench/peers.py)
                events[-1]["args"] = {"unix_time": round(self.command_started, 6)}
        lanes = sorted({t.lane for t in self.actions.values()})
        for lane in lanes:
            events.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": lane + 1,
                           "args": {"name": "fresh" if lane < 0 else f"worker {lane}"}})
        for t in sorted(self.actions.values(), key=lambda t: (t.start, t.id)):
            events.append({"name": t.id, "cat": t.kind or "action", "ph": "X", "pid": 1, "tid": t.lane + 1,
                           "ts": round((t.start + shift) * 1e6, 1), "dur": round((t.end - t.start) * 1e6, 1),
                           "args": {"package": t.package, "status": t.status, "kind": t.kind,
                                    **({"staged_ms": round((t.process - t.start) * 1e3, 2)} if t.process >= 0 else {})}})
        return {"traceEvents": events, "displayTimeUnit": "ms"}

    # -- files ----------------------------------------------------------------------------------
    def write(self, target_dir: str, fmt: str | None, trace_path: str | None) -> list[str]:
        """Write the report(s) asked for; returns the paths written (the latest report, the trace)."""
        written = []
        if fmt:
            from .timings_html import render  # only a build that asks for HTML loads it

            data = self.data()
            ext = "json" if fmt == "json" else "html"
            text = json.dumps(data, indent=1) + "\n" if fmt == "json" else render(data)
            out_dir = os.path.join(target_dir, "mcpp-timings")
            os.makedirs(out_dir, exist_ok=True)
            stamp = self.started_at.strftime("%Y%m%dT%H%M%S") + f"{self.started_at.microsecond // 1000:03d}Z"
            for name in (f"report-{stamp}.{ext}", f"report.{ext}"):
                with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
                    f.write(text)
            _prune(out_dir, ext)
            written.append(os.path.join(out_dir, f"report.{ext}"))
        if trace_path:
            try:
                os.makedirs(os.path.dirname(os.path.abspath(trace_path)), exist_ok=True)
                # `dumps`, not `dump`: only a whole-object encode takes the json module's C
                # encoder (a 10,000-action trace: ~0.1 s in the pure-Python one)
                text = json.dumps(self.trace())
                with open(trace_path, "w", encoding="utf-8") as f:
                    f.write(text)
            except OSError as e:
                raise McppError(f"--trace {trace_path}: cannot write the trace: {e.strerror}") from None
            written.append(trace_path)
        return written


def _prune(out_dir: str, ext: str) -> None:
    """Keep the newest `KEEP` dated reports: the names sort by date."""
    dated = sorted(n for n in os.listdir(out_dir) if n.startswith("report-") and n.endswith("." + ext))
    for name in dated[:-KEEP]:
        try:
            os.unlink(os.path.join(out_dir, name))
        except OSError:
            pass


def _machine_cpu() -> tuple[int, int] | None:
    """(busy, total) CPU ticks of the whole machine so far, from /proc/stat; None where unreadable."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    total = sum(fields[:8])  # user nice system idle iowait irq softirq steal (guest is inside user)
    return total - fields[3] - (fields[4] if len(fields) > 4 else 0), total
