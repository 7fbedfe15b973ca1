"""Remote execution: a `--remote-exec` clean build with local workers vs a local `-j J` build, and
a projected speed-up with K remote cores from the measured per-action overhead.

    .venv/bin/python bench/bench_remote_exec.py [--sources 200] [--jobs 2] [--workers 2] [--slots 1] [--runs 1]

Starts a grid on this machine (`scripts/buildgrid/local_grid.py`: PostgreSQL, BuildGrid with the
SQL scheduler, `--workers` `mcpp worker` processes of `--slots` slots each), generates the bench project
(`gen_project.py`), then times whole `mcpp build --message-format json` commands (wall clock):

1. *local*: a copy, an empty `MCPP_HOME`, `-j J`, no remote;
2. *remote-exec*: another copy, an empty `MCPP_HOME`, `--remote URL --remote-exec` (default
   `-j`: 4 x cores), every compile and the link run by the workers. Each run adds a fresh define
   to the project, so the server's action cache holds none of its results.

Checked: (1) executes every action; (2) too, and the workers' logs name every object file; both
binaries print the same line.

The model. On this machine the workers share the client's cores, so the ratio (2)/(1) is the
protocol's overhead, not a speed-up. From the runs:

- `c`: the mean local run of an action (JSON event `duration` of (1));
- `r`: the mean remote run as the client sees it (event `duration` of (2): upload of missing
  inputs, `Execute`, queueing, the worker's staging, run and upload, the result's download);
- `w`: the mean worker-side time (worker log `duration`: staging, sandboxed run, upload; the
  log's `stage`, `run` and `upload` split it);
- `a`: client CPU seconds per action in (2) (the build process's user+sys / actions): what
  bounds the client however many workers there are. Both builds run in process
  (`MCPP_NO_SERVER=1`): through the warm build server the build's CPU would be spent in the
  server's process, not in the measured `mcpp` one;
- `s`: server CPU seconds per action in (2) (BuildGrid and PostgreSQL processes' user+sys / actions).

With K remote cores and enough in-flight actions (-j >= K), a clean build of n actions takes about

    T(K) = t0 + n * max(w / K, a, s / S)

where t0 = the non-parallel part (start-up, planning, the link: measured as (1) minus n * c / J) and
S the server's cores (1 here: BuildGrid is one Python process). The speed-up over local -j J is
T_local / T(K).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
sys.path.insert(0, os.path.join(ROOT, "scripts", "buildgrid"))

from local_grid import LocalGrid  # noqa: E402

MCPP = os.path.join(os.path.dirname(sys.executable), "mcpp")


def cpu_of(pids: list[int]) -> float:
    """user+sys seconds of the processes `pids` (those still alive)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
        except (OSError, IndexError, ValueError):
            pass
    return total / tick


def server_pids(grid: LocalGrid) -> list[int]:
    """BuildGrid and every PostgreSQL process of the grid's cluster."""
    pids = [grid.bgd.pid] if grid.bgd else []
    try:
        postmaster = int((grid.pg_dir / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return pids
    pids.append(postmaster)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid in (postmaster, grid.bgd.pid if grid.bgd else -1):
                pids.append(int(entry))
    return pids


def build(proj: str, home: str, args: list[str], env: dict | None = None) -> tuple[float, float, list[dict]]:
    """(wall s, CPU s of the mcpp process, events) of one build."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    p = subprocess.run([MCPP, "build", "--message-format", "json", *args], cwd=proj, capture_output=True, text=True,
                       env={**os.environ, "MCPP_HOME": home, "MCPP_NO_SERVER": "1", **(env or {})})
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"build failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    events = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, events


def executed(events: list[dict]) -> list[dict]:
    return [e for e in events if e.get("reason") == "action-finished" and e.get("status") == "executed"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sources", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--slots", type=int, default=1, help="actions each worker runs at once")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--k", type=int, nargs="*", default=[8, 16, 32, 64])
    args = ap.parse_args()

    work = os.path.join(BENCH, "work", f"remote-exec-n{args.sources}")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    src = os.path.join(work, "src")
    subprocess.run([sys.executable, os.path.join(BENCH, "gen_project.py"), "--sources", str(args.sources),
                    "--out", src], check=True, capture_output=True)
    grid = LocalGrid(keepalive=30)
    t = time.monotonic()
    grid.start(workers=args.workers, slots=args.slots)
    print(f"grid up in {time.monotonic() - t:.1f}s ({grid.url})", flush=True)
    rows = []
    try:
        for run in range(args.runs):
            local = os.path.join(work, f"local-{run}")
            shutil.copytree(src, local)
            lw, lcpu, lev = build(local, os.path.join(work, f"home-local-{run}"), ["-j", str(args.jobs)])
            remote = os.path.join(work, f"remote-{run}")
            shutil.copytree(src, remote)
            toml = os.path.join(remote, "mcpp.toml")
            with open(toml) as f:
                text = f.read()
            with open(toml, "w") as f:  # new commands: nothing from the server's action cache
                f.write(text.replace('include_dirs = ["include"]',
                                     f'include_dirs = ["include"]\ncxxflags = ["-DBENCH_RUN={time.time_ns()}"]'))
            worker_before = {i: len(grid.events(i)) for i in range(args.workers)}
            spids = server_pids(grid)
            s0 = cpu_of(spids)
            rw, rcpu, rev = build(remote, os.path.join(work, f"home-remote-{run}"),
                                  ["--remote", grid.url, "--remote-exec"])
            scpu = cpu_of(spids) - s0
            wev = [e for i in range(args.workers) for e in grid.events(i)[worker_before[i]:]
                   if e.get("event") == "action-executed"]
            n = len(executed(rev))
            assert len(executed(lev)) == n and len(wev) >= n, (len(executed(lev)), n, len(wev))
            out_l = subprocess.run([os.path.join(local, "target/dev/bench")], capture_output=True, text=True).stdout
            out_r = subprocess.run([os.path.join(remote, "target/dev/bench")], capture_output=True, text=True).stdout
            assert out_l == out_r, (out_l, out_r)
            rows.append(dict(n=n, local=lw, remote=rw, local_cpu=lcpu, client_cpu=rcpu, server_cpu=scpu,
                             c=statistics.mean(e["duration"] for e in executed(lev)),
                             r=statistics.mean(e["duration"] for e in executed(rev)),
                             w=statistics.mean(e["duration"] for e in wev),
                             **{f"w_{k}": statistics.mean(e.get(k, 0.0) for e in wev) for k in ("stage", "run", "upload")},
                             output=out_l.strip()))
            print(json.dumps(rows[-1]), flush=True)
    finally:
        grid.stop()

    m = {k: statistics.median(row[k] for row in rows) for k in rows[0] if k != "output"}
    n = int(m["n"])
    a, s, w = m["client_cpu"] / n, m["server_cpu"] / n, m["w"]
    t0 = max(0.0, m["local"] - n * m["c"] / args.jobs)  # what no number of cores shortens
    print(f"\n{n} actions; local -j{args.jobs}: {m['local']:.2f} s; --remote-exec with {args.workers} local "
          f"workers of {args.slots} slot(s): {m['remote']:.2f} s; ratio {m['remote'] / m['local']:.2f}x (goal <= 1.3x)")
    print(f"per action: local run c = {m['c'] * 1000:.0f} ms, remote as the client sees it r = {m['r'] * 1000:.0f} ms, "
          f"worker side w = {w * 1000:.0f} ms, client CPU a = {a * 1000:.1f} ms, server CPU s = {s * 1000:.1f} ms; "
          f"t0 = {t0:.2f} s")
    print(f"worker side: stage {m['w_stage'] * 1000:.0f} ms, sandboxed run {m['w_run'] * 1000:.0f} ms, "
          f"upload {m['w_upload'] * 1000:.0f} ms")
    print("projection T(K) = t0 + n * max(w/K, a, s)  (server on one core):")
    for k in args.k:
        tk = t0 + n * max(w / k, a, s)
        bound = "workers" if w / k >= max(a, s) else ("client" if a >= s else "server")
        print(f"  K = {k:3d}: {tk:6.2f} s, {m['local'] / tk:4.1f}x faster than local -j{args.jobs} ({bound}-bound)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
