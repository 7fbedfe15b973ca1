"""Build times of mcpp against ninja running the same compiler commands on the same project.

    python bench/run_bench.py [--sources N] [--runs 5] [--clean-runs R] [--jobs 2] [--quick]
                              [--markdown FILE] [--profile-noop]

Generates (bench/gen_project.py) two identical copies of an N-source project under
bench/work/nN/ (one built by mcpp, one by ninja; mcpp's cache home is bench/work/nN/mcpp-home)
and times, as the median of several runs interleaved between the two tools:

- clean build: mcpp with no target/ and an empty MCPP_HOME; ninja with no outputs, .ninja_log
  or .ninja_deps. Clean runs default to min(--runs, 3). What a run removes is moved aside and
  deleted after the last timed run (`Trash`: a deletion right before a build slows every file
  the build creates on this machine's disk).
- warm-home rebuild (mcpp only): `rm -rf target`, MCPP_HOME kept from the previous build.
- no-op build, twice: the plain `mcpp build` a user types (human output; the only mode with
  mcpp's no-op fast path, so this row is the one the goals use), and with
  `--message-format json` (the full engine: manifests, plan, keys from the stat cache).
- touch-one rebuild: one .cpp gets a new function appended (its object changes): 1 compile +
  1 link expected, which is checked from mcpp's JSON events and ninja's status lines.
- touch-one, comment only: one .cpp gets a comment appended (its object does not change):
  1 compile expected; ninja also relinks, mcpp may skip the link (its keys are content-based).

Every build's work is checked (mcpp: JSON events, or MCPP_HOME/last-build.json for the plain
no-op; ninja: its `[i/n] CXX|LINK` lines), and both binaries must print the same line. --quick: N=100,
one run. --profile-noop: instead of timing, run one mcpp no-op build under cProfile and print
the 25 entries with the largest cumulative time (then the 15 with the largest own time).
mcpp's Python gets bytecode caching (PYTHONPYCACHEPREFIX=bench/work/pycache, no
PYTHONDONTWRITEBYTECODE), as an installed tool would have. Standard library only.
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import glob
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from typing import NamedTuple

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)

import gen_project  # noqa: E402

# Where `bash ../shared/tools/mcpp-peer/setup.sh` puts the real mcpp's wrapper (its PEER default).
PEER = os.path.join(os.path.expanduser("~"), ".cache", "mcpp-peer", "bin", "mcpp")


class BenchError(Exception):
    pass


def sh(argv: list[str], **kw) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, **kw).stdout.strip()
    except OSError:
        return "?"


def rm(path: str) -> None:
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.remove(path)


class Trash:
    """Where the bench puts what a run removes (a `target/`, a cache home, ninja's outputs):
    renamed into `bench/work/trash/`, deleted only when every timed run is over.

    Deleting them in place would charge the next timed build for the bench's own deletions.
    On a disk like this machine's (ext4 without a journal: no `/proc/fs/jbd2/<dev>`) the
    kernel's inode allocator skips every inode freed in the last 60 s (360 s while its
    inode-table block is dirty), one buffer lookup each (`recently_deleted`, fs/ext4/ialloc.c,
    checked only without a journal). Measured here: creating 2,000 files cost 35 us each on a
    quiet disk and 470 us each while another process created and deleted 100 files a second.
    A clean build right after `rm -rf target $MCPP_HOME` (some 3,000 inodes at 300 units) pays
    that on every file it creates, in proportion to how many it creates, which measures the
    bench's `rm`, not the tool. A rename frees no inode. Every tool's outputs go the same way."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.count = 0

    def discard(self, path: str) -> None:
        if not os.path.lexists(path):
            return
        os.makedirs(self.root, exist_ok=True)
        self.count += 1
        os.rename(path, os.path.join(self.root, f"{os.getpid()}-{time.time_ns()}-{self.count}-{os.path.basename(path)}"))

    def empty(self) -> None:
        rm(self.root)


class McppRun(NamedTuple):
    seconds: float
    counts: Counter  # (kind, status) of every action-finished event; empty for a plain build
    done: dict  # the build-finished event, or MCPP_HOME/last-build.json for a plain build
    ids: list[str]  # the actions that were not fresh (JSON builds only)
    launched: float = 0.0  # time.time() just before the process was started (peers.py's cold start)


def mcpp_env(home: str) -> dict[str, str]:
    """mcpp's environment as an installed tool's: bytecode caching (pycs under bench/work/pycache,
    even where the environment sets PYTHONDONTWRITEBYTECODE), its cache home `home`."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(MCPP_HOME=home, PYTHONPYCACHEPREFIX=os.path.join(BENCH, "work", "pycache"))
    return env


def run_mcpp(mcpp_bin: str, cwd: str, env: dict, home: str, jobs: int, extra: list[str] | tuple = (),
             json_events: bool = True) -> McppRun:
    """One timed `mcpp build -j JOBS`, which must succeed.

    Without json_events it is the plain `mcpp build` a user types (human output, the only
    mode with the no-op fast path); its counts then come from MCPP_HOME/last-build.json
    (executed, cache_hits, fresh) and the Counter is empty."""
    fmt = ["--message-format", "json"] if json_events else []
    argv = [mcpp_bin, "build", "-j", str(jobs), *fmt, *extra]
    last = os.path.join(home, "last-build.json")
    rm(last)
    launched, t0 = time.time(), time.perf_counter()
    p = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise BenchError(f"mcpp build failed ({p.returncode}):\n{p.stderr[-3000:]}")
    if not json_events:
        with open(last) as f:
            done = json.load(f)
        return McppRun(dt, Counter(), dict(done, cached=done.get("cache_hits")), [], launched)
    events = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    done = next((e for e in events if e.get("reason") == "build-finished"), {})
    finished = [e for e in events if e.get("reason") == "action-finished"]
    counts = Counter((e.get("kind"), e.get("status")) for e in finished)
    return McppRun(dt, counts, done, [e["id"] for e in finished if e.get("status") != "fresh"], launched)


def ninja_counts(stdout: str) -> Counter:
    """How many of each kind of edge ninja ran: its `[i/n] CXX ...` and `[i/n] LINK ...` lines."""
    return Counter(line.split("] ", 1)[1].split()[0] for line in stdout.splitlines()
                   if line.startswith("[") and "] " in line)


def run_ninja(ninja_bin: str, cwd: str, jobs: int) -> tuple[float, Counter]:
    """One timed `ninja -j JOBS`, which must succeed: (seconds, Counter of "CXX"/"LINK" lines)."""
    t0 = time.perf_counter()
    p = subprocess.run([ninja_bin, "-j", str(jobs)], cwd=cwd, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise BenchError(f"ninja failed ({p.returncode}):\n{p.stdout[-3000:]}")
    return dt, ninja_counts(p.stdout)


def peer_env(peer_bin: str) -> dict[str, str]:
    """The real mcpp's environment: gcc without ninja's dyndep (the issue's configuration), and a
    private copy of its prepared home (`peer_home`)."""
    return dict(os.environ, MCPP_NINJA_DYNDEP="0", MCPP_HOME=peer_home(peer_bin))


def run_peer(peer_bin: str, cwd: str, env: dict, jobs: int) -> tuple[float, bool]:
    """One timed build by the real mcpp with the host's gcc, which must succeed: (seconds,
    whether it compiled anything). It prints no count of what it ran, only a `Compiling` line
    when it compiled something."""
    t0 = time.perf_counter()
    p = subprocess.run([peer_bin, "build", "-j", str(jobs), "--toolchain", "path:/usr"],
                       cwd=cwd, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise BenchError(f"the real mcpp failed ({p.returncode}):\n{(p.stdout + p.stderr)[-3000:]}")
    return dt, bool(re.search(r"^\s*Compiling ", p.stdout + p.stderr, re.M))


def peer_binary(cwd: str) -> str | None:
    """Where the real mcpp put the bench's binary (target/<triple>/<profile>/bin/bench)."""
    found = glob.glob(os.path.join(cwd, "target", "*", "*", "bin", "bench"))
    return found[0] if found else None


class Bench:
    def __init__(self, args: argparse.Namespace):
        self.n, self.jobs, self.extra = args.sources, args.jobs, args.mcpp_arg
        self.mcpp_bin, self.ninja_bin = args.mcpp, args.ninja
        self.work = os.path.join(BENCH, "work", f"n{self.n}")
        self.mcpp_dir = os.path.join(self.work, "mcpp")
        self.ninja_dir = os.path.join(self.work, "ninja")
        self.home = os.path.join(self.work, "mcpp-home")
        # The real mcpp (bash ../shared/tools/mcpp-peer/setup.sh), built with gcc 12 as the
        # issue's table was: a third copy of the project, its own prepared home.
        self.peer_bin = args.peer
        self.peer_dir = os.path.join(self.work, "peer")
        self.peer_env = None
        if self.peer_bin:
            self.peer_env = peer_env(self.peer_bin)
        self.edits = 0
        self.trash = Trash(os.path.join(BENCH, "work", "trash"))
        # mcpp runs like an installed tool, with bytecode caching: pycs under bench/work/pycache,
        # even where the environment sets PYTHONDONTWRITEBYTECODE.
        self.env = mcpp_env(self.home)
        self.notes: list[str] = []

    # -- the two tools ---------------------------------------------------------------------------
    def mcpp(self, json_events: bool = True) -> tuple[float, Counter, dict]:
        """One `mcpp build` (see `run_mcpp`): (seconds, Counter of (kind, status), the
        build-finished event); `self.last_ids` names the actions that were not fresh."""
        r = run_mcpp(self.mcpp_bin, self.mcpp_dir, self.env, self.home, self.jobs, self.extra, json_events)
        self.last_ids = r.ids
        return r.seconds, r.counts, r.done

    def ninja(self) -> tuple[float, Counter]:
        """One `ninja` run: (seconds, Counter of "CXX"/"LINK" lines)."""
        return run_ninja(self.ninja_bin, self.ninja_dir, self.jobs)

    def peer(self) -> float | None:
        """One build by the real mcpp (None without it): seconds. It prints no count of what it
        ran, only a `Compiling` line when it compiled anything: `self.peer_compiled` is 1 or 0."""
        if not self.peer_bin:
            return None
        dt, compiled = run_peer(self.peer_bin, self.peer_dir, self.peer_env, self.jobs)
        self.peer_compiled = int(compiled)
        return dt

    def expect_peer(self, what: str, compiled: bool) -> None:
        if self.peer_bin and self.peer_compiled != compiled:
            raise BenchError(f"{what}: the real mcpp {'compiled nothing' if compiled else 'compiled'}")

    # -- checks ----------------------------------------------------------------------------------
    @staticmethod
    def ran(counts: Counter, kind: str) -> int:
        return counts[(kind, "executed")]

    def expect_mcpp(self, what: str, counts: Counter, compiles: int, links: int | None) -> None:
        c, l = self.ran(counts, "compile"), self.ran(counts, "link")
        if c != compiles or (links is not None and l != links):
            raise BenchError(f"{what}: mcpp ran {c} compiles and {l} links, expected {compiles} and "
                             f"{links}; not fresh: {self.last_ids[:10]}")

    def expect_ninja(self, what: str, counts: Counter, compiles: int, links: int) -> None:
        if counts["CXX"] != compiles or counts["LINK"] != links:
            raise BenchError(f"{what}: ninja ran {counts['CXX']} compiles and {counts['LINK']} links, "
                             f"expected {compiles} and {links}")

    def outputs(self) -> tuple[str, str]:
        a = sh([os.path.join(self.mcpp_dir, "target", "dev", "bench")])
        b = sh([os.path.join(self.ninja_dir, "out", "bench")])
        if not a.startswith("bench:") or a != b:
            raise BenchError(f"binaries differ or failed: mcpp {a!r}, ninja {b!r}")
        if self.peer_bin:
            found = peer_binary(self.peer_dir)
            c = sh([found]) if found else "no binary"
            if c != a:
                raise BenchError(f"the real mcpp's binary differs or failed: {c!r}, mcpp and ninja: {a!r}")
        return a, b

    # -- scenarios: each returns (mcpp seconds, ninja seconds or None, real mcpp's or None) ------------
    def clean(self) -> tuple[float, float, float | None]:
        self.trash.discard(os.path.join(self.mcpp_dir, "target"))
        self.trash.discard(self.home)
        os.makedirs(self.home)
        dt_m, counts, _ = self.mcpp()
        self.expect_mcpp("clean", counts, self.n + 1, 1)
        for p in ("out", ".ninja_log", ".ninja_deps"):
            self.trash.discard(os.path.join(self.ninja_dir, p))
        dt_n, ncounts = self.ninja()
        self.expect_ninja("clean", ncounts, self.n + 1, 1)
        self.trash.discard(os.path.join(self.peer_dir, "target"))
        dt_p = self.peer()
        self.expect_peer("clean", True)
        return dt_m, dt_n, dt_p

    def warm_home(self) -> tuple[float, None, None]:
        self.trash.discard(os.path.join(self.mcpp_dir, "target"))
        dt, counts, _ = self.mcpp()
        done = sum(v for (kind, status), v in counts.items() if kind == "compile" and status != "fresh")
        if done != self.n + 1:
            raise BenchError(f"warm-home rebuild: {done} compiles ran or were restored, expected {self.n + 1}")
        self.notes.append("warm-home rebuild, actions by kind and status: " + ", ".join(
            f"{k} {s} {v}" for (k, s), v in sorted(counts.items(), key=str)))
        return dt, None, None

    def noop(self, json_events: bool) -> tuple[float, float, float | None]:
        dt_m, counts, done = self.mcpp(json_events)
        if done.get("executed") != 0 or done.get("cached", 0) != 0 or done.get("fresh") != self.n + 2:
            raise BenchError(f"no-op: mcpp did work: {done}, {self.last_ids[:10]}")
        dt_n, ncounts = self.ninja()
        self.expect_ninja("no-op", ncounts, 0, 0)
        dt_p = None if json_events else self.peer()  # the real mcpp has one kind of no-op
        if dt_p is not None:
            self.expect_peer("no-op", False)
        return dt_m, dt_n, dt_p

    def touch(self, comment: bool) -> tuple[float, float, float | None]:
        self.edits += 1
        rel = gen_project.source_path(self.n // 2, self.n)
        name = os.path.basename(rel).split(".")[0]
        text = (f"// edit {self.edits}\n" if comment else
                f"unsigned {name}_edit{self.edits}(unsigned x) {{ return x + {self.edits}u; }}\n")
        for d in self.copies():
            with open(os.path.join(d, rel), "a", encoding="utf-8") as f:
                f.write(text)
        what = "touch-one (comment)" if comment else "touch-one"
        dt_m, counts, _ = self.mcpp()
        self.expect_mcpp(what, counts, 1, None if comment else 1)
        if f"compile bench:{rel}" not in self.last_ids:
            raise BenchError(f"{what}: mcpp recompiled {self.last_ids}, not {rel}")
        if comment:
            self.comment_links = self.ran(counts, "link")
        dt_n, ncounts = self.ninja()
        self.expect_ninja(what, ncounts, 1, 1)
        dt_p = self.peer()
        self.expect_peer(what, True)
        return dt_m, dt_n, dt_p

    # -- driver ----------------------------------------------------------------------------------
    def copies(self) -> list[str]:
        return [self.mcpp_dir, self.ninja_dir] + ([self.peer_dir] if self.peer_bin else [])

    def setup(self) -> None:
        self.trash.discard(self.work)
        for d in self.copies():
            gen_project.generate(self.n, d)

    def measure(self, runs: int, clean_runs: int) -> list[tuple[str, list[float], list[float], int]]:
        rows = []

        def series(label: str, fn, k: int, warmup: bool = False):
            if warmup:
                fn()
            m, n, p = [], [], []
            for _ in range(k):
                a, b, c = fn()
                m.append(a)
                if b is not None:
                    n.append(b)
                if c is not None:
                    p.append(c)
            rows.append((label, m, n, p, k))
            print(f"  {label:<45} mcpp {fmt(statistics.median(m))}"
                  + (f"  ninja {fmt(statistics.median(n))}" if n else "")
                  + (f"  real mcpp {fmt(statistics.median(p))}" if p else ""), file=sys.stderr, flush=True)

        series("clean build", self.clean, clean_runs)
        self.output = self.outputs()[0]
        series("rebuild after rm -rf target, warm MCPP_HOME", self.warm_home, clean_runs)
        series("no-op build (`mcpp build`, fast path)", lambda: self.noop(False), runs, warmup=True)
        series("no-op build, --message-format json (full engine)", lambda: self.noop(True), runs, warmup=True)
        series("touch-one rebuild (1 compile + 1 link)", lambda: self.touch(False), runs)
        series("touch-one, comment only", lambda: self.touch(True), runs)
        if self.outputs()[0] != self.output:
            raise BenchError("binary output changed after the edits")
        return rows


def code_fingerprint() -> str:
    """Digest of mcpp's Python sources, to notice the engine changing under a long run."""
    h = hashlib.sha256()
    for top in ("engine", "cas", "sandbox", "starlark_rules"):
        for d, dirs, names in sorted(os.walk(os.path.join(ROOT, top))):
            dirs.sort()
            for name in sorted(names):
                if name.endswith((".py", ".star")):
                    h.update(name.encode())
                    with open(os.path.join(d, name), "rb") as f:
                        h.update(f.read())
    return h.hexdigest()[:12]


def show(text: str, markdown: str | None) -> None:
    """Print a report, and also write it to `markdown` (a `--markdown FILE`) when given."""
    print(text)
    if markdown:
        with open(markdown, "w", encoding="utf-8") as f:
            f.write(text)


def fmt(x: float) -> str:
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def mcpp_interpreter(mcpp: str) -> str:
    """The interpreter `mcpp` runs on: the `#!` line of its Python client (`mcpp-py` beside the
    native client, engine/server/native/client.c; `mcpp` itself where it is that script), else
    this one."""
    beside = os.path.join(os.path.dirname(mcpp), "mcpp-py")
    with open(beside if os.path.exists(beside) else mcpp, "rb") as f:
        first = f.readline().decode(errors="replace")
    return first[2:].strip() if first.startswith("#!") and "python" in first else sys.executable


def machine(mcpp_python: str, ninja_bin: str, mcpp_bin: str) -> list[str]:
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    except OSError:
        pass
    commit = sh(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])
    return [
        f"date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
        f"machine: {len(os.sched_getaffinity(0))} CPUs (nproc), {model}, {platform.system()} {platform.release()}",
        "load average at start: " + " ".join(f"{x:.2f}" for x in os.getloadavg()),
        f"python (mcpp): {sh([mcpp_python, '-c', 'import sys; print(sys.version.split()[0])'])}",
        f"gcc: {sh(['g++', '--version']).splitlines()[0]}",
        f"ninja: {sh([ninja_bin, '--version'])}; mcpp: {sh([mcpp_bin, '--version'])} at commit {commit} "
        "(plus uncommitted changes, if any)",
        f"page cache reclaim: {page_reclaim()}",
    ]


DAMON = "/sys/kernel/mm/damon/admin/kdamonds"


def page_reclaim() -> str:
    """Whether the kernel pages out file pages left unread for a while (DAMON's `pageout`
    scheme): then a run that follows another system's minute-long build reads its own files
    (a store's blobs, the interpreter's modules) from the disk again, which interleaved rows
    pay and grouped ones mostly do not (bench/RESULTS.md, seventh session)."""
    found = []
    try:
        for k in sorted(os.listdir(DAMON)):
            kd = f"{DAMON}/{k}"
            if not os.path.isdir(kd) or _read(f"{kd}/state") != "on":
                continue
            for c in sorted(os.listdir(f"{kd}/contexts")):
                ctx = f"{kd}/contexts/{c}"
                if not os.path.isdir(ctx):
                    continue
                aggr_s = int(_read(f"{ctx}/monitoring_attrs/intervals/aggr_us")) / 1e6
                for sc in sorted(os.listdir(f"{ctx}/schemes")):
                    scheme = f"{ctx}/schemes/{sc}"
                    if os.path.isdir(scheme) and _read(f"{scheme}/action") == "pageout":
                        idle = int(_read(f"{scheme}/access_pattern/age/min")) * aggr_s
                        what = "file pages" if _anon_excluded(scheme) else "memory"
                        found.append(f"DAMON pages out {what} unaccessed for {idle:.0f} s or more")
    except (OSError, ValueError):
        pass
    return "; ".join(found) if found else "none found (no DAMON pageout scheme running)"


def _anon_excluded(scheme: str) -> bool:
    """A filter of the scheme keeps anonymous memory out: only the page cache is paged out."""
    base = f"{scheme}/ops_filters"
    if not os.path.isdir(base):
        return False
    return any(_read(f"{base}/{f}/type") == "anon" and _read(f"{base}/{f}/allow") == "N"
               for f in os.listdir(base) if os.path.isdir(f"{base}/{f}"))


def file_creation(parent: str, files: int = 200) -> tuple[float, str]:
    """The median microseconds a new file takes (created, 100 bytes written, closed) in a new
    directory under `parent`, over `files` of them, and that directory (the caller removes it
    with the trees it moved aside: a deletion here would itself slow the next creations).

    ext4 without a journal (the file system of this project's CI machines) passes over every
    inode of a group freed in the last minute or more, one buffer lookup each, before it creates
    a file there (the kernel's `recently_deleted`). After a large deletion nearby (a `rm -rf` of
    a build tree, a harness's trash, a test suite's temporary directories) a creation costs up to
    twenty times its usual ~20 us for minutes, and a clean mcpp build creates several files per
    action in its store where ninja creates the compiler's: such a run's clean rows say more
    about the deletion than about the build (bench/RESULTS.md, thirtieth session)."""
    d = os.path.join(parent, f"creation-probe-{os.getpid()}-{time.time_ns()}")
    os.mkdir(d)
    took = []
    for i in range(files):
        t = time.perf_counter()
        fd = os.open(os.path.join(d, str(i)), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, b"x" * 100)
        finally:
            os.close(fd)
        took.append(time.perf_counter() - t)
    return statistics.median(took) * 1e6, d


def file_system(path: str) -> str:
    """The file system `path` is on (/proc/self/mountinfo), and for ext4 whether it keeps a
    journal (/sys/fs/ext4/<device>/journal_task says `<none>` where it does not)."""
    path = os.path.realpath(path)
    best = ("", "?", "")
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                fields = line.split()
                point = fields[4].replace("\\040", " ")
                fstype, source = fields[fields.index("-") + 1:][:2]
                inside = path == point or path.startswith(point.rstrip("/") + "/")
                if inside and len(point) >= len(best[0]):
                    best = (point, fstype, source)
    except (OSError, ValueError, IndexError):
        return "?"
    _, fstype, source = best
    if fstype != "ext4":
        return fstype
    try:
        task = _read(f"/sys/fs/ext4/{os.path.basename(source)}/journal_task")
    except OSError:
        return "ext4"
    return "ext4 without a journal" if task == "<none>" else "ext4 with a journal"


def _read(path: str) -> str:
    with open(path) as f:
        return f.read().strip()


def report(b: Bench, rows, args, header: list[str]) -> str:
    def med(xs):
        return statistics.median(xs) if xs else None

    meds = {label: (med(m), med(n), med(p)) for label, m, n, p, _ in rows}
    peer = bool(b.peer_bin)
    out = [f"## Build: mcpp vs ninja{' vs the real mcpp' if peer else ''} ({b.n:,} sources)", ""]
    out += [f"- {h}" for h in header]
    out += [f"- command: `python bench/run_bench.py {' '.join(sys.argv[1:])}`".replace("  ", " "),
            f"- `{' '.join(['mcpp build -j', str(b.jobs), '--message-format json', *b.extra])}`"
            f" vs `ninja -j {b.jobs}`"
            + (f" vs the real mcpp (`{b.peer_bin} build -j {b.jobs} --toolchain path:/usr`, gcc 12, "
               "`MCPP_NINJA_DYNDEP=0`, a copy of the home setup.sh prepared with the host's libgcc_s.so.1 added to "
               "its glibc payload (see `peer_home`); its clean build removes `target/`, the home is its toolchain "
               "registry and is kept)" if peer else "")
            + f"; medians of {args.runs} runs ({args.clean_runs} for the clean and warm-home rows);"
            " the tools' runs interleaved; wall time including process start-up; removed trees are moved "
            "aside and deleted after the last run (`Trash`)",
            "- load average at end: " + " ".join(f"{x:.2f}" for x in os.getloadavg()),
            f"- server memory (`mcpp server status`): {server_memory(b)}",
            f"- binaries of all print: `{b.output}`", ""]
    cols = "| scenario | mcpp median (s) | ninja median (s) | mcpp/ninja |"
    line = "|---|---:|---:|---:|"
    if peer:
        cols += " real mcpp (s) | real/ninja |"
        line += "---:|---:|"
    out += [cols + " runs | mcpp runs (s) | ninja runs (s) |" + (" real mcpp runs (s) |" if peer else ""),
            line + "---:|---|---|" + ("---|" if peer else "")]
    for label, m, n, p, k in rows:
        mm, nn, pp = meds[label]
        row = f"| {label} | {fmt(mm)} | {fmt(nn) if nn else '-'} | {f'{mm / nn:.2f}x' if nn else '-'} |"
        if peer:
            row += f" {fmt(pp) if pp else '-'} | {f'{pp / nn:.2f}x' if pp and nn else '-'} |"
        row += f" {k} | {' '.join(fmt(x) for x in m)} | {' '.join(fmt(x) for x in n) or '-'} |"
        out.append(row + (f" {' '.join(fmt(x) for x in p) or '-'} |" if peer else ""))
    clean_m, clean_n, clean_p = meds["clean build"]
    warm = meds["rebuild after rm -rf target, warm MCPP_HOME"][0]
    noop_m, noop_n, _ = meds["no-op build (`mcpp build`, fast path)"]
    full_noop = meds["no-op build, --message-format json (full engine)"][0]
    edit_m, edit_n, _ = meds["touch-one rebuild (1 compile + 1 link)"]

    def verdict(ok: bool) -> str:
        return "**pass**" if ok else "**FAIL**"

    # The goals of issue "Overhead near zero", by project size.
    clean_goal, edit_goal = (1.05, 1.2) if b.n >= 1000 else (1.10, 1.3)
    goals = [f"clean build <= {clean_goal:.2f}x ninja: {clean_m / clean_n:.2f}x -> {verdict(clean_m <= clean_goal * clean_n)}"]
    if peer and clean_p:
        goals.append(f"clean build below the real mcpp's ratio ({clean_p / clean_n:.2f}x): {clean_m / clean_n:.2f}x "
                     f"-> {verdict(clean_m < clean_p)}")
    goals.append(f"edit-one <= {edit_goal}x ninja: {edit_m / edit_n:.2f}x -> {verdict(edit_m <= edit_goal * edit_n)}")
    if b.n >= 1000:
        goals.append(f"full-engine no-op <= 50 ms: {full_noop * 1000:.0f} ms -> {verdict(full_noop <= 0.05)}")
    else:
        goals.append(f"no-op <= 3x ninja: {noop_m / noop_n:.1f}x -> {verdict(noop_m <= 3 * noop_n)}")
        goals.append(f"rebuild after rm -rf target >= 15x faster than clean: {clean_m / warm:.1f}x "
                     f"-> {verdict(warm * 15 <= clean_m)}")
    out += ["", "Goals:", ""] + [f"- {g}" for g in goals] + ["", "Notes:", ""]
    out += [f"- {n}" for n in dict.fromkeys(b.notes)]
    out.append(f"- comment-only edit: mcpp ran {getattr(b, 'comment_links', '?')} link(s) (the object is "
               "unchanged, so a content-keyed engine may skip it); ninja always relinks")
    return "\n".join(out) + "\n"


def peer_home(peer_bin: str) -> str:
    """A private copy of the home setup.sh prepared (bench/work/peer-home), with the host's
    libgcc_s.so.1 added to its C library payload: setup.sh copies glibc's shared objects only,
    and the real mcpp refuses to link a program that needs libgcc_s (any use of exceptions,
    as the generated project's <string>/<map> headers make) when its private loader cannot
    find it. The copy keeps the shared prepared home untouched."""
    src = os.path.join(os.path.dirname(os.path.dirname(peer_bin)), "home")
    home = os.path.join(BENCH, "work", "peer-home")
    if not os.path.isdir(home):
        shutil.copytree(src, home, symlinks=True)
    libgcc = "/lib/x86_64-linux-gnu/libgcc_s.so.1"
    for lib64 in glob.glob(os.path.join(home, "registry", "data", "xpkgs", "xim-x-glibc", "*", "lib64")):
        if os.path.exists(libgcc) and not os.path.exists(os.path.join(lib64, "libgcc_s.so.1")):
            shutil.copy(libgcc, lib64)
    return home


def server_memory(b: Bench) -> str:
    """The warm build server's resident memory, where there is one: `mcpp server status` names
    its pid (or says its memory); otherwise "n/a". A hook for the server's own figure."""
    p = subprocess.run([b.mcpp_bin, "server", "status"], cwd=b.mcpp_dir, env=b.env,
                       capture_output=True, text=True)
    text = p.stdout + p.stderr
    if p.returncode != 0:
        return "n/a (no `mcpp server status`)"
    m = re.search(r"\bmemory_kb\W+(\d+)", text)  # `mcpp server status` prints `memory_kb: N`
    if m:
        return f"{int(m.group(1)) / 1024:.0f} MiB (`memory_kb` of `mcpp server status`)"
    m = re.search(r"\b(\d+(?:\.\d+)?)\s*(KiB|MiB|GiB|kB|MB|GB)\b", text)
    if m:
        return f"{m.group(1)} {m.group(2)} (as reported)"
    m = re.search(r"\bpid\D{0,3}(\d+)", text)
    if m:
        try:
            with open(f"/proc/{m.group(1)}/status") as f:
                rss = next(l.split(":", 1)[1].strip() for l in f if l.startswith("VmRSS"))
            return f"{rss} RSS of pid {m.group(1)}"
        except (OSError, StopIteration):
            pass
    return f"n/a ({text.strip().splitlines()[0] if text.strip() else 'no figure reported'})"


PROFILE = """\
import cProfile, pstats, sys
sys.argv = ["mcpp", "build", "-j", *sys.argv[1:]]
prof = cProfile.Profile()
prof.enable()
try:
    from mcpp.engine.entry import main
    main()
except SystemExit:
    pass
prof.disable()
stats = pstats.Stats(prof, stream=sys.stdout)
stats.sort_stats("cumulative").print_stats(25)
stats.sort_stats("tottime").print_stats(15)
"""


def profile_noop(b: Bench, python: str) -> None:
    """Profile a no-op `mcpp build` twice: through the fast path, and through the full engine."""
    if not os.path.exists(os.path.join(b.mcpp_dir, "target", "dev", "bench")):
        print(f"building {b.mcpp_dir} first", file=sys.stderr)
        rm(b.work)
        gen_project.generate(b.n, b.mcpp_dir)
        os.makedirs(b.home, exist_ok=True)
    b.mcpp(json_events=False)  # build, or record the fast path
    for label, env in (("fast path", {}), ("full engine, MCPP_NO_FAST_PATH=1", {"MCPP_NO_FAST_PATH": "1"})):
        saved = b.env
        b.env = dict(saved, **env)
        b.mcpp(json_events=False)
        dt, _, done = b.mcpp(json_events=False)
        if done.get("executed") != 0:
            raise BenchError(f"not a no-op: {done}")
        print(f"=== no-op `mcpp build -j {b.jobs}` ({label}): {dt:.3f} s without profiler")
        p = subprocess.run([python, "-c", PROFILE, str(b.jobs), *b.extra], cwd=b.mcpp_dir, env=b.env,
                           capture_output=True, text=True)
        b.env = saved
        print(p.stdout)
        if p.returncode != 0:
            print(p.stderr, file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sources", type=int, default=1000, metavar="N")
    ap.add_argument("--runs", type=int, default=5, help="runs per scenario (median reported)")
    ap.add_argument("--clean-runs", type=int, help="runs of the clean and warm-home rows (default min(runs, 3))")
    ap.add_argument("--jobs", "-j", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="smoke test: N=100, 1 run")
    ap.add_argument("--mcpp", default=os.path.join(ROOT, ".venv", "bin", "mcpp"))
    ap.add_argument("--ninja", default=None, help="default: .venv/bin/ninja, else ninja on PATH")
    ap.add_argument("--mcpp-arg", action="append", default=[], metavar="ARG",
                    help="extra argument for `mcpp build` (repeatable), e.g. --mcpp-arg=--sandbox=off")
    ap.add_argument("--markdown", metavar="FILE", help="also write the report to FILE")
    ap.add_argument("--peer", default=PEER if os.access(PEER, os.X_OK) else None,
                    help="the real mcpp to run side by side (default: the one ../shared/tools/mcpp-peer/setup.sh "
                         "prepared, when present)")
    ap.add_argument("--no-peer", dest="peer", action="store_const", const=None, help="leave the real mcpp out")
    ap.add_argument("--profile-noop", action="store_true", help="profile one mcpp no-op build instead")
    args = ap.parse_args()
    if args.quick:
        args.sources, args.runs = 100, 1
    args.clean_runs = args.clean_runs or min(args.runs, 3)
    venv_ninja = os.path.join(ROOT, ".venv", "bin", "ninja")
    args.ninja = args.ninja or (venv_ninja if os.path.exists(venv_ninja) else shutil.which("ninja") or "ninja")
    python = mcpp_interpreter(args.mcpp)

    b = Bench(args)
    try:
        if args.profile_noop:
            profile_noop(b, python)
            return
        header = machine(python, args.ninja, args.mcpp)
        print("\n".join(header), file=sys.stderr)
        print(f"generating {b.n} sources twice under {b.work}; clean builds: {args.clean_runs} runs, "
              f"others: {args.runs} runs", file=sys.stderr, flush=True)
        b.setup()
        code = code_fingerprint()
        rows = b.measure(args.runs, args.clean_runs)
        if code_fingerprint() != code:
            b.notes.append("**mcpp's sources (engine/, cas/, sandbox/, starlark_rules/) changed during "
                           "the run: the rows may mix versions; rerun**")
    except BenchError as e:
        sys.exit(f"run_bench: {e}")
    finally:
        b.trash.empty()
    show(report(b, rows, args, header), args.markdown)


if __name__ == "__main__":
    main()
