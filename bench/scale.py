"""How mcpp's per-build work grows with the number of units: the cost per unit of each phase.

    python bench/scale.py [--sizes 1000,3000,10000] [--build] [--runs 3] [--markdown FILE]

For each size N it generates the project (bench/gen_project.py) under bench/work/scale-nN and
times, in a fresh `mcpp build -j 2 --message-format json` process each run, the engine's phases
by wrapping the functions of engine/build/compose.py that make them (no change to mcpp itself):

- load: `load_graph` (manifests, folding, the package graph);
- programs: `_programs` (build programs and host tools);
- plan: `Planner.build` (every action of the plan, include scans from their cache);
- keys+schedule: `_run_plan` (the stat cache, every action's key or freshness, the scheduler;
  with no action run only the saving of the stat and scan caches);
- other: the rest of the command (toolchain lookup, opening the caches, compile_commands.json);
- total: the whole command in process (imports excluded: they do not grow with N).

Without `--build` the plan is made but no action runs (`_run_plan` is replaced by a stub): the
planning rows for 10,000 units cost seconds, not the half hour a clean build of them takes. With
`--build` the project is built once (untimed, mcpp only), then a no-op (full engine) and an
edit-one build are timed, and the same against ninja on a copy (edit-one against ninja, as the
issue's goal). Each row states the median and the cost per unit (microseconds per source), so
a phase whose per-unit cost rises with N is the one that grows worse than linearly.

Server memory: `mcpp server status` where the warm build server exists (bench/run_bench.py's
`server_memory`), else "n/a".
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)

import gen_project  # noqa: E402
import run_bench  # noqa: E402

# Runs inside the mcpp interpreter: wraps the phase functions, runs `mcpp build`, writes the
# seconds per phase as JSON to argv[1]. argv[2] == "plan-only": no action runs.
DRIVER = r"""
import json, sys, time
out, mode = sys.argv[1], sys.argv[2]
import mcpp.engine.build.compose as B
from mcpp.engine.entry import main
times = {}

def wrap(owner, name, label):
    f = getattr(owner, name, None)
    if f is None:
        times[label] = None  # renamed: the row says n/a
        return
    def timed(*a, **k):
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            times[label] = (times.get(label) or 0.0) + time.perf_counter() - t
    setattr(owner, name, timed)

if mode == "plan-only":
    from mcpp.engine.exec.pipeline import Counters
    from mcpp.engine.exec.schedule import ScheduleResult
    def no_actions(plan, graph, layout, toolchain, opts, reporter, state, scans, *a, **k):
        state.save()  # the stat and scan caches, as a build leaves them: the next run plans warm
        scans.save()
        return ScheduleResult(fresh=[x.id for x in plan.actions]), Counters()
    B._run_plan = no_actions
    # nothing ran, so there is nothing to check or link: the completeness check would rightly
    # call a build that made no artifact a bug
    B.check_complete = lambda *a, **k: None
    B.make_artifact_links = lambda *a, **k: None
wrap(B, "load_graph", "load")
wrap(B, "_programs", "programs")
wrap(B.Planner, "build", "plan")
wrap(B, "_run_plan", "keys+schedule")
sys.argv = ["mcpp", "build", "-j", "2", "--message-format", "json"]
t = time.perf_counter()
try:
    main()
except SystemExit as e:
    code = e.code
else:
    code = 0
times["total"] = time.perf_counter() - t
times["exit"] = code
with open(out, "w") as f:
    json.dump(times, f)
"""

PHASES = ["load", "programs", "plan", "keys+schedule", "total"]


class Scale:
    def __init__(self, n: int, args: argparse.Namespace, python: str):
        self.n, self.args, self.python = n, args, python
        self.work = os.path.join(BENCH, "work", f"scale-n{n}" + ("-light" if args.light else ""))
        self.proj = os.path.join(self.work, "mcpp")
        self.ninja_dir = os.path.join(self.work, "ninja")
        self.env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        self.env.update(MCPP_HOME=os.path.join(self.work, "home"),
                        PYTHONPYCACHEPREFIX=os.path.join(BENCH, "work", "pycache"))
        # The phases are timed in process (the DRIVER wraps engine functions); the edit-one and
        # memory rows use the warm build server where there is one, as a user's builds do.
        self.in_process = dict(self.env, MCPP_NO_SERVER="1")

    def generate(self) -> None:
        for d in (self.proj, self.ninja_dir):
            if not os.path.exists(os.path.join(d, "mcpp.toml")):
                run_bench.rm(d)
                gen_project.generate(self.n, d, self.args.light)

    def phases(self, mode: str) -> dict:
        fd, out = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        try:
            p = subprocess.run([self.python, "-c", DRIVER, out, mode], cwd=self.proj, env=self.in_process,
                               capture_output=True, text=True)
            with open(out) as f:
                times = json.load(f)
        finally:
            os.unlink(out)
        if times.get("exit") not in (0, None):
            raise SystemExit(f"scale: mcpp build failed at N={self.n}:\n{p.stderr[-3000:]}")
        return times

    def mcpp_build(self, json_events: bool = True) -> float:
        t = time.perf_counter()
        p = subprocess.run([self.args.mcpp, "build", "-j", "2", *(["--message-format", "json"] if json_events else [])],
                           cwd=self.proj, env=self.env, capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"scale: mcpp build failed at N={self.n}:\n{p.stderr[-3000:]}")
        return time.perf_counter() - t

    def ninja(self) -> float:
        t = time.perf_counter()
        subprocess.run([self.args.ninja, "-j", "2"], cwd=self.ninja_dir, check=True, capture_output=True)
        return time.perf_counter() - t

    def edit(self, k: int) -> None:
        rel = gen_project.source_path(self.n // 2, self.n)
        for d in (self.proj, self.ninja_dir):
            with open(os.path.join(d, rel), "a") as f:
                f.write(f"unsigned scale_edit_{k}(unsigned x) {{ return x + {k}u; }}\n")


def median_phases(runs: list[dict]) -> dict:
    for r in runs:  # what no wrapped phase covers: toolchain, caches, compile_commands.json, ...
        parts = [r.get(p) for p in PHASES if p != "total"]
        r["other"] = None if None in parts else r["total"] - sum(parts)
    return {p: (statistics.median(r[p] for r in runs) if all(r.get(p) is not None for r in runs) else None)
            for p in PHASES + ["other"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,3000,10000", help="comma-separated numbers of units")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--build", action="store_true", help="also build each size and time no-op and edit-one")
    ap.add_argument("--mcpp", default=os.path.join(ROOT, ".venv", "bin", "mcpp"))
    venv_ninja = os.path.join(ROOT, ".venv", "bin", "ninja")
    ap.add_argument("--ninja", default=venv_ninja if os.path.exists(venv_ninja) else shutil.which("ninja") or "ninja")
    ap.add_argument("--markdown", metavar="FILE")
    ap.add_argument("--light", action="store_true", help="generate light units (bench/gen_project.py --light)")
    args = ap.parse_args()
    python = run_bench.mcpp_interpreter(args.mcpp)
    sizes = [int(x) for x in args.sizes.split(",")]
    header = run_bench.machine(python, args.ninja, args.mcpp)
    print("\n".join(header), file=sys.stderr)

    rows = []
    for n in sizes:
        s = Scale(n, args, python)
        s.generate()
        plan = median_phases([s.phases("plan-only") for _ in range(args.runs)])
        row = {"n": n, "plan": plan}
        if args.build:
            s.mcpp_build()  # clean or catching up; untimed
            s.ninja()
            s.mcpp_build()  # the stamps of a no-op in place
            row["noop"] = median_phases([s.phases("build") for _ in range(args.runs)])
            # Through the warm build server, as a user's repeated builds go: the plain no-op (the
            # server answers it; the first run checks the record and arms its watch) and the
            # full-engine one (`--message-format json` skips that answer: a build process runs).
            s.mcpp_build(json_events=False)
            s.mcpp_build(json_events=False)
            row["noop_served"] = statistics.median(s.mcpp_build(json_events=False) for _ in range(max(5, args.runs)))
            s.mcpp_build()
            row["noop_json_served"] = statistics.median(s.mcpp_build() for _ in range(max(5, args.runs)))
            edits_m, edits_n = [], []
            for k in range(args.runs):
                s.edit(k + int(time.time()))
                edits_m.append(s.mcpp_build())
                edits_n.append(s.ninja())
            row["edit"] = (statistics.median(edits_m), statistics.median(edits_n))
            row["memory"] = run_bench.server_memory(
                argparse.Namespace(mcpp_bin=args.mcpp, mcpp_dir=s.proj, env=s.env))
        rows.append(row)
        print(f"  N={n}: {json.dumps(row)}", file=sys.stderr, flush=True)

    run_bench.show(report(rows, header, args), args.markdown)


def report(rows, header, args) -> str:
    def cell(v, n):
        return "n/a" if v is None else f"{v * 1000:.0f} ms ({v / n * 1e6:.0f} µs/unit)"

    out = ["## Scale: cost per unit of each phase", ""] + [f"- {h}" for h in header]
    out += [f"- command: `python bench/scale.py {' '.join(sys.argv[1:])}`",
            f"- phases timed in process (bench/scale.py's DRIVER), medians of {args.runs} runs; "
            "\"plan only\": `mcpp build` with no action run", ""]
    sizes = [r["n"] for r in rows]
    out += ["| phase | " + " | ".join(f"N={n:,}" for n in sizes) + " |", "|---|" + "---:|" * len(sizes)]
    for p in PHASES[:-1] + ["other", "total"]:
        out.append(f"| {p} (plan only) | " + " | ".join(cell(r["plan"][p], r["n"]) for r in rows) + " |")
    if all("noop" in r for r in rows):
        for p in PHASES[:-1] + ["other", "total"]:
            out.append(f"| {p} (no-op, full engine) | " + " | ".join(cell(r["noop"][p], r["n"]) for r in rows) + " |")
        out.append("| no-op `mcpp build` through the server (answered by it) | " + " | ".join(
            f"{r['noop_served'] * 1000:.0f} ms" for r in rows) + " |")
        out.append("| no-op `--message-format json` through the server (full engine) | " + " | ".join(
            f"{r['noop_json_served'] * 1000:.0f} ms" for r in rows) + " |")
        out.append("| edit-one, mcpp / ninja (s) | " + " | ".join(
            f"{r['edit'][0]:.3f} / {r['edit'][1]:.3f} ({r['edit'][0] / r['edit'][1]:.2f}x)" for r in rows) + " |")
        out.append("| server memory | " + " | ".join(r["memory"] for r in rows) + " |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
