"""`mcpp build --timings` / `--timings=json` / `--trace FILE`: the files a build writes, and the
HTML report drawn by a real headless browser (Debian's `chromium`, from scripts/install-system-deps.sh)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from e2e_support import copy_example

# The one URL a self-contained SVG page names: the SVG namespace, an identifier that is never fetched.
SVG_NS = "http://www.w3.org/2000/svg"


def _urls(text: str) -> set[str]:
    return set(re.findall(r"https?://[^\s'\"<>)]+", text))


def test_timings_json_and_trace_cover_every_action(tmp_path, mcpp):
    root = copy_example("04-workspace", tmp_path)
    res = mcpp("build", "--timings=json", "--trace", "out/trace.json", "--message-format", "json", cwd=root)
    assert res.code == 0, res.err
    finished = {e["id"]: e for e in res.events if e.get("reason") == "action-finished"}
    data = json.loads((root / "target/mcpp-timings/report.json").read_text())
    assert data["version"] == 1
    assert {a["id"] for a in data["actions"]} == set(finished)
    for a in data["actions"]:
        assert a["status"] == finished[a["id"]]["status"] == "executed"
        assert a["kind"] == finished[a["id"]]["kind"] and a["package"] == finished[a["id"]]["package"]
        assert 0 <= a["start"] <= a["end"] <= data["summary"]["wall_s"] and a["lane"] >= 0
    s = data["summary"]
    assert (s["actions"], s["executed"], s["cached"], s["packages"]) == (len(finished), len(finished), 0, 3)

    trace = json.loads((root / "out/trace.json").read_text())
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert sorted(e["name"] for e in spans) == sorted(finished)
    assert all(e["dur"] > 0 and e["args"]["package"] for e in spans)

    # Rebuilt from a clean target: every action now comes from the cache, and a second dated report is kept.
    shutil.rmtree(root / "target")
    assert mcpp("build", "--timings=json", cwd=root).code == 0
    mcpp("build", "--timings=json", cwd=root, check=True)  # same argv: never a no-op without a report
    dated = sorted((root / "target/mcpp-timings").glob("report-*.json"))
    assert len(dated) == 2
    latest = json.loads((root / "target/mcpp-timings/report.json").read_text())
    assert latest == json.loads(dated[-1].read_text())
    assert latest["summary"]["fresh"] == len(finished)


def test_timings_html_is_self_contained_and_failed_builds_report_too(tmp_path, mcpp, project):
    root = project({
        "mcpp.toml": '[package]\nname = "half"\nversion = "0.1.0"\n',
        "src/main.cpp": "int main() { return 0; }\n",
        "src/bad.cpp": "int f() { return ; }\n",  # does not compile
    })
    res = mcpp("build", "--timings", "--keep-going", cwd=root)
    assert res.code != 0
    assert "Timings target/mcpp-timings/report.html" in " ".join(res.err.split())
    page = (root / "target/mcpp-timings/report.html").read_text()
    assert _urls(page) <= {SVG_NS}
    assert "<link" not in page and " src=" not in page
    m = re.search(r'<script type="application/json" id="timings-data">(.*?)</script>', page, re.S)
    data = json.loads(m.group(1))
    statuses = {a["id"].split(":")[-1]: a["status"] for a in data["actions"]}
    assert statuses["src/bad.cpp"] == "failed" and statuses["src/main.cpp"] == "executed"
    assert data["summary"]["failed"] == 1 and data["summary"]["skipped"] == 1  # the link never started


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(_chromium() is None,
                    reason="chromium is not installed (scripts/install-system-deps.sh installs it on Debian)")
def test_timings_report_draws_in_a_browser(tmp_path, mcpp):
    root = copy_example("04-workspace", tmp_path)
    mcpp("build", "--timings", "-j", "2", cwd=root, check=True)
    report = root / "target/mcpp-timings/report.html"
    data = json.loads(re.search(r'id="timings-data">(.*?)</script>', report.read_text(), re.S).group(1))
    browser = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
               f"--user-data-dir={tmp_path / 'chromium-profile'}", "--window-size=1200,1000"]

    shot = tmp_path / "report.png"
    p = subprocess.run([*browser, f"--screenshot={shot}", report.as_uri()], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0 and shot.stat().st_size > 10_000, p.stderr[-2000:]
    assert "Uncaught" not in p.stderr and "CONSOLE" not in p.stderr, p.stderr[-2000:]

    p = subprocess.run([*browser, "--dump-dom", report.as_uri()], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    body = re.search(r"<body[^>]*>", p.stdout).group(0)
    assert 'data-errors=""' in body, body
    bars = re.findall(r'<rect [^>]*class="bar"', p.stdout)
    assert len(bars) == len(data["actions"]) == 6
    assert f'data-bars="{len(data["actions"])}"' in body
    assert p.stdout.count("<tr>") >= 6 + 6  # the summary rows and one row per slow action


def test_an_unwritable_trace_is_a_user_error(tmp_path, mcpp):
    root = copy_example("01-hello", tmp_path)
    (root / "blocker").write_text("a file, not a directory\n")
    res = mcpp("build", "--trace", "blocker/trace.json", cwd=root)
    assert res.code == 2 and "Traceback" not in res.err
    assert "error: --trace blocker/trace.json: cannot write the trace" in res.err
