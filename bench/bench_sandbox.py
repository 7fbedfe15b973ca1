"""Clean-build cost of each sandbox: `--sandbox bwrap`, `dir` and `off` on the bench project.

Each run is a clean build (no `target/`, an empty `$MCPP_HOME`, so nothing comes from the
cache); the modes are interleaved run by run so that load on the machine spreads over all of
them. Goal (issue "Sandbox"): bwrap within 10% of off.

    python bench/bench_sandbox.py [--sources 1000] [--runs 3] [--jobs 2]
"""
from __future__ import annotations

import argparse
import datetime
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODES = ("bwrap", "dir", "off")


def clean_build(project: str, home: str, mode: str, jobs: int, mcpp: str) -> float:
    shutil.rmtree(os.path.join(project, "target"), ignore_errors=True)
    shutil.rmtree(home, ignore_errors=True)
    env = {**os.environ, "MCPP_HOME": home}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = time.monotonic()
    subprocess.run([mcpp, "build", "-q", "-j", str(jobs), "--sandbox", mode], cwd=project, env=env,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sources", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--work", default=os.path.join(HERE, "work"))
    args = ap.parse_args()
    mcpp = os.path.join(os.path.dirname(sys.executable), "mcpp")
    project = os.path.join(args.work, f"sandbox-n{args.sources}")
    subprocess.run([sys.executable, os.path.join(HERE, "gen_project.py"), "--sources", str(args.sources),
                    "--out", project, "--force"], check=True, stdout=subprocess.DEVNULL)
    home = os.path.join(args.work, "sandbox-home")
    times: dict[str, list[float]] = {m: [] for m in MODES}
    load_before = os.getloadavg()
    for _ in range(args.runs):
        for mode in MODES:
            times[mode].append(clean_build(project, home, mode, args.jobs, mcpp))
    med = {m: statistics.median(ts) for m, ts in times.items()}
    print(f"- date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}")
    print(f"- machine: {os.cpu_count()} CPUs; load average before {load_before}, after {os.getloadavg()}")
    print(f"- command: `python bench/bench_sandbox.py --sources {args.sources} --runs {args.runs} --jobs {args.jobs}`")
    print()
    print("| sandbox | clean build median (s) | vs off | runs (s) |")
    print("|---|---:|---:|---|")
    for m in MODES:
        print(f"| {m} | {med[m]:.1f} | {med[m] / med['off']:.2f}x | {' '.join(f'{t:.1f}' for t in times[m])} |")
    verdict = "pass" if med["bwrap"] <= 1.10 * med["off"] else "FAIL"
    print(f"\nGoal: bwrap within 10% of off: {100 * (med['bwrap'] / med['off'] - 1):+.1f}% -> **{verdict}**")


if __name__ == "__main__":
    main()
