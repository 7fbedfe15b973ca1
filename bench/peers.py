"""ninja, the real mcpp and this mcpp side by side on one generated project: one table per run.

    python bench/peers.py N [--light] [--runs 5] [--clean-runs R] [--systems ninja,mcpp,peer]
                          [--order grouped|interleaved|both] [--markdown FILE] [--results FILE | --no-results]

(`bash bench/peers.sh N ...` runs it with mcpp installed as a user installs it.) It generates
(bench/gen_project.py) one copy of an N-unit project per system under bench/work/peers-nN[-light]/
and times, with `sync` before every timed run, the rows of issue 38's goals table:

- clean: ninja with no outputs or logs; mcpp with no target/ and an empty MCPP_HOME; the real mcpp
  with no target/ (its home is its toolchain registry and holds no objects, so it is kept);
- edit-one: a new function appended to one unit: exactly that compile and the link must run;
- no-op, after one untimed no-op: the plain `mcpp build` (its fast path) and, for mcpp only, the
  full engine (`--message-format json`); nothing may run;
- rebuild after `rm -rf target` (mcpp and the real mcpp), home kept: mcpp must restore every
  compile from its cache and execute none;
- cold start: the time from the command to the first compile of mcpp's clean builds, read from
  their `--trace` file (its "command-start" instant event; "n/a" where the trace has none), and
  the wall time of a first build of a one-unit project with an empty home against a warm one.
  Before anything is timed, one such first build (untimed) writes mcpp's bytecode where its runs
  read it, as pip's install does for a user's.

Orders (`--order`): grouped (each system's runs of a row together: ninja's five clean builds, then
mcpp's, ...) and interleaved (round after round of every row, each row one system after the
other), so that each system is measured both in its best conditions and between the others'
work. Medians per row, order and system; the goals of the nearest row of the issue's table
(300, 1,000 or 10,000 light units) are checked in every order that ran. The report (Markdown)
is printed, written to --markdown FILE, and inserted as the newest section of --results FILE
(default bench/RESULTS.md). What a run removes is moved aside and deleted at the end
(run_bench.Trash). Before the first timed build the harness waits, at most `--settle` seconds
(default 360), until a new file beside the builds' trees costs under 60 us: on ext4 without a
journal a creation after a large deletion nearby (the last run's trash, a reinstall, a test
suite) costs up to twenty times that for minutes (run_bench.file_creation), and mcpp's clean
builds create several store files per action; the header says what it met at the start and the
end, and how long it waited. Standard library only.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from typing import NamedTuple

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)

import gen_project  # noqa: E402
import run_bench  # noqa: E402
from run_bench import BenchError  # noqa: E402

SCENARIOS = ("clean", "rebuild", "noop", "noop_full", "edit")
LABELS = {
    "clean": "clean build",
    "edit": "edit-one (1 compile + 1 link)",
    "noop": "no-op (`build`)",
    "noop_full": "no-op, full engine (`--message-format json`)",
    "rebuild": "rebuild after `rm -rf target`",
}
ROW_ORDER = ("clean", "edit", "noop", "noop_full", "rebuild")
SYSTEMS = ("ninja", "peer", "mcpp")
NAMES = {"ninja": "ninja", "peer": "real mcpp", "mcpp": "mcpp"}
ORDERS = ("grouped", "interleaved")


class Goals(NamedTuple):
    """One row of issue 38's goals table."""
    tier: str
    clean: float  # at most this many times ninja's clean build
    edit: float  # at most this many times ninja's edit-one
    noop_kind: str  # "ratio": the plain no-op against ninja's; "ms": an absolute bound
    noop_row: str  # which no-op row the bound applies to (noop or noop_full)
    noop_bound: float  # times ninja's, or milliseconds
    rebuild: float  # the rebuild after rm -rf target at least this many times faster than clean


GOALS = {
    "300": Goals("300", 1.10, 1.1, "ratio", "noop", 3.0, 15.0),
    "1,000": Goals("1,000", 1.05, 1.2, "ms", "noop_full", 50.0, 20.0),
    "10,000 light": Goals("10,000 light", 1.05, 1.2, "ms", "noop", 100.0, 20.0),
}
COLD_START_S = 0.100  # the issue: the first compile starts within 100 ms of the command


# -- the pure parts: medians, ratios, goals, the table (tests/unit/test_bench_peers.py) ------------
def tier(n: int, light: bool) -> Goals:
    """The goals row nearest to an N-unit project: light units are the 10,000 row's kind."""
    if light:
        return GOALS["10,000 light"]
    return GOALS["1,000"] if n >= 1000 else GOALS["300"]


def median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def medians(runs: dict) -> dict:
    """runs[order][row][system] = [seconds] -> the same nesting with each list's median."""
    return {o: {r: {s: median(xs) for s, xs in by_sys.items() if xs} for r, by_sys in rows.items()}
            for o, rows in runs.items()}


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def noop_figure(g: Goals, med_order: dict, system: str) -> float | None:
    """The figure a no-op goal bounds: the ratio to ninja's no-op, or milliseconds. The real mcpp
    has one kind of no-op: its figure is its plain no-op's."""
    row = g.noop_row if system == "mcpp" else "noop"
    mine = med_order.get(row, {}).get(system)
    if g.noop_kind == "ratio":
        return ratio(mine, med_order.get("noop", {}).get("ninja"))
    return None if mine is None else mine * 1000


def goal_lines(g: Goals, med: dict, cold_delay: float | None) -> list[tuple[str, bool | None]]:
    """(line, met) for every goal, over every order that ran; met None: not measured."""
    out: list[tuple[str, bool | None]] = []

    def verdict(name: str, fig, ok, peer_fig=None, unit: str = "x") -> None:
        def show(v: float) -> str:
            return f"{v:.0f} ms" if unit == "ms" else f"{v:.2f}x"

        parts = []
        oks = []
        for o in med:
            v = fig(med[o])
            if v is None:
                parts.append(f"{o} n/a")
                oks.append(None)
            else:
                p = peer_fig(med[o]) if peer_fig else None
                parts.append(f"{o} {show(v)}" + (f" (real mcpp {show(p)})" if p is not None else ""))
                oks.append(ok(v, p))
        met = None if None in oks or not oks else all(oks)
        out.append((f"{name}: " + ", ".join(parts), met))

    def ninja_ratio(row: str, system: str):
        return lambda m: ratio(m.get(row, {}).get(system), m.get(row, {}).get("ninja"))

    def speedup(system: str):
        return lambda m: ratio(m.get("clean", {}).get(system), m.get("rebuild", {}).get(system))

    has_peer = any("peer" in rows.get("clean", {}) for rows in med.values())
    verdict(f"clean <= {g.clean:.2f}x ninja", ninja_ratio("clean", "mcpp"), lambda v, p: v <= g.clean)
    verdict(f"edit-one <= {g.edit:.2f}x ninja", ninja_ratio("edit", "mcpp"), lambda v, p: v <= g.edit)
    noop_name = ("no-op <= {:.0f}x ninja" if g.noop_kind == "ratio" else
                 ("full-engine no-op" if g.noop_row == "noop_full" else "no-op") + " <= {:.0f} ms").format(g.noop_bound)
    noop_unit = "x" if g.noop_kind == "ratio" else "ms"
    verdict(noop_name, lambda m: noop_figure(g, m, "mcpp"), lambda v, p: v <= g.noop_bound, unit=noop_unit)
    verdict(f"rebuild after rm -rf target >= {g.rebuild:.0f}x faster than clean", speedup("mcpp"),
            lambda v, p: v >= g.rebuild)
    if has_peer:
        verdict("clean below the real mcpp's ratio", ninja_ratio("clean", "mcpp"), lambda v, p: p is not None and v < p,
                ninja_ratio("clean", "peer"))
        verdict("edit-one below the real mcpp's ratio", ninja_ratio("edit", "mcpp"), lambda v, p: p is not None and v < p,
                ninja_ratio("edit", "peer"))
        verdict(f"{noop_name.split(' <=')[0]} below the real mcpp's", lambda m: noop_figure(g, m, "mcpp"),
                lambda v, p: p is not None and v < p, lambda m: noop_figure(g, m, "peer"), unit=noop_unit)
        verdict("rebuild speed-up above the real mcpp's", speedup("mcpp"), lambda v, p: p is not None and v > p,
                speedup("peer"))
    if cold_delay is None:
        out.append((f"cold start: first compile within {COLD_START_S * 1000:.0f} ms of the command: n/a "
                    "(no \"command-start\" event in the trace)", None))
    else:
        out.append((f"cold start: first compile within {COLD_START_S * 1000:.0f} ms of the command: "
                    f"{cold_delay * 1000:.0f} ms", cold_delay <= COLD_START_S))
    return out


def seconds(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x * 1000:.0f} ms" if x < 1 else f"{x:.2f} s" if x < 100 else f"{x:.0f} s"


def times(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def table(med: dict, systems: list[str]) -> list[str]:
    """One row per goal row and order: each system's median, and its ratio to ninja (for the
    rebuild row: how many times faster than its own clean build; the full-engine no-op is set
    against ninja's no-op)."""
    others = [s for s in SYSTEMS if s in systems and s != "ninja"]
    head = "| row | order | ninja |" + "".join(f" {NAMES[s]} | {NAMES[s]} / ninja |" for s in others)
    out = [head, "|---|---|---:|" + "---:|---:|" * len(others)]
    for row in ROW_ORDER:
        for order, rows in med.items():
            by_sys = rows.get(row, {})
            if not by_sys:
                continue
            ninja = rows.get("noop", {}).get("ninja") if row == "noop_full" else by_sys.get("ninja")
            line = f"| {LABELS[row]} | {order} | {seconds(ninja)} |"
            for s in others:
                if row == "rebuild":
                    speed = ratio(rows.get("clean", {}).get(s), by_sys.get(s))
                    rel = "-" if speed is None else f"{speed:.1f}x faster than clean"
                else:
                    rel = times(ratio(by_sys.get(s), ninja))
                line += f" {seconds(by_sys.get(s))} | {rel} |"
            out.append(line)
    return out


def runs_table(runs: dict) -> list[str]:
    """Every timed run, for judging the spread behind each median."""
    out = ["| row | order | system | runs (s) |", "|---|---|---|---|"]
    for row in ROW_ORDER:
        for order, rows in runs.items():
            for s in SYSTEMS:
                xs = rows.get(row, {}).get(s)
                if xs:
                    out.append(f"| {LABELS[row]} | {order} | {NAMES[s]} | {' '.join(f'{x:.3f}' for x in xs)} |")
    return out


def trace_events(trace) -> list:
    """The events of a trace as `--trace` writes it (an object with "traceEvents"), or a bare list."""
    return trace.get("traceEvents", []) if isinstance(trace, dict) else trace


def command_origin(events: list, launched: float | None) -> float | None:
    """The `ts` (microseconds) the delays count from: the harness's launch of the command where
    it timed it (`launched`, a `time.time()` value) and the trace says its 0 on the wall clock
    (`command-start`'s `unix_time`: the process's start as the kernel counts it, truncated to a
    clock tick, so up to 10 ms early); else the "command-start" instant; None without it."""
    start = next((e for e in events if e.get("name") == "command-start"), None)
    if start is None or "ts" not in start:
        return None
    wall = (start.get("args") or {}).get("unix_time")
    if launched is not None and isinstance(wall, (int, float)):
        return start["ts"] - (wall - launched) * 1e6
    return start["ts"]


def first_compile_delay(trace, launched: float | None = None) -> float | None:
    """Seconds from the command (its launch where `launched` says when: `command_origin`) to
    the start of its first compile that was not fresh; None when either is missing."""
    events = trace_events(trace)
    start = command_origin(events, launched)
    compiles = [e["ts"] for e in events if e.get("ph") == "X" and e.get("cat") == "compile" and "ts" in e
                and (e.get("args") or {}).get("status") != "fresh"]
    if start is None or not compiles:
        return None
    return (min(compiles) - start) / 1e6


def trace_marks(trace, launched: float | None = None) -> dict[str, float]:
    """Seconds from the command (`command_origin`) to each of the trace's other instant events
    (such as "build-start", "actions-start") and to its first compile that ran ("first
    compile"); empty without a "command-start"."""
    events = trace_events(trace)
    start = command_origin(events, launched)
    if start is None:
        return {}
    out = {e["name"]: (e["ts"] - start) / 1e6 for e in events
           if e.get("ph") in ("i", "I") and "ts" in e and e.get("name") != "command-start"}
    first = first_compile_delay(trace, launched)
    if first is not None:
        out["first compile"] = first
    return out


def trace_split(trace, seconds: float) -> dict[str, float]:
    """Where one edit-one build's wall time went, from its trace: the compile and the link that
    ran (their durations, seconds) and the rest of `seconds` (the engine's own time, the command's
    start and exit). Empty without both."""
    events = trace_events(trace)
    ran = {e.get("cat"): e for e in events if e.get("ph") == "X" and "dur" in e
           and (e.get("args") or {}).get("status") == "executed"}
    if "compile" not in ran or "link" not in ran:
        return {}
    split = {k: ran[k]["dur"] / 1e6 for k in ("compile", "link")}
    split["rest"] = seconds - split["compile"] - split["link"]
    staged = ran["link"]["args"].get("staged_ms")
    if staged is not None:  # the link's span until its process started: the engine's staging
        split["link staging"] = staged / 1e3
    return split


def ninja_log_split(text: str, seconds: float) -> dict[str, float]:
    """`trace_split` for ninja, from its `.ninja_log` (tab-separated start and end in milliseconds,
    mtime, output): the last build's compile (an object) and link (`out/bench`), and the rest
    (its links stage nothing)."""
    last: dict[str, float] = {}
    for line in text.splitlines():
        f = line.split("\t")
        if len(f) >= 4 and not line.startswith("#"):
            last["link" if f[3] == "out/bench" else "compile"] = (int(f[1]) - int(f[0])) / 1000
    if len(last) < 2:
        return {}
    return {**last, "rest": seconds - last["compile"] - last["link"]}


def split_lines(splits: dict) -> list[str]:
    """The edit-one rows taken apart (`--trace-edits`): per order and system, the medians of the
    compile, the link and the rest, then every run's."""
    out = []
    for order, by_system in splits.items():
        for system, runs in by_system.items():
            if not runs:
                continue
            med = {k: median([r[k] for r in runs]) for k in ("compile", "link", "rest")}
            each = " / ".join(f"{r['compile'] * 1000:.0f}+{r['link'] * 1000:.0f}+{r['rest'] * 1000:.0f}" for r in runs)
            staging = [r["link staging"] for r in runs if "link staging" in r]
            of_which = (f" (its staging {seconds(median(staging))}: "
                        + " ".join(f"{x * 1000:.0f}" for x in staging) + " ms)") if len(staging) == len(runs) else ""
            out.append(f"- {order}, {NAMES[system]}: compile {seconds(med['compile'])}, link {seconds(med['link'])}"
                       f"{of_which}, the rest {seconds(med['rest'])} (each run, ms, compile+link+rest: {each})")
    return out


def normalized_flags(argv: list[str]) -> list[str]:
    """A compile command with what legitimately differs between mcpp's and ninja's removed: the
    compiler's directory, the output and depfile paths (`-o X`, `-MF X`), and the workspace's
    path in `-ffile-prefix-map=<workspace>=.` (ninja's is `$PWD`, which its shell expands)."""
    out = [os.path.basename(argv[0])] if argv else []
    skip = False
    for a in argv[1:]:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF"):
            skip = True
            out.append(a)
            continue
        out.append(re.sub(r"^-ffile-prefix-map=.*=\.$", "-ffile-prefix-map=<workspace>=.", a))
    return out


def insert_section(text: str, section: str) -> str:
    """RESULTS.md with `section` as its newest section: before the first `## ` heading."""
    lines = text.splitlines(keepends=True)
    at = next((i for i, line in enumerate(lines) if line.startswith("## ")), len(lines))
    head = "".join(lines[:at])
    if head and not head.endswith("\n\n"):
        head += "\n" if head.endswith("\n") else "\n\n"
    return head + section.rstrip("\n") + "\n\n" + "".join(lines[at:])


# -- the systems -----------------------------------------------------------------------------------
class System:
    """One build system on its own copy of the project: what each row does before its timed run
    (untimed), and the timed run itself with the check that it did what the row says."""
    name = ""
    rows: tuple[str, ...] = ()

    def __init__(self, h: "Harness") -> None:
        self.h = h
        self.dir = os.path.join(h.work, self.name)
        self.edits = 0

    def before(self, row: str) -> None:
        if row == "edit":
            self.edits += 1
            self.h.edit(self.dir, self.edits)
        elif row in ("noop", "noop_full"):
            self.run(row)  # untimed: the tree is checked and up to date, as after a user's build

    def run(self, row: str) -> float:
        raise NotImplementedError

    def binary(self) -> str | None:
        raise NotImplementedError

    def edit_split(self, seconds: float) -> dict[str, float]:
        """Where the edit-one build just timed went (`trace_split`); empty: not known for this system."""
        return {}


class Ninja(System):
    name = "ninja"
    rows = ("clean", "noop", "edit")

    def before(self, row: str) -> None:
        if row == "clean":
            for p in ("out", ".ninja_log", ".ninja_deps"):
                self.h.trash.discard(os.path.join(self.dir, p))
        super().before(row)

    def run(self, row: str) -> float:
        dt, counts = run_bench.run_ninja(self.h.ninja_bin, self.dir, self.h.jobs)
        want = {"clean": (self.h.n + 1, 1), "noop": (0, 0), "edit": (1, 1)}[row]
        if (counts["CXX"], counts["LINK"]) != want:
            raise BenchError(f"{row}: ninja ran {counts['CXX']} compiles and {counts['LINK']} links, expected "
                             f"{want[0]} and {want[1]}")
        return dt

    def binary(self) -> str | None:
        return os.path.join(self.dir, "out", "bench")

    def edit_split(self, seconds: float) -> dict[str, float]:
        with open(os.path.join(self.dir, ".ninja_log"), encoding="utf-8") as f:
            return ninja_log_split(f.read(), seconds)


class Peer(System):
    """The real mcpp: it prints no counts, only a `Compiling` line when it compiled anything."""
    name = "peer"
    rows = ("clean", "rebuild", "noop", "edit")

    def before(self, row: str) -> None:
        if row in ("clean", "rebuild"):  # its home keeps no objects: both remove target/ only
            self.h.trash.discard(os.path.join(self.dir, "target"))
        super().before(row)

    def run(self, row: str) -> float:
        dt, compiled = run_bench.run_peer(self.h.peer_bin, self.dir, self.h.peer_env, self.h.jobs)
        if compiled != (row != "noop"):
            raise BenchError(f"{row}: the real mcpp {'compiled nothing' if not compiled else 'compiled'}")
        return dt

    def binary(self) -> str | None:
        return run_bench.peer_binary(self.dir)


class Mcpp(System):
    name = "mcpp"
    rows = SCENARIOS

    def __init__(self, h: "Harness") -> None:
        super().__init__(h)
        self.home = os.path.join(h.work, "mcpp-home")
        self.env = run_bench.mcpp_env(self.home)
        self.traces = os.path.join(h.work, "traces")
        self.delays: list[float | None] = []  # command -> first compile of each clean build
        self.marks: list[dict[str, float]] = []  # each clean build's trace_marks
        self.restored: Counter = Counter()  # the rebuild rows' actions by (kind, status)
        self.edit_trace = ""  # the last edit-one build's trace (--trace-edits)

    def before(self, row: str) -> None:
        if row == "clean":
            self.h.stop_server(self.dir, self.env)
            self.h.trash.discard(os.path.join(self.dir, "target"))
            self.h.trash.discard(self.home)
            os.makedirs(self.home)
        elif row == "rebuild":
            self.h.trash.discard(os.path.join(self.dir, "target"))
        super().before(row)

    def run(self, row: str) -> float:
        n = self.h.n
        if row == "noop":
            r = self.build(json_events=False)
        elif row == "clean":
            os.makedirs(self.traces, exist_ok=True)
            trace = os.path.join(self.traces, f"clean-{len(self.delays)}.json")
            r = self.build(extra=("--trace", trace))
            with open(trace) as f:
                self.marks.append(trace_marks(json.load(f), r.launched))
            self.delays.append(self.marks[-1].get("first compile"))
        elif row == "edit" and self.h.trace_edits:
            os.makedirs(self.traces, exist_ok=True)
            self.edit_trace = os.path.join(self.traces, f"edit-{self.edits}.json")
            r = self.build(extra=("--trace", self.edit_trace))
        else:
            r = self.build()
        ran = (r.counts[("compile", "executed")], r.counts[("link", "executed")])
        if row == "clean" and ran != (n + 1, 1):
            raise BenchError(f"clean: mcpp ran {ran[0]} compiles and {ran[1]} links, expected {n + 1} and 1")
        if row == "edit":
            rel = gen_project.source_path(n // 2, n)
            if ran != (1, 1) or f"compile bench:{rel}" not in r.ids:
                raise BenchError(f"edit-one: mcpp ran {ran[0]} compiles and {ran[1]} links ({r.ids[:10]}), "
                                 f"expected the compile of {rel} and the link")
        if row == "rebuild":
            restored = sum(v for (kind, status), v in r.counts.items() if kind == "compile" and status != "fresh")
            if ran[0] != 0 or restored != n + 1:
                raise BenchError(f"rebuild after rm -rf target: mcpp executed {ran[0]} compiles and restored "
                                 f"{restored - ran[0]}, expected {n + 1} restored and none executed")
            self.restored.update(r.counts)
        if row in ("noop", "noop_full"):
            d = r.done
            if d.get("executed") != 0 or d.get("cached", 0) != 0 or d.get("fresh") != n + 2:
                raise BenchError(f"{row}: mcpp did work: {d}, {r.ids[:10]}")
        return r.seconds

    def build(self, json_events: bool = True, extra: tuple = ()) -> run_bench.McppRun:
        return run_bench.run_mcpp(self.h.mcpp_bin, self.dir, self.env, self.home, self.h.jobs,
                                  (*self.h.extra, *extra), json_events)

    def binary(self) -> str | None:
        return os.path.join(self.dir, "target", "dev", "bench")

    def edit_split(self, seconds: float) -> dict[str, float]:
        with open(self.edit_trace, encoding="utf-8") as f:
            return trace_split(json.load(f), seconds)


class Harness:
    def __init__(self, args: argparse.Namespace) -> None:
        self.n, self.light, self.jobs, self.extra = args.units, args.light, args.jobs, args.mcpp_arg
        self.trace_edits = args.trace_edits
        self.splits: dict = {}  # {order: {system: [edit_split of each edit-one run]}} (--trace-edits)
        self.mcpp_bin, self.ninja_bin, self.peer_bin = args.mcpp, args.ninja, args.peer
        self.work = os.path.join(BENCH, "work", f"peers-n{self.n}" + ("-light" if self.light else ""))
        self.trash = run_bench.Trash(os.path.join(BENCH, "work", "trash"))
        self.peer_env = run_bench.peer_env(self.peer_bin) if self.peer_bin else None
        kinds = {"ninja": Ninja, "peer": Peer, "mcpp": Mcpp}
        self.systems: list[System] = [kinds[s](self) for s in args.systems]
        self.output = ""
        self.started = datetime.datetime.now()

    def setup(self) -> None:
        self.trash.discard(self.work)
        for s in self.systems:
            gen_project.generate(self.n, s.dir, self.light)
        if any(isinstance(s, Mcpp) for s in self.systems):
            # Untimed: mcpp's bytecode, where its timed runs read it. An installed mcpp's first
            # command reads what pip compiled at install; the harness's runs read theirs from
            # bench/work/pycache (run_bench.mcpp_env), stale after each reinstall, so without this
            # the first timed build compiled every module it imported (0.4-1.7 s before its first
            # compile). One first build with its server up (which imports the rest) writes it all.
            self.cold(1)

    def edit(self, d: str, k: int) -> None:
        """Append the k-th new function to the middle unit of copy `d`: its object changes."""
        rel = gen_project.source_path(self.n // 2, self.n)
        name = os.path.basename(rel).split(".")[0]
        with open(os.path.join(d, rel), "a", encoding="utf-8") as f:
            f.write(f"unsigned {name}_edit{k}(unsigned x) {{ return x + {k}u; }}\n")

    def stop_server(self, cwd: str, env: dict) -> None:
        """Stop mcpp's warm server for this workspace and home, if one runs (untimed): a home
        about to be moved aside leaves no server behind to compete with the next build."""
        if os.path.isdir(env["MCPP_HOME"]):
            subprocess.run([self.mcpp_bin, "server", "stop"], cwd=cwd, env=env, capture_output=True)

    def await_server(self, cwd: str, env: dict, timeout: float = 10.0) -> None:
        """Wait (untimed) until mcpp's server for this workspace and home listens: the first
        command that finds none starts one when it is done, and the server imports the engine
        after that (docs/server.md); a build launched before then builds in process."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = subprocess.run([self.mcpp_bin, "server", "status"], cwd=cwd, env=env, capture_output=True,
                                    text=True)
            if status.returncode == 0 and not status.stdout.startswith("no server"):
                return
            time.sleep(0.05)
        raise BenchError(f"mcpp's server for {cwd} did not listen within {timeout:.0f} s")

    def timed(self, system: System, row: str, into: dict, order: str = "") -> None:
        system.before(row)
        os.sync()
        dt = system.run(row)
        into.setdefault(row, {}).setdefault(system.name, []).append(dt)
        if row == "edit" and self.trace_edits:
            split = system.edit_split(dt)
            if split:
                self.splits.setdefault(order, {}).setdefault(system.name, []).append(split)

    def order(self, order: str, runs: int, clean_runs: int) -> dict:
        """Every row for every system in one order: {row: {system: [seconds]}}."""
        out: dict = {}
        k = {row: clean_runs if row in ("clean", "rebuild") else runs for row in SCENARIOS}
        if order == "grouped":
            for s in self.systems:
                for row in SCENARIOS:
                    if row in s.rows:
                        for _ in range(k[row]):
                            self.timed(s, row, out, order)
                        progress(order, row, s.name, out)
        else:
            for i in range(max(k.values())):
                for row in SCENARIOS:
                    if i < k[row]:
                        for s in self.systems:
                            if row in s.rows:
                                self.timed(s, row, out, order)
                print(f"  {order}: round {i + 1} done", file=sys.stderr, flush=True)
        self.check_binaries()
        if any(isinstance(s, Mcpp) for s in self.systems):
            self.check_flags()
        return out

    def check_flags(self) -> None:
        """ninja's compile of the middle unit runs the command mcpp's compile_commands.json states
        for it, up to paths (`normalized_flags`): the harness compares like with like."""
        rel = gen_project.source_path(self.n // 2, self.n)
        mcpp = next(s for s in self.systems if isinstance(s, Mcpp))
        ninja = next(s for s in self.systems if isinstance(s, Ninja))
        try:
            with open(os.path.join(mcpp.dir, "target", "compile_commands.json"), encoding="utf-8") as f:
                entry = next(e for e in json.load(f) if e.get("file", "").endswith(rel))
            theirs = entry.get("arguments") or shlex.split(entry["command"])
            p = subprocess.run([self.ninja_bin, "-t", "commands", f"out/obj/{rel}.o"], cwd=ninja.dir,
                               capture_output=True, text=True, check=True)
            ours = shlex.split(p.stdout.strip().splitlines()[-1])
        except (OSError, ValueError, KeyError, IndexError, StopIteration, subprocess.CalledProcessError) as e:
            raise BenchError(f"cannot compare ninja's compile of {rel} with mcpp's "
                             f"(target/compile_commands.json, `ninja -t commands`): {e!r}") from None
        if normalized_flags(theirs) != normalized_flags(ours):
            raise BenchError(f"ninja's compile of {rel} is not mcpp's:\n  mcpp:  {' '.join(theirs)}\n"
                             f"  ninja: {' '.join(ours)}")

    def check_binaries(self) -> None:
        """Every system's binary prints the same line, the same as at the first check."""
        got = {s.name: run_bench.sh([b]) if (b := s.binary()) and os.path.exists(b) else "no binary"
               for s in self.systems}
        first = next(iter(got.values()))
        if not first.startswith("bench:") or any(v != first for v in got.values()) or (
                self.output and first != self.output):
            raise BenchError(f"the binaries differ or failed: {got}")
        self.output = first

    def cold(self, runs: int) -> dict:
        """mcpp's first build of a one-unit project, with an empty home and with a warm one (the
        previous build's home and the server it started, waited for until it listens): each unit
        gets a new comment first, so every compile runs either way. {"empty"|"warm": [(seconds,
        command -> first compile or None)]}."""
        d = os.path.join(self.work, "cold")
        home = os.path.join(self.work, "cold-home")
        env = run_bench.mcpp_env(home)
        gen_project.generate(1, d, self.light)
        out: dict = {"empty": [], "warm": []}
        for i in range(runs):
            for mode in ("empty", "warm"):
                if mode == "empty":
                    self.stop_server(d, env)
                    self.trash.discard(home)
                    os.makedirs(home)
                else:  # the server the empty-home build started, listening
                    self.await_server(d, env)
                self.trash.discard(os.path.join(d, "target"))
                for rel in ("src/main.cpp", gen_project.source_path(0, 1)):
                    with open(os.path.join(d, rel), "a", encoding="utf-8") as f:
                        f.write(f"// cold start {i} {mode}\n")
                trace = os.path.join(self.work, "traces", f"cold-{i}-{mode}.json")
                os.makedirs(os.path.dirname(trace), exist_ok=True)
                os.sync()
                r = run_bench.run_mcpp(self.mcpp_bin, d, env, home, self.jobs, (*self.extra, "--trace", trace))
                if r.counts[("compile", "executed")] != 2:
                    raise BenchError(f"cold start ({mode} home): mcpp ran {r.counts} compiles, expected 2")
                with open(trace) as f:
                    out[mode].append((r.seconds, first_compile_delay(json.load(f), r.launched)))
        self.stop_server(d, env)
        return out


def progress(order: str, row: str, system: str, out: dict) -> None:
    xs = out.get(row, {}).get(system, [])
    print(f"  {order}: {LABELS[row]}, {NAMES[system]}: median {seconds(median(xs))}", file=sys.stderr, flush=True)


def cold_lines(cold: dict | None, delays: list[float | None],
               marks: list[dict[str, float]] = ()) -> tuple[list[str], float | None]:
    """The cold-start rows, and the figure its goal is checked on: the median delay of the clean
    builds (an empty home at N units) where their traces have one."""
    got = [d for d in delays if d is not None]
    delay = median(got) if got and len(got) == len(delays) else None
    out = [f"- command -> first compile, mcpp's clean builds (empty home, N units, `--trace`): "
           + (f"median {seconds(delay)} (runs: {' '.join(f'{d * 1000:.0f}' for d in got)} ms)" if delay is not None
              else "n/a (no \"command-start\" event in the trace)")]
    names = [n for n in dict.fromkeys(k for m in marks for k in m) if n != "first compile"]
    if names:
        out.append("- the same builds' other instants after the command (medians): " + ", ".join(
            f"{n} {seconds(median([m[n] for m in marks if n in m]))}" for n in names))
    if cold:
        for mode in ("empty", "warm"):
            walls = [w for w, _ in cold[mode]]
            ds = [d for _, d in cold[mode] if d is not None]
            out.append(f"- first build of a one-unit project, {mode} home: wall median {seconds(median(walls))} "
                       f"({' '.join(f'{w:.3f}' for w in walls)} s); command -> first compile: "
                       + (f"{seconds(median(ds))}" if len(ds) == len(walls) else "n/a"))
        empty, warm = median([w for w, _ in cold["empty"]]), median([w for w, _ in cold["warm"]])
        out.append(f"- what an empty home costs a first build: {seconds(empty - warm)}")
    return out, delay


def header(args: argparse.Namespace, python: str) -> list[str]:
    lines = run_bench.machine(python, args.ninja, args.mcpp)
    if args.peer and "peer" in args.systems:
        lines.append(f"real mcpp: {run_bench.sh([args.peer, '--version'])} ({args.peer})")
    return lines


def report(h: Harness, args, head: list[str], runs: dict, cold: dict | None, load_end: str, notes: list[str]) -> str:
    med = medians(runs)
    g = tier(h.n, h.light)
    mcpp = next((s for s in h.systems if isinstance(s, Mcpp)), None)
    cold_text, delay = cold_lines(cold, mcpp.delays if mcpp else [], mcpp.marks if mcpp else [])
    units = f"{h.n:,}{' light' if h.light else ''} units"
    span = f"{h.started:%Y-%m-%d %H:%M}-{datetime.datetime.now():%H:%M}"
    out = [f"## Peers: {' vs '.join(NAMES[s.name] for s in h.systems)}, {units} (`bench/peers.py`, {span})", ""]
    out += [f"- {line}" for line in head]
    out += [f"- load average at end: {load_end}",
            f"- command: `python bench/peers.py {' '.join(sys.argv[1:])}`",
            f"- builds: `ninja -j {h.jobs}` (bench/gen_project.py's build.ninja, mcpp's compile flags), "
            f"`mcpp build -j {h.jobs}{''.join(' ' + a for a in h.extra)}` (JSON events, except the plain no-op), "
            + (f"the real mcpp `build -j {h.jobs} --toolchain path:/usr` (`MCPP_NINJA_DYNDEP=0`, "
               "bench/work/peer-home); " if h.peer_bin and "peer" in args.systems else "")
            + f"medians of {args.runs} run(s) ({args.clean_runs} for clean and rebuild) per row, order and system, "
            "`sync` before each timed run, "
            "wall time including process start-up; removed trees moved aside and deleted at the end",
            f"- binaries of all print: `{h.output}`", ""]
    out += table(med, [s.name for s in h.systems])
    out += ["", f"Cold start (mcpp):", ""] + cold_text
    out += ["", f"Goals (the {g.tier}-unit row of issue 38; every order that ran must meet each):", ""]
    out += [f"- {line} -> **{'met' if ok else 'not met' if ok is False else 'n/a'}**"
            for line, ok in goal_lines(g, med, delay)]
    if mcpp and mcpp.restored:
        out += ["", "Rebuild after rm -rf target, mcpp's actions by kind and status (all runs): " + ", ".join(
            f"{k} {s} {v}" for (k, s), v in sorted(mcpp.restored.items(), key=str))]
    if h.splits:
        out += ["", "Edit-one taken apart (`--trace-edits`: mcpp's trace, ninja's .ninja_log):", ""]
        out += split_lines(h.splits)
    if notes:
        out += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    out += ["", "<details><summary>every run</summary>", ""] + runs_table(runs) + ["", "</details>"]
    return "\n".join(out) + "\n"


def write_atomic(path: str, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".peers-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


# A new file's cost under which the file system counts as settled (this machine: 20-30 us when
# nothing was deleted nearby for minutes, 100-800 us after a deletion of thousands of files).
QUIET_US = 60.0
SETTLE_POLL_S = 20.0


def creation_line(when: str, h: Harness, us: float | None = None, waited: float | None = None) -> str:
    """The cost of a new file beside the builds' trees (run_bench.file_creation), for the header:
    what a clean row's store writes met (`us`: measured already)."""
    if us is None:
        us = probe_creation(h)
    wait = "" if waited is None else f", after waiting {waited:.0f} s for it to fall under {QUIET_US:.0f} us"
    return (f"file creation at {when}: {us:.0f} us per new file{wait} ({run_bench.file_system(h.work)}; "
            "the median of 200 in a new directory beside the builds' trees)")


def probe_creation(h: Harness) -> float:
    us, probe = run_bench.file_creation(h.work)
    h.trash.discard(probe)  # deleted with the rest at the end: a deletion now would undo the wait
    return us


def settle(h: Harness, limit: float, sleep=time.sleep, clock=time.monotonic) -> str:
    """Wait, at most `limit` seconds, until a new file beside the trees costs under QUIET_US;
    the header's line for the start."""
    start = clock()
    us = probe_creation(h)
    while us >= QUIET_US and clock() - start + SETTLE_POLL_S <= limit:
        print(f"file creation {us:.0f} us: waiting for the file system to settle", file=sys.stderr, flush=True)
        sleep(SETTLE_POLL_S)
        us = probe_creation(h)
    return creation_line("start", h, us, clock() - start)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("units", type=int, metavar="N", help="units (sources) of the generated project")
    ap.add_argument("--light", action="store_true", help="units without standard headers (the 10,000 light row)")
    ap.add_argument("--runs", type=int, default=5, help="timed runs per row, system and order (median reported)")
    ap.add_argument("--clean-runs", type=int, help="runs of the clean and rebuild rows (default: --runs)")
    ap.add_argument("--jobs", "-j", type=int, default=2)
    ap.add_argument("--systems", default=None,
                    help="comma-separated, of ninja,mcpp,peer (default: all; peer where installed)")
    ap.add_argument("--order", choices=("grouped", "interleaved", "both"), default="both")
    ap.add_argument("--no-cold", action="store_true", help="leave out the one-unit empty/warm home builds")
    ap.add_argument("--settle", type=float, default=360.0, metavar="S",
                    help="wait at most S seconds before the first timed build for file creation to be quick (0: do not)")
    ap.add_argument("--mcpp", default=os.path.join(ROOT, ".venv", "bin", "mcpp"))
    ap.add_argument("--ninja", default=None, help="default: .venv/bin/ninja, else ninja on PATH")
    ap.add_argument("--peer", default=run_bench.PEER, help="the real mcpp (default: the one "
                    "../shared/tools/mcpp-peer/setup.sh prepared)")
    ap.add_argument("--mcpp-arg", action="append", default=[], metavar="ARG",
                    help="extra argument for every `mcpp build` (repeatable)")
    ap.add_argument("--trace-edits", action="store_true",
                    help="take each edit-one build apart (compile, link, the rest): mcpp's from a `--trace` "
                         "(which it then writes), ninja's from its .ninja_log")
    ap.add_argument("--markdown", metavar="FILE", help="also write the report to FILE")
    ap.add_argument("--results", default=os.path.join(BENCH, "RESULTS.md"),
                    help="insert the report as the newest section of FILE (default bench/RESULTS.md)")
    ap.add_argument("--no-results", dest="results", action="store_const", const=None,
                    help="leave RESULTS.md alone")
    args = ap.parse_args(argv)
    if args.units < 1 or args.units > 99999:
        ap.error("N must be between 1 and 99999")
    if args.runs < 1 or (args.clean_runs is not None and args.clean_runs < 1):
        ap.error("--runs and --clean-runs must be at least 1")
    args.clean_runs = args.clean_runs or args.runs
    peer_ok = bool(args.peer) and os.access(args.peer, os.X_OK)
    wanted = args.systems.split(",") if args.systems else ["ninja", "mcpp"] + (["peer"] if peer_ok else [])
    bad = [s for s in wanted if s not in SYSTEMS]
    if bad or "ninja" not in wanted or "mcpp" not in wanted:
        ap.error(f"--systems: ninja and mcpp, optionally peer (got {args.systems})")
    if "peer" in wanted and not peer_ok:
        ap.error(f"--systems peer: no real mcpp at {args.peer} (run bash ../shared/tools/mcpp-peer/setup.sh)")
    args.systems = [s for s in SYSTEMS if s in wanted]  # ninja, peer, mcpp: the grouped order's
    args.peer = args.peer if "peer" in args.systems else None
    venv_ninja = os.path.join(ROOT, ".venv", "bin", "ninja")
    args.ninja = args.ninja or (venv_ninja if os.path.exists(venv_ninja) else shutil.which("ninja") or "ninja")
    # Every build runs in its project's directory: a relative path must not change meaning there.
    args.mcpp = os.path.abspath(args.mcpp)
    args.ninja = shutil.which(args.ninja) or args.ninja
    args.ninja = os.path.abspath(args.ninja) if os.sep in args.ninja else args.ninja
    args.peer = os.path.abspath(args.peer) if args.peer else None
    for name, path in (("--mcpp", args.mcpp), ("--ninja", args.ninja)):
        if not os.access(path, os.X_OK):
            ap.error(f"{name}: no executable at {path}")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    python = run_bench.mcpp_interpreter(args.mcpp)
    h = Harness(args)
    head = header(args, python)
    print("\n".join(head), file=sys.stderr)
    orders = ORDERS if args.order == "both" else (args.order,)
    notes: list[str] = []
    try:
        h.setup()
        creation = [settle(h, args.settle)]
        code = run_bench.code_fingerprint()
        runs = {}
        for order in orders:
            print(f"{order} order (load {load()})", file=sys.stderr, flush=True)
            runs[order] = h.order(order, args.runs, args.clean_runs)
        cold = None if args.no_cold or "mcpp" not in args.systems else h.cold(args.runs)
        if run_bench.code_fingerprint() != code:
            notes.append("**mcpp's sources changed during the run: the rows may mix versions; rerun**")
        load_end = load()
        creation.append(creation_line("end", h))
        for s in h.systems:
            if isinstance(s, Mcpp):
                h.stop_server(s.dir, s.env)
    except (BenchError, OSError) as e:
        sys.exit(f"peers: {e}")
    finally:
        h.trash.empty()
    text = report(h, args, head + creation, runs, cold, load_end, notes)
    print(text)
    if args.markdown:
        write_atomic(args.markdown, text)
    if args.results:
        with open(args.results, encoding="utf-8") as f:
            old = f.read()
        write_atomic(args.results, insert_section(old, text))
        print(f"peers: the report is the newest section of {args.results}", file=sys.stderr)


if __name__ == "__main__":
    main()
