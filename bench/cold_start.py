"""How long after the command a first build starts its first compile (issue 38, "a cold start").

    python bench/cold_start.py [--sources 300] [--runs 7] [--jobs 2]

Generates an N-source project (bench/gen_project.py) under bench/work/cold-nN/ and times, as
medians of --runs, a build with an empty `$MCPP_HOME` and no target/ (a first build: no server
up, no probe cached, no store), and one with the home kept and target/ removed (a fresh clone or a
CI job with its home restored), in process (`MCPP_NO_SERVER=1`) and with the server on (whose first
build runs in process while the server starts: docs/server.md). Each number is how long after
this script launched the `mcpp` process something in the build's own trace (`--trace FILE`)
began: the trace's `command-start` says its 0 on the wall clock (bench/peers.py's
`command_origin`); the first compile, the build's start (`build-start`: the engine imported),
its actions' (`actions-start`: the first action begun, a first build's first compile while the
rest is planned: engine/exec/head_start.py) and its schedule's (`schedule-start`: planned);
`first-action` is the first action checked (a compile restored from the store, with the home
kept). Servers are stopped between runs. Standard library only (and bench/peers.py).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from peers import command_origin

BENCH = os.path.dirname(os.path.abspath(__file__))
_MARKS = ("build-start", "actions-start", "schedule-start", "first-action", "first-compile")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sources", type=int, default=300)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    mcpp = os.path.join(os.path.dirname(sys.executable), "mcpp")
    work = os.path.join(BENCH, "work", f"cold-n{args.sources}")
    shutil.rmtree(work, ignore_errors=True)
    project, home, trace = os.path.join(work, "p"), os.path.join(work, "home"), os.path.join(work, "trace.json")
    subprocess.run([sys.executable, os.path.join(BENCH, "gen_project.py"), "--sources", str(args.sources),
                    "--out", project], check=True, stdout=subprocess.DEVNULL)
    base = {**os.environ, "MCPP_HOME": home}
    for name in ("MCPP_NO_SERVER", "MCPP_SERVER_START", "MCPP_NO_FAST_PATH"):
        base.pop(name, None)
    modes = {"in process": {**base, "MCPP_NO_SERVER": "1"}, "server on": {**base, "MCPP_NO_SERVER": "0"}}
    rows: dict[tuple[str, str], list[dict[str, float]]] = {}
    for _ in range(args.runs):
        for case in ("empty home", "kept home"):
            for mode, env in modes.items():  # interleaved: a change of the machine's load hits both
                subprocess.run([mcpp, "server", "stop", "--all"], cwd=project, env=env, capture_output=True)
                if case == "empty home":
                    shutil.rmtree(home, ignore_errors=True)
                shutil.rmtree(os.path.join(project, "target"), ignore_errors=True)
                launched = time.time()
                subprocess.run([mcpp, "build", "-q", "-j", str(args.jobs), "--trace", trace], cwd=project, env=env,
                               check=True, stdout=subprocess.DEVNULL)
                rows.setdefault((case, mode), []).append(_marks(trace, launched))
    subprocess.run([mcpp, "server", "stop", "--all"], cwd=project, env=base, capture_output=True)
    print(f"{args.sources} sources, -j{args.jobs}, medians of {args.runs} (ms after the command started)")
    print(f"| case | mode | {' | '.join(_MARKS)} |")
    print("|---|---|" + "---|" * len(_MARKS))
    for (case, mode), runs in rows.items():
        cells = [f"{statistics.median(r[m] for r in runs):.0f}" if all(m in r for r in runs) else "-" for m in _MARKS]
        print(f"| {case} | {mode} | {' | '.join(cells)} |")


def _marks(path: str, launched: float) -> dict[str, float]:
    """The trace's instant events and its first compile's start, in ms after the command was
    launched (peers.py's `command_origin`)."""
    events = json.load(open(path, encoding="utf-8"))["traceEvents"]
    origin = command_origin(events, launched)
    marks = {e["name"]: (e["ts"] - origin) / 1000 for e in events if e["ph"] == "i" and e["name"] != "command-start"}
    if "actions-start" in marks:  # the schedule starts with the actions unless one began ahead of it
        marks.setdefault("schedule-start", marks["actions-start"])
    actions = [(e["ts"] - origin) / 1000 for e in events if e["ph"] == "X"]
    if actions:
        marks["first-action"] = min(actions)
    compiles = [(e["ts"] - origin) / 1000 for e in events if e["ph"] == "X" and e["cat"] == "compile"
                and e["args"].get("status") == "executed"]
    if compiles:
        marks["first-compile"] = min(compiles)
    return marks


if __name__ == "__main__":
    main()
