"""A fully cached build over a slow link vs a clean local build (issue 36: at least 3x faster).

    .venv/bin/python bench/remote_latency.py [--sources 300] [--delay 0.2] [--jobs 2]
        [--download toplevel] [--remote-jobs N] [--markdown FILE]

Starts a real BuildGrid 0.4.4 (in-memory, unix socket) and, in front of it, the counting gRPC
proxy of the tests (`tests/e2e/remote_proxy.py`) adding `--delay` seconds to every call (a round
trip to a far server). Generates the bench project (`gen_project.py`, as `run_bench.py` does),
then times the whole `mcpp build -j J --message-format json` command (wall clock):

1. *clean build*: empty `MCPP_HOME`, no remote: the baseline;
2. *CI fill*: the same checkout (target/ removed), another empty home, `--remote-upload` straight
   to the server (no delay), signed: not compared, only what fills the cache;
3. *fully cached build over the slow link*: a copy elsewhere, an empty home trusting the CI
   key, `--remote` through the proxy with `--remote-download` (default `toplevel`).

Checked: (1) and (2) execute every action; (3) executes none, every action is a remote hit,
its binary is byte-identical to (1)'s. Reported: each time, the ratio (1)/(3), the calls the
proxy answered per method, and the blob bytes it carried down next to the binary's size.
Work goes under `bench/work/latency-nN/` (git-ignored).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))

from bench_remote import BenchError, build, machine  # noqa: E402  (puts bench/ and the server helper on the path)
import gen_project  # noqa: E402
import run_bench  # noqa: E402
from buildgrid_server import BuildGridServer  # noqa: E402
from remote_proxy import FaultProxy  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sources", type=int, default=300, metavar="N", help="project size (default 300)")
    ap.add_argument("--delay", type=float, default=0.2, metavar="S", help="seconds added per call (default 0.2)")
    ap.add_argument("--jobs", type=int, default=2, metavar="J", help="-j for every build (default 2)")
    ap.add_argument("--download", default="toplevel", choices=("all", "toplevel", "minimal"),
                    help="--remote-download of the cached build (default toplevel)")
    ap.add_argument("--remote-jobs", type=int, default=None, metavar="N", help="--remote-jobs (default: mcpp's)")
    ap.add_argument("--mcpp", default=os.path.join(ROOT, ".venv", "bin", "mcpp"), help="the mcpp to run")
    ap.add_argument("--markdown", metavar="FILE", help="also write the report there")
    args = ap.parse_args()

    work = os.path.join(BENCH, "work", f"latency-n{args.sources}")
    shutil.rmtree(work, ignore_errors=True)
    a = os.path.join(work, "a")
    gen_project.generate(args.sources, a)
    header = machine(args.mcpp)
    total = args.sources + 2  # the compiles (sources and main.cpp) and the link
    keys = os.path.join(work, "keys")
    os.makedirs(keys)
    p = subprocess.run([args.mcpp, "cache", "keygen", "bench-ci"], cwd=keys, capture_output=True, text=True)
    if p.returncode != 0:
        raise BenchError(f"mcpp cache keygen failed ({p.returncode}):\n{p.stderr}")
    public = p.stdout.strip()

    with BuildGridServer(lru_size="4G") as server, \
            FaultProxy(server.target, delay=args.delay, workers=1024) as proxy:
        print("clean build (no remote) ...", file=sys.stderr, flush=True)
        clean, counts, _ = build(args.mcpp, a, os.path.join(work, "home-clean"), args.jobs, [])
        if counts != {"executed": total}:
            raise BenchError(f"clean build: expected {total} executed actions, got {dict(counts)}")
        binary = os.path.join(a, "target", "dev", "bench")
        with open(binary, "rb") as f:
            want = f.read()
        shutil.rmtree(os.path.join(a, "target"))
        print("CI fill (upload, no delay) ...", file=sys.stderr, flush=True)
        fill, counts, _ = build(args.mcpp, a, os.path.join(work, "home-ci"), args.jobs,
                                ["--remote", server.url, "--remote-upload"],
                                {"MCPP_REMOTE_SIGN_KEY": os.path.join(keys, "bench-ci.secret")})
        if counts != {"executed": total}:
            raise BenchError(f"CI fill: expected {total} executed actions, got {dict(counts)}")

        print(f"fully cached build, {args.delay * 1000:.0f} ms per call ...", file=sys.stderr, flush=True)
        b = os.path.join(work, "elsewhere", "checkout")
        shutil.copytree(a, b, ignore=shutil.ignore_patterns("target", "compile_commands.json"))
        proxy.reset()
        extra = ["--remote", proxy.url, "--remote-download", args.download]
        if args.remote_jobs is not None:
            extra += ["--remote-jobs", str(args.remote_jobs)]
        cached, counts, events = build(args.mcpp, b, os.path.join(work, "home-laptop"), args.jobs, extra,
                                       {"MCPP_REMOTE_TRUSTED_KEYS": public})
        if counts != {"remote": total}:
            raise BenchError(f"cached build: expected {total} remote hits, got {dict(counts)}")
        with open(os.path.join(b, "target", "dev", "bench"), "rb") as f:
            if f.read() != want:
                raise BenchError("cached build: the binary differs from the clean build's")
        calls = dict(sorted((m.rsplit("/", 1)[-1], n) for m, n in proxy.ok.items()))
        most = max(proxy.most_in_flight.values(), default=0)

    command = " ".join(["python bench/remote_latency.py", f"--sources {args.sources}", f"--delay {args.delay}",
                        f"--jobs {args.jobs}", f"--download {args.download}"]
                       + ([f"--remote-jobs {args.remote_jobs}"] if args.remote_jobs is not None else []))
    lines = [f"- {h}" for h in header] + [
        f"- command: `{command}`",
        "",
        "| build | seconds |",
        "|---|---:|",
        f"| clean local build ({total} actions, -j{args.jobs}, no remote) | {clean:.2f} |",
        f"| CI fill: clean build + `--remote-upload`, signed (no delay) | {fill:.2f} |",
        f"| fully cached, fresh home, {args.delay * 1000:.0f} ms per call, `--remote-download {args.download}` "
        f"| {cached:.2f} |",
        "",
        f"- speed-up of the cached build over the clean one: **{clean / cached:.1f}x** (goal: at least 3x)",
        f"- calls the proxy answered: {calls}; at most {most} of one method at once",
        f"- blob bytes down: {proxy.bytes_down:,} (the binary: {len(want):,})",
    ]
    run_bench.show("\n".join(lines) + "\n", args.markdown)


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
