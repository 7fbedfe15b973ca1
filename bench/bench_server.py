"""No-op and edit-one build times with and without the warm build server (docs/server.md).

    python bench/bench_server.py [--sources 300] [--runs 5] [--jobs 2]

Generates an N-source project (bench/gen_project.py) under bench/work/server-nN/, builds it once,
then times as medians of --runs, in-process (`MCPP_NO_SERVER=1`) and server runs interleaved:

- no-op: a plain `mcpp build` (answered by the no-op fast path in the `mcpp` process in both modes);
- full-engine no-op: `MCPP_NO_FAST_PATH=1`, so the build loads, plans and checks every action;
- edit-one: one source gets a new function appended: one compile and the link.

The server is started (and its first build, which fills its memory, done) before timing.
Standard library only.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)

import gen_project  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sources", type=int, default=300)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    mcpp = os.path.join(os.path.dirname(sys.executable), "mcpp")
    work = os.path.join(BENCH, "work", f"server-n{args.sources}")
    shutil.rmtree(work, ignore_errors=True)
    project = os.path.join(work, "p")
    subprocess.run([sys.executable, os.path.join(BENCH, "gen_project.py"), "--sources", str(args.sources),
                    "--out", project], check=True, stdout=subprocess.DEVNULL)
    base = {**os.environ, "MCPP_HOME": os.path.join(work, "home")}
    base.pop("MCPP_NO_SERVER", None)
    modes = {"in process": {**base, "MCPP_NO_SERVER": "1"}, "server": {**base, "MCPP_NO_SERVER": "0"}}

    def build(env: dict, *extra: str) -> float:
        start = time.perf_counter()
        subprocess.run([mcpp, "build", "-q", "-j", str(args.jobs)], cwd=project, env={**env, **dict(extra)},
                       check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - start

    build(modes["in process"])
    for env in modes.values():  # warm: the server's first build fills its memory; both record no-ops
        for _ in range(2):
            build(env)
            build(env, ("MCPP_NO_FAST_PATH", "1"))
    source = os.path.join(project, "src", "mod00", "f0001.cpp")
    rows: dict[str, dict[str, list[float]]] = {}
    for i in range(args.runs):
        for mode, env in modes.items():
            rows.setdefault("no-op", {}).setdefault(mode, []).append(build(env))
            rows.setdefault("full-engine no-op", {}).setdefault(mode, []).append(
                build(env, ("MCPP_NO_FAST_PATH", "1")))
            with open(source, "a") as f:
                f.write(f"unsigned bench_edit_{mode.replace(' ', '_')}_{i}(unsigned x) {{ return x + {i}u; }}\n")
            rows.setdefault("edit-one", {}).setdefault(mode, []).append(build(env))
    status = subprocess.run([mcpp, "server", "status"], cwd=project, env=modes["server"], capture_output=True,
                            text=True).stdout
    subprocess.run([mcpp, "server", "stop"], cwd=project, env=modes["server"], stdout=subprocess.DEVNULL)
    print(f"{args.sources} units, -j{args.jobs}, medians of {args.runs}, {os.cpu_count()} CPUs")
    print(f"| | in process | server |\n|---|---:|---:|")
    for name, by_mode in rows.items():
        a, b = (statistics.median(by_mode[m]) * 1000 for m in modes)
        print(f"| {name} | {a:.0f} ms | {b:.0f} ms |")
    print("\nserver after the runs:\n" + "".join(f"    {line}\n" for line in status.splitlines()))


if __name__ == "__main__":
    main()
