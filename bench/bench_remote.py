"""Remote cache: a fresh checkout against a warm REAPI cache vs a clean build (>= 5x), signed vs unsigned (<= +10%).

    .venv/bin/python bench/bench_remote.py [--sources 1000] [--jobs 2] [--runs 3] [--markdown FILE]

Starts a real BuildGrid 0.4.4 server (the test dependency; in-memory storage, unix socket) and
generates the bench project (`gen_project.py`) twice, at two different paths. Then, timing the
whole `mcpp build -j J --message-format json` command (wall clock, process start-up included):

1. *clean build*: checkout A, empty `MCPP_HOME`, no remote: the baseline;
2. *clean build + upload*: checkout A again (target/ removed), another empty `MCPP_HOME`,
   `--remote URL --remote-upload` into the empty server, signing every result with a key made by
   `mcpp cache keygen` (`MCPP_REMOTE_SIGN_KEY`): what a CI machine pays to fill the cache;
3. *fresh checkout, warm remote*: a copy B elsewhere, an empty `MCPP_HOME`, `--remote URL`:
   what a laptop pays, in two variants: *unsigned* (no trusted keys: results are used without
   checking their signatures) and *signed* (`MCPP_REMOTE_TRUSTED_KEYS` names the CI key: every
   result and header manifest is verified before it is used). Each variant runs `--runs` times,
   interleaved (unsigned then signed, then the other order), each with a new copy and an empty
   home, so a change in the machine's load falls on both alike; medians are reported.

Checked: (1) and (2) run every compile and the link; (3) runs none, every action is a remote hit,
B's binary is byte-identical to A's and prints the same line, and every result of a signed run
names the CI key as its signer (of an unsigned run: none). `--no-baseline` skips (1) and compares
(3) with (2). Work goes under `bench/work/remote-nN/` (git-ignored).
"""
from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "unit", "remote"))

import gen_project  # noqa: E402
import run_bench  # noqa: E402
from buildgrid_server import BuildGridServer  # noqa: E402


class BenchError(Exception):
    pass


def sh(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"


def build(mcpp: str, cwd: str, home: str, jobs: int, extra: list[str],
          env_extra: dict[str, str] | None = None) -> tuple[float, Counter, list[dict]]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "MCPP_REMOTE",
                                                            "MCPP_REMOTE_UPLOAD", "MCPP_REMOTE_SIGN_KEY",
                                                            "MCPP_REMOTE_TRUSTED_KEYS")}
    env.update(MCPP_HOME=home, PYTHONPYCACHEPREFIX=os.path.join(BENCH, "work", "pycache"), **(env_extra or {}))
    argv = [mcpp, "build", "-j", str(jobs), "--message-format", "json", *extra]
    t0 = time.perf_counter()
    p = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise BenchError(f"{' '.join(argv)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    events = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    counts = Counter(e["status"] for e in events if e.get("reason") == "action-finished")
    warnings = [line for line in p.stderr.splitlines() if line.startswith("warning:")]
    if warnings:
        raise BenchError("unexpected warnings:\n" + "\n".join(warnings))
    return dt, counts, events


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def machine(mcpp: str) -> list[str]:
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    except OSError:
        pass
    return [
        f"date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
        f"machine: {len(os.sched_getaffinity(0))} CPUs (nproc), {model}, {platform.system()} {platform.release()}",
        "load average at start: " + " ".join(f"{x:.2f}" for x in os.getloadavg()),
        f"gcc: {sh(['g++', '--version']).splitlines()[0]}",
        f"server: BuildGrid {_version('buildgrid')} (`bgd server start`, in-memory LRU storage and action "
        "cache, unix socket, same machine)",
        f"mcpp: {sh([mcpp, '--version'])} at commit {sh(['git', '-C', ROOT, 'rev-parse', '--short', 'HEAD'])} "
        "(plus uncommitted changes, if any)",
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sources", type=int, default=1000, metavar="N", help="project size (default 1000)")
    ap.add_argument("--jobs", type=int, default=2, metavar="J", help="-j for every build (default 2)")
    ap.add_argument("--runs", type=int, default=3, metavar="R",
                    help="fresh-checkout runs of each variant, unsigned and signed (median; default 3)")
    ap.add_argument("--mcpp", default=os.path.join(ROOT, ".venv", "bin", "mcpp"), help="the mcpp to run")
    ap.add_argument("--no-baseline", action="store_true", help="skip the clean build without a remote")
    ap.add_argument("--markdown", metavar="FILE", help="also write the report there")
    args = ap.parse_args()

    work = os.path.join(BENCH, "work", f"remote-n{args.sources}")
    shutil.rmtree(work, ignore_errors=True)
    a = os.path.join(work, "a")
    gen_project.generate(args.sources, a)
    header = machine(args.mcpp)
    total = args.sources + 2  # compiles (sources + main.cpp) and the link
    rows: list[tuple[str, list[float], str]] = []

    def clean_a() -> None:
        shutil.rmtree(os.path.join(a, "target"), ignore_errors=True)

    def binary(root: str) -> tuple[bytes, str]:
        path = os.path.join(root, "target", "dev", "bench")
        with open(path, "rb") as f:
            return f.read(), sh([path])

    keys = os.path.join(work, "keys")
    os.makedirs(keys)
    p = subprocess.run([args.mcpp, "cache", "keygen", "bench-ci"], cwd=keys, capture_output=True, text=True)
    if p.returncode != 0:
        raise BenchError(f"mcpp cache keygen failed ({p.returncode}):\n{p.stderr}")
    public = p.stdout.strip()
    sign = {"MCPP_REMOTE_SIGN_KEY": os.path.join(keys, "bench-ci.secret")}
    variants = {"unsigned": {}, "signed": {"MCPP_REMOTE_TRUSTED_KEYS": public}}

    with BuildGridServer(lru_size="4G") as server:
        remote = ["--remote", server.url]
        if not args.no_baseline:
            print("clean build (no remote) ...", file=sys.stderr, flush=True)
            dt, counts, _ = build(args.mcpp, a, os.path.join(work, "home-baseline"), args.jobs, [])
            if counts != {"executed": total}:
                raise BenchError(f"clean build: expected {total} executed actions, got {dict(counts)}")
            rows.append(("clean build (empty MCPP_HOME, no remote)", [dt], f"{total} actions executed"))
            clean_a()
        print("clean build + upload ...", file=sys.stderr, flush=True)
        dt, counts, _ = build(args.mcpp, a, os.path.join(work, "home-ci"), args.jobs, [*remote, "--remote-upload"],
                              sign)
        if counts != {"executed": total}:
            raise BenchError(f"clean build with upload: expected {total} executed actions, got {dict(counts)}")
        rows.append(("clean build + --remote-upload (signed) into an empty server", [dt],
                     f"{total} actions executed, signed and uploaded"))
        want = binary(a)

        times: dict[str, list[float]] = {name: [] for name in variants}
        for run in range(args.runs):
            for name in (list(variants) if run % 2 == 0 else list(reversed(variants))):
                print(f"fresh checkout, warm remote, {name} ({run + 1}/{args.runs}) ...", file=sys.stderr, flush=True)
                b = os.path.join(work, f"elsewhere-{name}-{run}", "checkout")
                shutil.copytree(a, b, ignore=shutil.ignore_patterns("target", "compile_commands.json"))
                dt, counts, events = build(args.mcpp, b, os.path.join(work, f"home-laptop-{name}-{run}"), args.jobs,
                                           remote, variants[name])
                if counts != {"remote": total}:
                    raise BenchError(f"fresh checkout ({name}): expected {total} remote hits, got {dict(counts)}")
                signers = {e["origin"].get("signed-by") for e in events if e.get("reason") == "action-finished"}
                if signers != {public if name == "signed" else None}:
                    raise BenchError(f"fresh checkout ({name}): results signed by {signers}")
                if binary(b) != want:
                    raise BenchError(f"fresh checkout ({name}): the binary differs from the clean build's")
                times[name].append(dt)
        fresh = times["unsigned"]
        rows.append(("fresh checkout elsewhere + empty MCPP_HOME + warm remote, unsigned (no trusted keys)", fresh,
                     f"{total} remote hits, 0 executed; binary byte-identical"))
        rows.append(("fresh checkout, as above, signed (`MCPP_REMOTE_TRUSTED_KEYS` = the CI key)", times["signed"],
                     f"{total} remote hits, each signed by the CI key; binary byte-identical"))

    baseline = rows[0][1][0]
    ratio = baseline / statistics.median(fresh)
    slower = statistics.median(times["signed"]) / statistics.median(fresh) - 1
    out = ["## Remote cache (REAPI, BuildGrid 0.4.4)", ""]
    out += [f"- {line}" for line in header]
    out += [f"- command: `{' '.join(['.venv/bin/python bench/bench_remote.py', *sys.argv[1:]])}`",
            f"- project: `bench/gen_project.py --sources {args.sources}` ({total} actions); "
            f"every build `mcpp build -j {args.jobs} --message-format json`, wall time including process start-up; "
            f"fresh-checkout variants interleaved ({args.runs} runs each)",
            "- load average at end: " + " ".join(f"{x:.2f}" for x in os.getloadavg()),
            f"- binaries print: `{want[1]}`", "",
            "| scenario | median (s) | runs (s) | checked |", "|---|---:|---|---|"]
    for label, runs, check in rows:
        out.append(f"| {label} | {statistics.median(runs):.2f} | {' '.join(f'{t:.2f}' for t in runs)} | {check} |")
    base_label = "clean build" if not args.no_baseline else "clean build + upload"
    out += ["", "Goal:", "",
            f"- DESIGN §8: fresh checkout against a warm remote at least 5x faster than a clean build: "
            f"{base_label} {baseline:.1f} s / fresh {statistics.median(fresh):.2f} s = {ratio:.1f}x -> "
            f"**{'pass' if ratio >= 5 else 'FAIL'}**",
            f"- issue 18: a signed fresh-checkout build at most 10% slower than an unsigned one: "
            f"{statistics.median(times['signed']):.2f} s vs {statistics.median(fresh):.2f} s = {slower * 100:+.1f}% -> "
            f"**{'pass' if slower <= 0.10 else 'FAIL'}**"]
    if not args.no_baseline:
        out.append(f"- upload overhead of --remote-upload on the clean build: "
                   f"{(rows[1][1][0] / baseline - 1) * 100:+.0f}%")
    run_bench.show("\n".join(out) + "\n", args.markdown)


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        sys.exit(f"bench_remote: {e}")
