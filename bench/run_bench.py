"""Build times of mcpp against ninja running the same compiler commands on the same project.

    python bench/run_bench.py [--sources N] [--runs 5] [--clean-runs R] [--jobs 2] [--quick]
                              [--markdown FILE] [--profile-noop]

Generates (bench/gen_project.py) two identical copies of an N-source project under
bench/work/nN/ (one built by mcpp, one by ninja; mcpp's cache home is bench/work/nN/mcpp-home)
and times, as the median of several runs interleaved between the two tools:

- clean build: mcpp with no target/ and an empty MCPP_HOME; ninja with no outputs, .ninja_log
  or .ninja_deps. Clean runs default to min(--runs, 3).
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

import gen_project  # noqa: E402


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


class Bench:
    def __init__(self, args: argparse.Namespace):
        self.n, self.jobs, self.extra = args.sources, args.jobs, args.mcpp_arg
        self.mcpp_bin, self.ninja_bin = args.mcpp, args.ninja
        self.work = os.path.join(BENCH, "work", f"n{self.n}")
        self.mcpp_dir = os.path.join(self.work, "mcpp")
        self.ninja_dir = os.path.join(self.work, "ninja")
        self.home = os.path.join(self.work, "mcpp-home")
        self.edits = 0
        # mcpp runs like an installed tool, with bytecode caching: pycs under bench/work/pycache,
        # even where the environment sets PYTHONDONTWRITEBYTECODE.
        self.env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        self.env.update(MCPP_HOME=self.home, PYTHONPYCACHEPREFIX=os.path.join(BENCH, "work", "pycache"))
        self.notes: list[str] = []

    # -- the two tools ---------------------------------------------------------------------------
    def mcpp(self, json_events: bool = True) -> tuple[float, Counter, dict]:
        """One `mcpp build`: (seconds, Counter of (kind, status), the build-finished event).

        Without json_events it is the plain `mcpp build` a user types (human output, the only
        mode with the no-op fast path); its counts then come from MCPP_HOME/last-build.json
        (executed, cache_hits, fresh) and the Counter is empty."""
        fmt = ["--message-format", "json"] if json_events else []
        argv = [self.mcpp_bin, "build", "-j", str(self.jobs), *fmt, *self.extra]
        last = os.path.join(self.home, "last-build.json")
        rm(last)
        t0 = time.perf_counter()
        p = subprocess.run(argv, cwd=self.mcpp_dir, env=self.env, capture_output=True, text=True)
        dt = time.perf_counter() - t0
        if p.returncode != 0:
            raise BenchError(f"mcpp build failed ({p.returncode}):\n{p.stderr[-3000:]}")
        if not json_events:
            with open(last) as f:
                done = json.load(f)
            self.last_ids = []
            return dt, Counter(), dict(done, cached=done.get("cache_hits"))
        events = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
        done = next((e for e in events if e.get("reason") == "build-finished"), {})
        counts = Counter((e.get("kind"), e.get("status")) for e in events if e.get("reason") == "action-finished")
        self.last_ids = [e["id"] for e in events
                         if e.get("reason") == "action-finished" and e.get("status") != "fresh"]
        return dt, counts, done

    def ninja(self) -> tuple[float, Counter]:
        """One `ninja` run: (seconds, Counter of "CXX"/"LINK" lines)."""
        t0 = time.perf_counter()
        p = subprocess.run([self.ninja_bin, "-j", str(self.jobs)], cwd=self.ninja_dir,
                           capture_output=True, text=True)
        dt = time.perf_counter() - t0
        if p.returncode != 0:
            raise BenchError(f"ninja failed ({p.returncode}):\n{p.stdout[-3000:]}")
        counts = Counter(line.split("] ", 1)[1].split()[0] for line in p.stdout.splitlines()
                         if line.startswith("[") and "] " in line)
        return dt, counts

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
        return a, b

    # -- scenarios: each returns (mcpp seconds, ninja seconds or None) ------------------------------
    def clean(self) -> tuple[float, float]:
        rm(os.path.join(self.mcpp_dir, "target"))
        rm(self.home)
        os.makedirs(self.home)
        dt_m, counts, _ = self.mcpp()
        self.expect_mcpp("clean", counts, self.n + 1, 1)
        for p in ("out", ".ninja_log", ".ninja_deps"):
            rm(os.path.join(self.ninja_dir, p))
        dt_n, ncounts = self.ninja()
        self.expect_ninja("clean", ncounts, self.n + 1, 1)
        return dt_m, dt_n

    def warm_home(self) -> tuple[float, None]:
        rm(os.path.join(self.mcpp_dir, "target"))
        dt, counts, _ = self.mcpp()
        done = sum(v for (kind, status), v in counts.items() if kind == "compile" and status != "fresh")
        if done != self.n + 1:
            raise BenchError(f"warm-home rebuild: {done} compiles ran or were restored, expected {self.n + 1}")
        self.notes.append("warm-home rebuild, actions by kind and status: " + ", ".join(
            f"{k} {s} {v}" for (k, s), v in sorted(counts.items(), key=str)))
        return dt, None

    def noop(self, json_events: bool) -> tuple[float, float]:
        dt_m, counts, done = self.mcpp(json_events)
        if done.get("executed") != 0 or done.get("cached", 0) != 0 or done.get("fresh") != self.n + 2:
            raise BenchError(f"no-op: mcpp did work: {done}, {self.last_ids[:10]}")
        dt_n, ncounts = self.ninja()
        self.expect_ninja("no-op", ncounts, 0, 0)
        return dt_m, dt_n

    def touch(self, comment: bool) -> tuple[float, float]:
        self.edits += 1
        rel = gen_project.source_path(self.n // 2, self.n)
        name = os.path.basename(rel).split(".")[0]
        text = (f"// edit {self.edits}\n" if comment else
                f"unsigned {name}_edit{self.edits}(unsigned x) {{ return x + {self.edits}u; }}\n")
        for d in (self.mcpp_dir, self.ninja_dir):
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
        return dt_m, dt_n

    # -- driver ----------------------------------------------------------------------------------
    def setup(self) -> None:
        rm(self.work)
        for d in (self.mcpp_dir, self.ninja_dir):
            gen_project.generate(self.n, d)

    def measure(self, runs: int, clean_runs: int) -> list[tuple[str, list[float], list[float], int]]:
        rows = []

        def series(label: str, fn, k: int, warmup: bool = False):
            if warmup:
                fn()
            m, n = [], []
            for _ in range(k):
                a, b = fn()
                m.append(a)
                if b is not None:
                    n.append(b)
            rows.append((label, m, n, k))
            print(f"  {label:<45} mcpp {fmt(statistics.median(m))}"
                  + (f"  ninja {fmt(statistics.median(n))}" if n else ""), file=sys.stderr, flush=True)

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


def fmt(x: float) -> str:
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


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
    ]


def report(b: Bench, rows, args, header: list[str]) -> str:
    med = {label: (statistics.median(m), statistics.median(n) if n else None) for label, m, n, _ in rows}
    out = [f"## Build: mcpp vs ninja ({b.n:,} sources)", ""]
    out += [f"- {h}" for h in header]
    out += [f"- command: `python bench/run_bench.py {' '.join(sys.argv[1:])}`".replace("  ", " "),
            f"- `{' '.join(['mcpp build -j', str(b.jobs), '--message-format json', *b.extra])}`"
            f" vs `ninja -j {b.jobs}`; medians of {args.runs} runs ({args.clean_runs} for the clean and warm-home rows);"
            " mcpp and ninja runs interleaved; wall time including process start-up",
            "- load average at end: " + " ".join(f"{x:.2f}" for x in os.getloadavg()),
            f"- binaries of both print: `{b.output}`", "",
            "| scenario | mcpp median (s) | ninja median (s) | mcpp/ninja | runs | mcpp runs (s) | ninja runs (s) |",
            "|---|---:|---:|---:|---:|---|---|"]
    for label, m, n, k in rows:
        mm, nn = med[label]
        ratio = f"{mm / nn:.2f}x" if nn else "-"
        out.append(f"| {label} | {fmt(mm)} | {fmt(nn) if nn else '-'} | {ratio} | {k} | "
                   f"{' '.join(fmt(x) for x in m)} | {' '.join(fmt(x) for x in n) or '-'} |")
    clean_m, clean_n = med["clean build"]
    warm = med["rebuild after rm -rf target, warm MCPP_HOME"][0]
    noop_m, noop_n = med["no-op build (`mcpp build`, fast path)"]

    def verdict(ok: bool) -> str:
        return "**pass**" if ok else "**FAIL**"

    out += ["", "Goals:", "",
            f"- issue: no-op < 0.5 s and within 5x of ninja: {fmt(noop_m)} s, {noop_m / noop_n:.1f}x "
            f"-> {verdict(noop_m < 0.5 and noop_m <= 5 * noop_n)}",
            f"- DESIGN: no-op < 0.3 s and within 3x of ninja: {fmt(noop_m)} s, {noop_m / noop_n:.1f}x "
            f"-> {verdict(noop_m < 0.3 and noop_m <= 3 * noop_n)}",
            f"- DESIGN: clean build within 10% of ninja: {(clean_m / clean_n - 1) * 100:+.1f}% "
            f"-> {verdict(clean_m <= 1.10 * clean_n)}",
            f"- rebuild with warm MCPP_HOME at least 10x faster than clean: {clean_m / warm:.2f}x "
            f"-> {verdict(warm * 10 <= clean_m)}",
            "", "Notes:", ""]
    out += [f"- {n}" for n in dict.fromkeys(b.notes)]
    out.append(f"- comment-only edit: mcpp ran {getattr(b, 'comment_links', '?')} link(s) (the object is "
               "unchanged, so a content-keyed engine may skip it); ninja always relinks")
    return "\n".join(out) + "\n"


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
    ap.add_argument("--profile-noop", action="store_true", help="profile one mcpp no-op build instead")
    args = ap.parse_args()
    if args.quick:
        args.sources, args.runs = 100, 1
    args.clean_runs = args.clean_runs or min(args.runs, 3)
    venv_ninja = os.path.join(ROOT, ".venv", "bin", "ninja")
    args.ninja = args.ninja or (venv_ninja if os.path.exists(venv_ninja) else shutil.which("ninja") or "ninja")
    with open(args.mcpp, "rb") as f:  # mcpp's interpreter, from its console-script shebang
        first = f.readline().decode(errors="replace")
    python = first[2:].strip() if first.startswith("#!") and "python" in first else sys.executable

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
    text = report(b, rows, args, header)
    print(text)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main()
