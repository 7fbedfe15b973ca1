"""Where mcpp's own CPU goes per action in a clean build, phase by phase and thread by thread.

    python bench/action_phases.py [N] [--light] [--runs R] [--python PY] [--markdown FILE]

Generates an N-unit project (bench/gen_project.py, default 600 units) under
bench/work/phases-nN[-light], then builds it clean R times (no `target/`, an empty cache home,
each moved aside first: see run_bench.Trash), in process (`--no-server`), in the interpreter of
the mcpp to measure (`--python`, default .venv/bin/python). Inside that process a driver wraps
the functions each action passes through (no change to mcpp itself) and adds up the CPU time of
the calling thread (`time.thread_time_ns`: user and system time, not the time spent waiting)
spent in each, inclusive of what it calls (two clock reads per wrapped call: about 0.1 ms per
action of its own):

- on a lane (`mcpp-lane-N`): the run of an action from the cache lookup to its outputs hashed
  (`_restore_or_run`), the sandbox's steps inside it (the slot's preparation and clear, staging,
  the worker's request and reply, the depfile check, collecting the outputs);
- on the ingest thread (`mcpp-ingest`): each store job and its writes;
- on the scheduling thread: `finish` (key, records, the event line) per action.

Rows are medians over the runs of the microseconds per call and per action (the build's
actions), so a phase's share of the engine's per-action cost can be read off. Beside it: the
build's wall time and the process's CPU (every thread; the compilers are not counted). Compare with
`bench/action_cpu.py` (all processes, by role) and `bench/profile.sh` (py-spy samples).

A wrapped function that mcpp renames or removes is reported as missing, not an error: the table
then lacks that row.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)

import gen_project  # noqa: E402
import run_bench  # noqa: E402

# (module, owner or "" for a module function, name, label). Nested calls are counted in each.
PHASES = [
    ("mcpp.engine.exec.pipeline", "ActionPipeline", "_restore_or_run", "action on a lane (all below)"),
    ("mcpp.engine.exec.action_runner", "SandboxRunner", "run", "sandbox run, staging included"),
    ("mcpp.engine.exec.action_runner", "", "prepare_outputs", "stale outputs removed, their dirs"),
    ("mcpp.cas.materialize", "Materializer", "publish_file", "input copied to the store's area"),
    ("mcpp.sandbox.bwrap", "BwrapSandbox", "run", "bwrap sandbox run"),
    ("mcpp.sandbox.bwrap", "BwrapSandbox", "_worker_for", "a worker taken"),
    ("mcpp.sandbox.slot", "Slot", "prepare", "slot prepared (clear included)"),
    ("mcpp.sandbox.slot", "Slot", "clear", "slot cleared (last action's files)"),
    ("mcpp.sandbox.staged_sandbox", "StagedSandbox", "run_in", "staged, run, checked, collected"),
    ("mcpp.sandbox.staged_sandbox", "", "stage_inputs", "inputs linked into the slot"),
    ("mcpp.sandbox.staged_sandbox", "", "readonly_paths", "read-only mounts chosen"),
    ("mcpp.sandbox.worker", "Worker", "execute", "request to the worker, reply read"),
    ("mcpp.sandbox.staged_sandbox", "StagedSandbox", "_check_depfile", "depfile read and checked"),
    ("mcpp.sandbox.staged_sandbox", "", "undeclared_outputs", "stray outputs looked for"),
    ("mcpp.sandbox.staged_sandbox", "", "collect_outputs", "outputs moved to target/"),
    ("mcpp.engine.exec.pipeline", "", "take_output", "output made read-only and hashed"),
    ("mcpp.cas.ingest", "Ingest", "_run", "store job (all below)"),
    ("mcpp.cas.materialize", "Materializer", "publish_bytes", "output copied to the store's area"),
    ("mcpp.cas.local_store", "LocalZstdStore", "put_digested", "blob compressed and written"),
    ("mcpp.cas.action_cache", "ActionCache", "put", "action-cache entry written"),
    ("mcpp.cas.action_cache", "ActionCache", "add_manifest", "depfile manifest written"),
    ("mcpp.engine.exec.pipeline", "ActionPipeline", "finish", "action finished (scheduling thread)"),
]

DRIVER = r"""
import functools, importlib, json, sys, threading, time
out, phases = sys.argv[1], json.loads(sys.argv[2])
acc, missing = {}, []

def role():
    name = threading.current_thread().name
    return "lane" if name.startswith("mcpp-lane") else "ingest" if name == "mcpp-ingest" else \
        "main" if name == "MainThread" else "other"

def wrap(module, owner, name, label):
    try:
        target = importlib.import_module(module)
        holder = getattr(target, owner) if owner else target
        fn = getattr(holder, name)
    except (ImportError, AttributeError):
        missing.append(label)
        return

    @functools.wraps(fn)
    def timed(*a, **k):
        t = time.thread_time_ns()
        try:
            return fn(*a, **k)
        finally:
            cell = acc.setdefault((role(), label), [0, 0])
            cell[0] += time.thread_time_ns() - t
            cell[1] += 1
    setattr(holder, name, timed)

for module, owner, name, label in phases:
    wrap(module, owner, name, label)
from mcpp.engine.cli.dispatch import main
start = time.perf_counter()
try:
    main(["build", "--no-server", "-j", "2", "--message-format", "json"])
except SystemExit as e:
    if e.code:
        raise
wall = time.perf_counter() - start
import resource
usage = resource.getrusage(resource.RUSAGE_SELF)  # every thread's, the ended ones too; no child's
with open(out, "w") as f:
    json.dump({"wall": wall, "missing": missing, "cpu": [usage.ru_utime, usage.ru_stime],
               "phases": [[r, l, ns, n] for (r, l), (ns, n) in acc.items()]}, f)
"""


def one_build(python: str, proj: str, home: str, out: str) -> dict:
    env = run_bench.mcpp_env(home)
    env["MCPP_NO_SERVER"] = "1"
    phases = json.dumps([list(p) for p in PHASES])
    p = subprocess.run([python, "-c", DRIVER, out, phases], cwd=proj, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"action_phases.py: the build failed:\n{p.stderr}")
    with open(out) as f:
        return json.load(f)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("units", nargs="?", type=int, default=600)
    ap.add_argument("--light", action="store_true", help="no header includes a standard header (gen_project.py --light)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    ap.add_argument("--markdown", help="also write the table to this file")
    args = ap.parse_args()

    work = os.path.join(BENCH, "work", f"phases-n{args.units}" + ("-light" if args.light else ""))
    proj, home = os.path.join(work, "proj"), os.path.join(work, "home")
    if not os.path.exists(os.path.join(proj, "mcpp.toml")):
        gen_project.generate(args.units, proj, args.light)
    trash = run_bench.Trash(os.path.join(BENCH, "work", "trash"))
    runs = []
    for i in range(args.runs):
        trash.discard(os.path.join(proj, "target"))
        trash.discard(home)
        subprocess.run(["sync"], check=False)
        runs.append(one_build(args.python, proj, home, os.path.join(work, f"phases-{i}.json")))
    actions = args.units + 2  # every unit, main.cpp, the link

    per_call: dict[tuple[str, str], list[float]] = {}
    per_action: dict[tuple[str, str], list[float]] = {}
    calls: dict[tuple[str, str], int] = {}
    for r in runs:
        for role, label, ns, n in r["phases"]:
            per_call.setdefault((role, label), []).append(ns / 1e3 / max(n, 1))
            per_action.setdefault((role, label), []).append(ns / 1e3 / actions)
            calls[(role, label)] = n
    order = {label: i for i, (_m, _o, _n, label) in enumerate(PHASES)}
    walls = ", ".join(f"{r['wall']:.2f}" for r in runs)
    cpu = ", ".join(f"{r['cpu'][0]:.2f} + {r['cpu'][1]:.2f}" for r in runs)
    light = " --light" if args.light else ""
    lines = [
        f"- command: `python bench/action_phases.py {args.units}{light} --runs {args.runs}` ({args.python}), "
        f"{actions} actions per build",
        f"- wall per clean build: {walls} s",
        f"- CPU of the build process, every thread, user + system (s; imports and planning included): {cpu}",
    ]
    if runs[0]["missing"]:
        lines.append(f"- not found in this mcpp (no row): {', '.join(runs[0]['missing'])}")
    lines += ["", "| thread | phase | calls | CPU per call (us) | CPU per action (us) |", "|---|---|---:|---:|---:|"]
    for key in sorted(per_call, key=lambda k: ({"lane": 0, "ingest": 1, "main": 2}.get(k[0], 3), order.get(k[1], 99))):
        lines.append(f"| {key[0]} | {key[1]} | {calls[key]} | {statistics.median(per_call[key]):.0f} | "
                     f"{statistics.median(per_action[key]):.0f} |")
    run_bench.show("\n".join(lines) + "\n", args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
