"""`mcpp test`: run each test binary, report per test and in a summary line.

A test runs as Cargo runs one: in its package's root directory with `MCPP_MANIFEST_DIR` set to
it, so fixtures are opened by a path relative to the package (`tests/data/input.txt`) whichever
directory `mcpp test` was started from. Its output is captured and shown only when it fails.

A test still running after `slow_notice` seconds gets one "has been running for over N s" line,
so a hung suite is visible before its timeout; one still running at `timeout` seconds is killed,
with every process it started (it runs in a session of its own), and fails.
"""
from __future__ import annotations

import fnmatch
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass

from ..build.compose import BuildOutcome
from ..core.errors import McppError
from ..package.sources import package_sources
from ..package.targets import owned_sources
from ..package.testsuite import package_tests, test_dirs, undiscovered_tests
from ..report.reporter import Reporter
from .run import runner_argv, target_runner

DEFAULT_TIMEOUT = 300.0  # seconds; the real mcpp's `--timeout` default
DEFAULT_SLOW_NOTICE = 60.0  # seconds, as Cargo's "has been running for over 60 seconds"
SLOW_NOTICE_ENV = "MCPP_TEST_SLOW_NOTICE"  # seconds, so a project (or a test of mcpp) can lower it


@dataclass
class TestRun:
    code: int | None  # None: killed at the timeout
    output: bytes  # stdout, then stderr
    stdout: bytes
    stderr: bytes
    took: float


def slow_notice_from_env() -> float:
    raw = os.environ.get(SLOW_NOTICE_ENV)
    if raw is None or raw == "":
        return DEFAULT_SLOW_NOTICE
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise McppError(f"{SLOW_NOTICE_ENV}={raw!r} is not a number of seconds above 0")
    return value


def run_one(argv: list[str], cwd: str, env: dict[str, str], timeout: float | None, slow_notice: float,
            on_slow) -> TestRun:
    """Run one test binary; `on_slow()` is called once if it outlives `slow_notice` seconds."""
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        # Files, not pipes: a test that writes more than a pipe holds never blocks on us.
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                start_new_session=True)
        deadline = None if timeout is None else t0 + timeout
        notified = False
        code: int | None = None
        try:
            while True:
                now = time.monotonic()
                waits = ([t0 + slow_notice - now] if not notified else []) + ([deadline - now] if deadline else [])
                try:
                    code = proc.wait(timeout=max(min(waits), 0.0) if waits else None)
                    break
                except subprocess.TimeoutExpired:
                    if deadline is not None and time.monotonic() >= deadline:
                        break  # killed below; `code` stays None
                    if not notified:
                        notified = True
                        on_slow()
        finally:
            # Also on Ctrl-C, and after a test that exited leaving a child behind: no process a
            # test started outlives it.
            _kill_session(proc)
        took = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    return TestRun(code, stdout + stderr, stdout, stderr, took)


def _kill_session(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the session is empty (or its leader's pid was reused by the time we got here)
    proc.wait()


def warn_undiscovered(outcome: BuildOutcome, reporter: Reporter) -> None:
    """Name the test-looking sources of each tested package that no rule builds (a suite in
    `unittests/`, a `foo_test.cc` outside the test directories): `mcpp test` would otherwise pass
    with them never compiled."""
    for pkg in outcome.graph.members:
        if pkg.manifest.is_virtual:
            continue
        taken: set[str] = {s.path for s in package_tests(pkg)} | {s.path for s in package_sources(pkg)}
        taken |= {s.path for t in pkg.manifest.targets for s in owned_sources(pkg, t)}
        missed = undiscovered_tests(pkg, taken)
        if missed:
            more = f" and {len(missed) - 8} more" if len(missed) > 8 else ""
            shown = ", ".join(f"`{m}`" for m in missed[:8]) + more
            dirs = ", ".join(f"`{d}/`" for d in test_dirs(pkg))
            reporter.warning(f"{pkg.name}: {shown} look like tests but no rule builds them (tests are the sources "
                             f"under {dirs}); add their directory to `[test] dirs` or declare a "
                             f"`[targets.<name>] kind = \"test\"`")


def run_tests(outcome: BuildOutcome, pattern: str | None, reporter: Reporter, json_mode: bool,
              timeout: float | None = DEFAULT_TIMEOUT) -> int:
    """Run the planned test binaries that match `pattern`; `timeout` None (or 0) is no limit."""
    timeout = timeout or None
    slow_notice = slow_notice_from_env()
    warn_undiscovered(outcome, reporter)
    tests = [a for a in outcome.plan.artifacts if a.kind == "test"]
    if pattern:
        glob = pattern if any(c in pattern for c in "*?[") else f"*{pattern}*"
        tests = [a for a in tests if fnmatch.fnmatchcase(a.name, glob)]
    if not tests:
        reporter.status("Finished", "no tests found", important=True)
        if json_mode:
            reporter.event("test-summary", passed=0, failed=0, duration=0.0)
        return 0
    # a cross build's tests run through its runner (checked installed before any runs)
    runners = {name: target_runner(outcome, name) for name in {a.package for a in tests}}
    roots = {p.name: p.root for p in outcome.graph.order}
    multi_pkg = len({a.package for a in tests}) > 1
    passed = failed = 0
    start = time.monotonic()
    for a in tests:
        label = f"{a.package}::{a.name}" if multi_pkg else a.name
        root = roots[a.package]
        env = {**os.environ, "MCPP_MANIFEST_DIR": root}

        def on_slow(label=label):
            if json_mode:
                reporter.event("test-slow", name=label, seconds=slow_notice)
            else:
                reporter.line(f"{label} has been running for over {slow_notice:g} s")

        r = run_one(runner_argv(runners[a.package], os.path.join(outcome.plan.execroot, a.path), list(a.args)), root, env, timeout, slow_notice, on_slow)
        ok = r.code == 0
        passed += ok
        failed += not ok
        if json_mode:
            reporter.event("test", name=label, package=a.package, ok=ok,
                           exit_code=r.code, timed_out=r.code is None, duration=round(r.took, 3),
                           stdout=r.stdout.decode("utf-8", "replace"), stderr=r.stderr.decode("utf-8", "replace"))
            continue
        if ok:
            reporter.line(f"{label} ... ok ({r.took:.2f}s)")
            continue
        if r.code is None:
            what = f"timed out after {timeout:g} s"
        elif r.code < 0:
            what = f"signal {-r.code}"
        else:
            what = f"exit {r.code}"
        reporter.line(f"{label} ... FAIL ({what}, {r.took:.2f}s)")
        output = r.output.decode("utf-8", "replace").rstrip()
        if output:
            reporter.line("\n".join("    " + line for line in output.splitlines()))
    total = time.monotonic() - start
    if json_mode:
        reporter.event("test-summary", passed=passed, failed=failed, duration=round(total, 3))
    else:
        verdict = "ok" if not failed else "FAILED"
        reporter.line(f"\ntest result: {verdict}. {passed} passed; {failed} failed; finished in {total:.2f}s")
    return 1 if failed else 0
