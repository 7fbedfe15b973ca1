"""The timings recorder: actions timed on their worker lanes by the real scheduler, the JSON data,
the Chrome trace and the dated reports kept in target/mcpp-timings/."""
from __future__ import annotations

import json
import os
import threading
import time

import pytest

from mcpp.engine.exec.schedule import run_graph
from mcpp.engine.report.timings import KEEP, TimingsRecorder


def _build(rec: TimingsRecorder, ids, prereqs, fresh=()):
    both_running = threading.Barrier(2, timeout=5)

    def check(i):
        if i in fresh:
            rec.status(i, "compile", "pkg", "fresh")
            return True
        return False

    def execute(i):
        if i in ("a", "b"):
            both_running.wait()  # a and b overlap: two lanes
        time.sleep(0.01)
        return i

    def finish(i, _):
        rec.status(i, "link" if i == "c" else "compile", "pkg" if i != "b" else "other", "executed")
        return True

    result = run_graph(ids, prereqs, jobs=2, check=check, execute=rec.timed(execute), finish=finish)
    rec.finish()
    return result


def test_actions_are_timed_on_their_lanes():
    rec = TimingsRecorder(jobs=2)
    assert _build(rec, ["a", "b", "c", "d"], {"c": ("a", "b")}, fresh={"d"}).ok
    data = rec.data()
    by_id = {a["id"]: a for a in data["actions"]}
    assert set(by_id) == {"a", "b", "c", "d"}
    assert {by_id["a"]["lane"], by_id["b"]["lane"]} == {0, 1}
    assert by_id["d"]["lane"] == -1 and by_id["d"]["status"] == "fresh" and by_id["d"]["duration"] == 0
    assert by_id["c"]["start"] >= max(by_id["a"]["end"], by_id["b"]["end"])
    assert by_id["c"]["kind"] == "link" and by_id["b"]["package"] == "other"
    s = data["summary"]
    assert (s["actions"], s["executed"], s["fresh"], s["packages"], s["lanes"]) == (4, 3, 1, 2, 2)
    assert s["wall_s"] >= by_id["c"]["end"] and 0 <= s["cpu_use"] <= 1


def test_trace_has_one_complete_event_per_action():
    rec = TimingsRecorder(jobs=2)
    _build(rec, ["a", "b", "c"], {"c": ("a", "b")})
    events = rec.trace()["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    assert sorted(e["name"] for e in spans) == ["a", "b", "c"]
    assert all(e["dur"] > 0 and e["args"]["status"] == "executed" for e in spans)
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert {names[e["tid"]] for e in spans} == {"worker 0", "worker 1"}


def test_trace_places_the_actions_after_the_command_and_the_builds_start():
    """The command began (in another process, on the wall clock) half a second before the
    recorder, the build a tenth: the trace's 0 is the command's start, and every action's `ts`
    counts from it."""
    began = time.time() - 0.5
    rec = TimingsRecorder(jobs=2, command_started=began, build_started=time.monotonic() - 0.1)
    _build(rec, ["a", "b", "c"], {"c": ("a", "b")})
    events = rec.trace()["traceEvents"]
    marks = {e["name"]: e["ts"] for e in events if e["ph"] == "i"}
    assert marks["command-start"] == 0
    # its 0 on the wall clock, for a harness that timed the command's launch (bench/peers.py)
    (start,) = [e for e in events if e["name"] == "command-start"]
    assert start["args"]["unix_time"] == pytest.approx(began, abs=1e-6)
    assert 350_000 < marks["build-start"] < 450_000 and 450_000 < marks["actions-start"] < 550_000
    spans = [e for e in events if e["ph"] == "X"]
    assert min(e["ts"] for e in spans) >= marks["actions-start"]


def test_a_trace_without_the_commands_start_begins_at_the_actions():
    rec = TimingsRecorder(jobs=2)
    _build(rec, ["a", "b"], {})
    events = rec.trace()["traceEvents"]
    marks = {e["name"]: e["ts"] for e in events if e["ph"] == "i"}
    assert marks.keys() == {"actions-start", "build-end"} and marks["actions-start"] == 0
    assert all(0 <= e["ts"] <= e["ts"] + e["dur"] <= marks["build-end"] < 1_000_000 for e in events if e["ph"] == "X")


def test_the_steps_after_the_actions_and_each_actions_staging_are_in_the_trace():
    rec = TimingsRecorder(jobs=2)

    def run(i):
        time.sleep(0.01)  # its inputs staged
        rec.process_started(i)
        time.sleep(0.01)

    rec.timed(run)("a")
    rec.status("a", "link", "pkg", "executed")
    for name in ("actions-end", "records-saved", "outputs-stored"):
        rec.mark(name)
    rec.finish()
    events = rec.trace()["traceEvents"]
    marks = [(e["name"], e["ts"]) for e in events if e["ph"] == "i"]
    assert [n for n, _ in marks] == ["actions-start", "actions-end", "records-saved", "outputs-stored", "build-end"]
    assert [t for _, t in marks] == sorted(t for _, t in marks)
    (a,) = [e for e in events if e["ph"] == "X"]
    assert a["ts"] + a["dur"] <= dict(marks)["actions-end"]
    assert 10 <= a["args"]["staged_ms"] < a["dur"] / 1000  # its process began after the staging


def test_reports_are_kept_by_date_with_the_latest_as_report(tmp_path):
    for n in range(KEEP + 2):
        rec = TimingsRecorder(jobs=1)
        _build(rec, ["a", "b", "c"], {})
        written = rec.write(str(tmp_path), "json", None)
        time.sleep(0.002)
    out = tmp_path / "mcpp-timings"
    assert written == [str(out / "report.json")]
    dated = sorted(n for n in os.listdir(out) if n.startswith("report-"))
    assert len(dated) == KEEP
    assert (out / dated[-1]).read_text() == (out / "report.json").read_text()
    assert json.loads((out / "report.json").read_text())["summary"]["actions"] == 3


def test_html_embeds_the_data_without_ending_its_script_early():
    from mcpp.engine.report.timings_html import render

    rec = TimingsRecorder(jobs=1)
    rec.status("gen </script><script>alert(1)</script>", "genrule", "p", "fresh")
    rec.finish()
    page = render(rec.data())
    assert "</script><script>alert" not in page
    embedded = page.split('id="timings-data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(embedded)["actions"][0]["id"] == "gen </script><script>alert(1)</script>"
