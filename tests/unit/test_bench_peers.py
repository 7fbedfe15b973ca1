"""bench/peers.py's pure parts: the goals per project size, medians and ratios, the verdicts over
both orders, the table, the trace's cold-start figure, RESULTS.md's insertion, and in which order
the harness runs the systems' builds (with stand-in systems: no build runs here)."""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def peers():
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module("peers")
    finally:
        sys.path.remove(str(BENCH))


def runs(clean=(10.0, 10.5, 9.0), edit=(1.0, 1.1, 0.3), noop=(0.005, 0.012, 0.03), noop_full=0.04,
         rebuild=(None, 0.5, 9.0)):
    """One order's runs: each tuple is (ninja, mcpp, real mcpp) medians given as single runs."""
    def by(t):
        return {s: [v] for s, v in zip(("ninja", "mcpp", "peer"), t) if v is not None}
    return {"clean": by(clean), "edit": by(edit), "noop": by(noop), "noop_full": {"mcpp": [noop_full]},
            "rebuild": by(rebuild)}


def verdicts(lines):
    return {line.split(":")[0]: ok for line, ok in lines}


def test_each_size_takes_the_goals_of_its_row_of_the_issue(peers):
    assert peers.tier(40, False).tier == "300"
    assert peers.tier(300, False).clean == 1.10
    assert peers.tier(1000, False) == peers.GOALS["1,000"]
    assert peers.tier(1000, False).noop_row == "noop_full" and peers.tier(1000, False).noop_bound == 50
    assert peers.tier(10000, True).tier == "10,000 light"
    assert peers.tier(300, True).tier == "10,000 light"  # light units are that row's kind


def test_medians_take_the_middle_run_of_each_row_order_and_system(peers):
    med = peers.medians({"grouped": {"clean": {"ninja": [3.0, 1.0, 2.0], "mcpp": []}}})
    assert med == {"grouped": {"clean": {"ninja": 2.0}}}


def test_a_goal_is_met_only_when_every_order_meets_it(peers):
    g = peers.GOALS["300"]
    good = runs()
    slow_clean = runs(clean=(10.0, 11.5, 9.0))  # 1.15x ninja: over 1.10x
    v = verdicts(peers.goal_lines(g, peers.medians({"grouped": good, "interleaved": slow_clean}), 0.05))
    assert v["clean <= 1.10x ninja"] is False
    assert v["edit-one <= 1.10x ninja"] is True
    assert v["no-op <= 3x ninja"] is True  # 12 ms against ninja's 5 ms: 2.4x
    assert v["rebuild after rm -rf target >= 15x faster than clean"] is True  # 10.5 / 0.5 = 21x
    v = verdicts(peers.goal_lines(g, peers.medians({"grouped": good, "interleaved": good}), 0.05))
    assert v["clean <= 1.10x ninja"] is True


def test_each_row_is_set_against_the_real_mcpps_ratio_in_the_same_order(peers):
    g = peers.GOALS["300"]
    v = verdicts(peers.goal_lines(g, peers.medians({"grouped": runs()}), None))
    assert v["clean below the real mcpp's ratio"] is False  # 1.05x against its 0.90x
    assert v["edit-one below the real mcpp's ratio"] is False  # 1.10x against 0.30x
    assert v["no-op below the real mcpp's"] is True  # 2.4x against 6x
    assert v["rebuild speed-up above the real mcpp's"] is True  # 21x against 1x
    v = verdicts(peers.goal_lines(g, peers.medians({"grouped": runs(clean=(10.0, 9.5, 11.0))}), None))
    assert v["clean below the real mcpp's ratio"] is True


def test_without_the_real_mcpp_there_is_no_comparison_with_it(peers):
    only = {o: {r: {s: xs for s, xs in by.items() if s != "peer"} for r, by in rows.items()}
            for o, rows in {"grouped": runs()}.items()}
    lines = peers.goal_lines(peers.GOALS["300"], peers.medians(only), None)
    assert not any("real mcpp" in line for line, _ in lines)


def test_the_no_op_goal_at_1000_units_bounds_the_full_engine_in_milliseconds(peers):
    g = peers.GOALS["1,000"]
    v = verdicts(peers.goal_lines(g, peers.medians({"grouped": runs(noop_full=0.049)}), None))
    assert v["full-engine no-op <= 50 ms"] is True
    v = verdicts(peers.goal_lines(g, peers.medians({"grouped": runs(noop_full=0.051)}), None))
    assert v["full-engine no-op <= 50 ms"] is False
    assert v["rebuild after rm -rf target >= 20x faster than clean"] is True
    light = verdicts(peers.goal_lines(peers.GOALS["10,000 light"], peers.medians({"grouped": runs()}), None))
    assert light["no-op <= 100 ms"] is True  # the plain no-op's 12 ms


def test_the_cold_start_goal_is_met_not_met_or_not_measured(peers):
    med = peers.medians({"grouped": runs()})
    cold = {line.split(":")[0]: (line, ok) for line, ok in peers.goal_lines(peers.GOALS["300"], med, None)}
    line, ok = cold["cold start"]
    assert ok is None and "n/a" in line
    assert dict(peers.goal_lines(peers.GOALS["300"], med, 0.08))[
        "cold start: first compile within 100 ms of the command: 80 ms"] is True
    assert dict(peers.goal_lines(peers.GOALS["300"], med, 0.25))[
        "cold start: first compile within 100 ms of the command: 250 ms"] is False


def test_a_goal_whose_row_did_not_run_is_not_measured_rather_than_met(peers):
    r = runs()
    del r["rebuild"]
    v = verdicts(peers.goal_lines(peers.GOALS["300"], peers.medians({"grouped": r}), None))
    assert v["rebuild after rm -rf target >= 15x faster than clean"] is None


def test_the_table_has_a_row_per_goal_row_and_order_with_ratios_to_ninja(peers):
    rows = peers.table(peers.medians({"grouped": runs(), "interleaved": runs(clean=(10.0, 12.0, 9.0))}),
                       ["ninja", "peer", "mcpp"])
    assert rows[0] == "| row | order | ninja | real mcpp | real mcpp / ninja | mcpp | mcpp / ninja |"
    assert "| clean build | grouped | 10.00 s | 9.00 s | 0.90x | 10.50 s | 1.05x |" in rows
    assert "| clean build | interleaved | 10.00 s | 9.00 s | 0.90x | 12.00 s | 1.20x |" in rows
    # the full-engine no-op against ninja's no-op; the real mcpp has none
    assert "| no-op, full engine (`--message-format json`) | grouped | 5 ms | - | - | 40 ms | 8.00x |" in rows
    assert ("| rebuild after `rm -rf target` | grouped | - | 9.00 s | 1.0x faster than clean | 500 ms | "
            "21.0x faster than clean |") in rows
    assert [r.split(" | ")[0] for r in rows[2:]] == [f"| {peers.LABELS[r]}" for r in peers.ROW_ORDER for _ in "ab"]


def test_the_cold_start_is_the_first_compile_after_the_command_start_event(peers):
    trace = {"traceEvents": [
        {"name": "process_name", "ph": "M", "pid": 1, "tid": 0},
        {"name": "command-start", "ph": "i", "ts": -180000.0, "pid": 1, "tid": 0},
        {"name": "compile bench:src/a.cpp", "cat": "compile", "ph": "X", "ts": 9000.0, "dur": 5.0,
         "args": {"status": "executed"}},
        {"name": "compile bench:src/b.cpp", "cat": "compile", "ph": "X", "ts": 2000.0, "dur": 5.0,
         "args": {"status": "fresh"}},  # checked, not run
        {"name": "link bench", "cat": "link", "ph": "X", "ts": 1000.0, "dur": 5.0, "args": {"status": "executed"}},
    ]}
    assert peers.first_compile_delay(trace) == pytest.approx(0.189)
    trace["traceEvents"].pop(1)
    assert peers.first_compile_delay(trace) is None  # no command-start: not measured


def test_the_cold_start_counts_from_the_launch_where_the_harness_timed_it(peers):
    """The trace's 0 is the process's start as the kernel counts it (whole clock ticks: up to
    10 ms before the real start); the harness that launched the command measures from its own
    clock instead, through the wall-clock moment the trace gives its 0."""
    trace = {"traceEvents": [
        {"name": "command-start", "ph": "i", "ts": 0.0, "args": {"unix_time": 1000.004}},
        {"name": "build-start", "ph": "i", "ts": 60000.0},
        {"name": "compile bench:src/a.cpp", "cat": "compile", "ph": "X", "ts": 90000.0, "dur": 5.0,
         "args": {"status": "executed"}},
    ]}
    assert peers.first_compile_delay(trace, launched=1000.0) == pytest.approx(0.094)
    assert peers.trace_marks(trace, launched=1000.0) == pytest.approx({"build-start": 0.064, "first compile": 0.094})
    assert peers.first_compile_delay(trace) == pytest.approx(0.09)  # not launched here: from the trace's 0
    del trace["traceEvents"][0]["args"]
    assert peers.first_compile_delay(trace, launched=1000.0) == pytest.approx(0.09)  # an older trace


def test_the_report_becomes_the_newest_section_of_results(peers):
    old = "# Benchmark results\n\nFigures from the scripts.\n\n## Older run\n\nbody\n"
    new = peers.insert_section(old, "## Peers: 40 units\n\n| a |\n")
    assert new == ("# Benchmark results\n\nFigures from the scripts.\n\n## Peers: 40 units\n\n| a |\n\n"
                   "## Older run\n\nbody\n")
    assert peers.insert_section("", "## A\n") == "## A\n\n"


@pytest.fixture
def tool(tmp_path):
    """An executable file standing for mcpp (parse checks only that it can be run)."""
    path = tmp_path / "bin" / "mcpp"
    path.parent.mkdir()
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_the_options_need_ninja_and_mcpp_and_default_clean_runs_to_runs(peers, tmp_path, tool):
    mcpp = ["--mcpp", str(tool), "--ninja", str(tool)]
    args = peers.parse(["40", *mcpp, "--systems", "mcpp,ninja", "--runs", "3", "--peer", str(tmp_path / "none")])
    assert args.systems == ["ninja", "mcpp"] and args.clean_runs == 3 and args.peer is None
    with pytest.raises(SystemExit) as e:
        peers.parse(["40", *mcpp, "--systems", "mcpp"])
    assert e.value.code == 2
    with pytest.raises(SystemExit):
        peers.parse(["40", *mcpp, "--systems", "ninja,mcpp,peer", "--peer", str(tmp_path / "none")])
    with pytest.raises(SystemExit):
        peers.parse(["0", *mcpp])


class Stand:
    """A system that records its timed runs instead of building."""

    def __init__(self, name, rows, log):
        self.name, self.rows, self.log = name, rows, log

    def before(self, row):
        pass

    def run(self, row):
        self.log.append((self.name, row))
        return 1.0


def harness(peers, log):
    h = object.__new__(peers.Harness)
    h.systems = [Stand("ninja", ("clean", "noop", "edit"), log), Stand("mcpp", peers.SCENARIOS, log)]
    h.check_binaries = lambda: None
    h.trace_edits = False
    return h


def test_grouped_runs_each_systems_builds_of_a_row_together(peers):
    log = []
    out = harness(peers, log).order("grouped", runs=2, clean_runs=1)
    assert log[:4] == [("ninja", "clean"), ("ninja", "noop"), ("ninja", "noop"), ("ninja", "edit")]
    assert log[5:] == [("mcpp", "clean"), ("mcpp", "rebuild"), ("mcpp", "noop"), ("mcpp", "noop"),
                       ("mcpp", "noop_full"), ("mcpp", "noop_full"), ("mcpp", "edit"), ("mcpp", "edit")]
    assert out["noop"] == {"ninja": [1.0, 1.0], "mcpp": [1.0, 1.0]} and out["clean"]["mcpp"] == [1.0]


def test_interleaved_runs_round_after_round_one_system_after_the_other(peers):
    log = []
    harness(peers, log).order("interleaved", runs=2, clean_runs=1)
    assert log == [("ninja", "clean"), ("mcpp", "clean"), ("mcpp", "rebuild"), ("ninja", "noop"), ("mcpp", "noop"),
                   ("mcpp", "noop_full"), ("ninja", "edit"), ("mcpp", "edit"),
                   ("ninja", "noop"), ("mcpp", "noop"), ("mcpp", "noop_full"), ("ninja", "edit"), ("mcpp", "edit")]


def test_ninjas_compile_is_mcpps_up_to_paths_and_no_further(peers):
    mcpp = ["/usr/bin/g++", "-ffile-prefix-map=/w/peers-n40/mcpp=.", "-fno-canonical-system-headers", "-std=c++23",
            "-O0", "-g", "-Iinclude", "-c", "src/a.cpp", "-o", "target/dev/.mcpp/obj/bench/src/a.cpp.o", "-MD",
            "-MF", "target/dev/.mcpp/obj/bench/src/a.cpp.d"]
    ninja = ["g++", "-ffile-prefix-map=$PWD=.", "-fno-canonical-system-headers", "-std=c++23", "-O0", "-g",
             "-Iinclude", "-c", "src/a.cpp", "-o", "out/obj/src/a.cpp.o", "-MD", "-MF", "out/obj/src/a.cpp.o.d"]
    assert peers.normalized_flags(mcpp) == peers.normalized_flags(ninja)
    assert peers.normalized_flags(mcpp) != peers.normalized_flags([*ninja[:4], "-O2", *ninja[5:]])
    assert peers.normalized_flags(mcpp) != peers.normalized_flags([*ninja, "-DNDEBUG"])


def test_tool_paths_are_made_absolute_since_builds_run_in_the_projects(peers, tmp_path, tool, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = peers.parse(["40", "--mcpp", "bin/mcpp", "--ninja", "bin/mcpp", "--systems", "ninja,mcpp"])
    assert args.mcpp == str(tool)
    with pytest.raises(SystemExit) as e:
        peers.parse(["40", "--mcpp", "bin/none", "--ninja", "bin/mcpp", "--systems", "ninja,mcpp"])
    assert e.value.code == 2


def test_the_goal_lines_state_each_orders_figure_in_its_unit(peers):
    med = peers.medians({"grouped": runs(noop_full=0.0491), "interleaved": runs(clean=(10.0, 11.0, 9.0))})
    lines = [line for line, _ in peers.goal_lines(peers.GOALS["1,000"], med, None)]
    assert "clean <= 1.05x ninja: grouped 1.05x, interleaved 1.10x" in lines
    assert "full-engine no-op <= 50 ms: grouped 49 ms, interleaved 40 ms" in lines
    assert ("full-engine no-op below the real mcpp's: grouped 49 ms (real mcpp 30 ms), "
            "interleaved 40 ms (real mcpp 30 ms)") in lines


def test_the_traces_instants_are_stated_after_the_command(peers):
    trace = {"traceEvents": [
        {"name": "command-start", "cat": "command", "ph": "i", "s": "g", "ts": 0.0},
        {"name": "build-start", "cat": "command", "ph": "i", "s": "g", "ts": 40000.0},
        {"name": "actions-start", "cat": "command", "ph": "i", "s": "g", "ts": 70000.0},
        {"name": "compile bench:src/a.cpp", "cat": "compile", "ph": "X", "ts": 72000.0, "dur": 9.0,
         "args": {"status": "executed"}},
    ]}
    marks = peers.trace_marks(trace)
    assert marks == pytest.approx({"build-start": 0.04, "actions-start": 0.07, "first compile": 0.072})
    lines, delay = peers.cold_lines(None, [marks["first compile"], 0.08], [marks, {"build-start": 0.05}])
    assert delay == pytest.approx(0.076)
    assert lines[1] == "- the same builds' other instants after the command (medians): build-start 45 ms, actions-start 70 ms"
    assert peers.trace_marks({"traceEvents": trace["traceEvents"][1:]}) == {}
    lines, delay = peers.cold_lines(None, [0.07, None])  # a clean build without the event: not measured
    assert delay is None and "n/a" in lines[0]


def test_mcpps_bytecode_is_written_by_an_untimed_first_build_before_any_timed_run(peers, tmp_path, monkeypatch):
    made, log = [], []
    monkeypatch.setattr(peers.gen_project, "generate", lambda n, d, light: made.append(d))
    h = object.__new__(peers.Harness)
    h.n, h.light, h.work = 3, False, str(tmp_path / "work")
    h.trash = type("Trash", (), {"discard": lambda self, p: None})()
    h.cold = lambda runs: log.append(("cold", runs))
    h.systems = [peers.Ninja(h)]
    h.setup()
    assert log == [] and len(made) == 1  # no mcpp among the systems: nothing of its to warm
    h.systems.append(peers.Mcpp(h))
    h.setup()
    assert log == [("cold", 1)]


def test_an_edit_one_build_is_taken_apart_into_its_compile_its_link_and_the_rest(peers):
    trace = {"traceEvents": [
        {"name": "compile bench:src/a.cpp", "cat": "compile", "ph": "X", "ts": 0.0, "dur": 1000.0,
         "args": {"status": "fresh"}},
        {"name": "compile bench:src/b.cpp", "cat": "compile", "ph": "X", "ts": 5000.0, "dur": 40000.0,
         "args": {"status": "executed"}},
        {"name": "link bench:bench", "cat": "link", "ph": "X", "ts": 46000.0, "dur": 400000.0,
         "args": {"status": "executed", "staged_ms": 2.5}},
    ]}
    assert peers.trace_split(trace, 0.5) == pytest.approx({"compile": 0.04, "link": 0.4, "rest": 0.06,
                                                           "link staging": 0.0025})
    assert peers.trace_split({"traceEvents": trace["traceEvents"][:2]}, 0.5) == {}  # no link ran
    log = ("# ninja log v7\n"
           "10\t90\t0\tout/obj/a.o\tabc\n100\t600\t0\tout/bench\tdef\n"  # the clean build's
           "2000\t2035\t0\tout/obj/b.o\tabc\n2036\t2436\t0\tout/bench\tdef\n")  # the edit's
    assert peers.ninja_log_split(log, 0.5) == pytest.approx({"compile": 0.035, "link": 0.4, "rest": 0.065})
    assert peers.ninja_log_split("# ninja log v7\n", 0.5) == {}
    lines = peers.split_lines({"grouped": {"mcpp": [peers.trace_split(trace, 0.5)], "ninja": []}})
    assert lines == ["- grouped, mcpp: compile 40 ms, link 400 ms (its staging 2 ms: 2 ms), the rest 60 ms "
                     "(each run, ms, compile+link+rest: 40+400+60)"]


def test_the_file_creation_probe_makes_its_files_in_a_directory_of_its_own(peers, tmp_path):
    """The header's "file creation" line (bench/RESULTS.md, thirtieth session): the probe creates
    its files in a new directory under the one given, which the caller removes, and says what it
    measured on which file system."""
    run_bench = sys.modules["run_bench"]
    us, probe = run_bench.file_creation(str(tmp_path), files=25)
    assert us > 0
    assert Path(probe).parent == tmp_path
    assert sorted(int(p.name) for p in Path(probe).iterdir()) == list(range(25))
    assert all(p.stat().st_size == 100 for p in Path(probe).iterdir())
    assert run_bench.file_system("/proc/self") == "proc"
    named = run_bench.file_system(str(tmp_path))
    assert named != "?" and (not named.startswith("ext4") or "journal" in named)


class _Trash:
    def __init__(self):
        self.discarded = []

    def discard(self, path):
        self.discarded.append(path)


def test_the_header_gains_a_file_creation_line_and_the_probe_goes_to_the_trash(peers, tmp_path):
    h = type("H", (), {"work": str(tmp_path), "trash": _Trash()})()
    line = peers.creation_line("start", h)
    assert line.startswith("file creation at start: ") and " us per new file (" in line
    assert h.trash.discarded and Path(h.trash.discarded[0]).parent == tmp_path


def _settle(peers, monkeypatch, probes, limit):
    """peers.settle with the probe's readings given and the clock advanced by its sleeps only."""
    readings = iter(probes)
    monkeypatch.setattr(peers, "probe_creation", lambda h: next(readings))
    monkeypatch.setattr(peers.run_bench, "file_system", lambda path: "ext4 without a journal")
    now = [0.0]
    slept = []

    def sleep(s):
        slept.append(s)
        now[0] += s

    line = peers.settle(type("H", (), {"work": "/w"})(), limit, sleep=sleep, clock=lambda: now[0])
    return line, slept


def test_the_harness_waits_for_file_creation_to_be_quick_before_its_first_timed_build(peers, monkeypatch):
    line, slept = _settle(peers, monkeypatch, [400.0, 150.0, 31.0], limit=360)
    assert len(slept) == 2
    assert line.startswith("file creation at start: 31 us per new file, after waiting 40 s for it to fall under 60 us")


def test_the_wait_for_quick_file_creation_is_bounded_and_can_be_left_out(peers, monkeypatch):
    line, slept = _settle(peers, monkeypatch, [400.0] * 100, limit=100)
    assert sum(slept) <= 100 and len(slept) == 5
    assert line.startswith("file creation at start: 400 us per new file, after waiting 100 s")
    line, slept = _settle(peers, monkeypatch, [400.0], limit=0)
    assert slept == [] and "400 us per new file, after waiting 0 s" in line
