"""`mcpp test`: run each `tests/*.cpp` binary, report per test and in a summary line."""
from __future__ import annotations

import fnmatch
import os
import subprocess
import time

from .build import BuildOutcome
from .report import Reporter


def run_tests(outcome: BuildOutcome, pattern: str | None, reporter: Reporter, json_mode: bool) -> int:
    tests = [a for a in outcome.plan.artifacts if a.kind == "test"]
    if pattern:
        glob = pattern if any(c in pattern for c in "*?[") else f"*{pattern}*"
        tests = [a for a in tests if fnmatch.fnmatchcase(a.name, glob)]
    if not tests:
        reporter.status("Finished", "no tests found", important=True)
        if json_mode:
            reporter.event("test-summary", passed=0, failed=0, duration=0.0)
        return 0
    multi_pkg = len({a.package for a in tests}) > 1
    passed = failed = 0
    start = time.monotonic()
    for a in tests:
        label = f"{a.package}::{a.name}" if multi_pkg else a.name
        t0 = time.monotonic()
        proc = subprocess.run([os.path.join(outcome.plan.execroot, a.path)], capture_output=True,
                              cwd=os.path.join(outcome.plan.execroot, os.path.dirname(a.path)))
        took = time.monotonic() - t0
        code = proc.returncode
        ok = code == 0
        passed += ok
        failed += not ok
        if json_mode:
            reporter.event("test", name=label, package=a.package, ok=ok, exit_code=code,
                           duration=round(took, 3), stdout=proc.stdout.decode("utf-8", "replace"),
                           stderr=proc.stderr.decode("utf-8", "replace"))
            continue
        if ok:
            reporter.line(f"{label} ... ok ({took:.2f}s)")
        else:
            what = f"signal {-code}" if code < 0 else f"exit {code}"
            reporter.line(f"{label} ... FAIL ({what}, {took:.2f}s)")
            output = (proc.stdout + proc.stderr).decode("utf-8", "replace").rstrip()
            if output:
                reporter.line("\n".join("    " + line for line in output.splitlines()))
    total = time.monotonic() - start
    if json_mode:
        reporter.event("test-summary", passed=passed, failed=failed, duration=round(total, 3))
    else:
        verdict = "ok" if not failed else "FAILED"
        reporter.line(f"\ntest result: {verdict}. {passed} passed; {failed} failed; finished in {total:.2f}s")
    return 1 if failed else 0

