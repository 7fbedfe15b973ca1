"""The CPU mcpp itself burns per action in one build, apart from the compilers'.

    python bench/action_cpu.py [--server-pid PID] [--actions N] -- mcpp build -j 2 ...

Runs the command and, every few milliseconds, reads `/proc/<pid>/stat` of every process below it
(and below `--server-pid`, the warm server that runs the build, whose own CPU is counted as its
change over the build). Each process's own user+system time (fields 14 and 15: every thread's,
exited threads included, not its children's) is kept as last seen; at the end the processes are
summed by role:

- `engine`: the command's process, the server and its build child (the scheduler, lanes, ingest,
  stat cache): every Python process that is not inside a bwrap;
- `sandbox`: bwrap and the executors inside it (python3 below a bwrap);
- `tools`: everything else (g++, cc1plus, as, collect2, ld): the compilers' own work.

`tools` is the whole tree's CPU (the command's rusage, plus the server's children's change)
less the other two, so a short-lived compiler that the sampling misses is still counted there.
The engine's and the sandbox's figures are sampled: they can miss the last sampling interval of
a process, a few milliseconds. Compare CPU, not wall time, on a shared machine.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import threading
import time

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, str, float, float] | None:
    """(ppid, comm, own cpu s, waited children's cpu s) of `pid`, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("latin-1")
    except OSError:
        return None
    comm = raw[raw.index("(") + 1:raw.rindex(")")]
    fields = raw[raw.rindex(")") + 2:].split()
    # fields[0] is state (field 3); utime is field 14 -> fields[11]
    return (int(fields[1]), comm, (int(fields[11]) + int(fields[12])) / TICK,
            (int(fields[13]) + int(fields[14])) / TICK)


class Sampler(threading.Thread):
    def __init__(self, roots: list[int], interval: float = 0.005):
        super().__init__(daemon=True)
        self.roots = set(roots)
        self.interval = interval
        self.seen: dict[int, tuple[str, float, int]] = {}  # pid -> (comm, own cpu, parent)
        self.threads: dict[int, tuple[float, float]] = {}  # tid of a root -> (user, system)
        self.waited: dict[int, float] = {}  # pid -> its waited children's cpu
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.sample()
            time.sleep(self.interval)

    def sample(self) -> None:
        for root in self.roots:
            try:
                tids = os.listdir(f"/proc/{root}/task")
            except OSError:
                continue
            for tid in tids:
                try:
                    with open(f"/proc/{root}/task/{tid}/stat", "rb") as f:
                        raw = f.read().decode("latin-1")
                except OSError:
                    continue
                fl = raw[raw.rindex(")") + 2:].split()
                self.threads[int(tid)] = (int(fl[11]) / TICK, int(fl[12]) / TICK)
        table = {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                s = _stat(int(name))
                if s is not None:
                    table[int(name)] = s
        for pid, (ppid, comm, cpu, _c) in table.items():
            p, chain = pid, 0
            while p not in self.roots and p in table and chain < 64:
                p, chain = table[p][0], chain + 1
            if p in self.roots:
                self.seen[pid] = (comm, cpu, ppid)
                self.waited[pid] = table[pid][3]


def role(pid: int, seen: dict[int, tuple[str, float, int]], engine: set[int]) -> str:
    if pid in engine:
        return "engine"
    comm = seen[pid][0]
    if comm == "bwrap":
        return "sandbox"
    if comm.startswith("python"):
        p = seen[pid][2]
        while p in seen:
            if seen[p][0] == "bwrap":
                return "sandbox"
            p = seen[p][2]
        return "engine"  # the server's build child (a fork), or a helper of the engine's
    return "tools"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--server-pid", type=int, default=0)
    ap.add_argument("--actions", type=int, default=0, help="divide by this many actions")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.cmd[1:] if args.cmd and args.cmd[0] == "--" else args.cmd
    server0 = _stat(args.server_pid) if args.server_pid else None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    base = Sampler([args.server_pid] if args.server_pid else [])
    base.sample()  # the server's processes before the build: only their change counts
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    roots = [proc.pid] + ([args.server_pid] if args.server_pid else [])
    sampler = Sampler(roots)
    sampler.start()
    rc = proc.wait()
    sampler.stop.set()
    sampler.join()
    server1 = _stat(args.server_pid) if args.server_pid else None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    seen = sampler.seen
    engine = {proc.pid}
    sums = {"engine": 0.0, "sandbox": 0.0, "tools": 0.0}
    for pid, (comm, cpu, _pp) in seen.items():
        if pid == args.server_pid:
            continue
        r = role(pid, seen, engine)
        sums[r] += cpu - (base.seen[pid][1] if pid in base.seen else 0.0)
        if server1 and r == "sandbox" and _stat(pid) is not None:
            # a warm executor that outlives the build: the compilers it reaped are in its own
            # waited-children time, not yet in the server's
            total += sampler.waited[pid] - base.waited.get(pid, 0.0) + cpu - base.seen.get(pid, ("", 0.0, 0))[1]
    if server0 and server1:
        sums["engine"] += server1[2] - server0[2]
        total += (server1[2] - server0[2]) + (server1[3] - server0[3])
    # The compilers' CPU reaches the command's rusage only where every process between was
    # waited for; an executor killed with its sandbox is not: its reaped compilers are in its
    # own waited-children time, as last sampled.
    reaped = sum(sampler.waited[pid] - base.waited.get(pid, 0.0) for pid, (comm, _c, _p) in seen.items()
                 if pid != args.server_pid and comm.startswith("python") and role(pid, seen, engine) == "sandbox")
    sums["tools"] = max(total - sums["engine"] - sums["sandbox"], reaped)
    out = {k: round(v, 3) for k, v in sums.items()}
    out["total"] = round(total, 3)
    out["rc"] = rc
    if args.actions:
        out["engine_ms_per_action"] = round(1000 * sums["engine"] / args.actions, 3)
        out["sandbox_ms_per_action"] = round(1000 * sums["sandbox"] / args.actions, 3)
    if os.environ.get("ACTION_CPU_THREADS"):
        out["threads"] = {tid: (round(u - base.threads.get(tid, (0, 0))[0], 2), round(sy - base.threads.get(tid, (0, 0))[1], 2))
                          for tid, (u, sy) in sorted(sampler.threads.items()) if u + sy - sum(base.threads.get(tid, (0, 0))) > 0.005}
    print(json.dumps(out) if args.json else out)
    return rc


if __name__ == "__main__":
    sys.exit(main())
