"""The type checker over the three packages: `cas/` and `sandbox/` pass `mypy --strict` with no
error; `engine/` is held by a ratchet, its error count recorded in `mypy_engine_baseline.txt`
beside this file, which may only go down.

mypy reads the configuration in pyproject.toml (`[tool.mypy]`) and finds the installed names
(`mcpp.cas.x`) through the links in typecheck/mcpp/, which point at the working tree's folders.

Slow by nature (marked `slow`): each test runs mypy over whole packages in a subprocess. The
cache under .mypy_cache/ (git-ignored; one directory per run so the strict and the default
options never evict each other) makes a repeated run much quicker than the first.
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BASELINE = Path(__file__).with_name("mypy_engine_baseline.txt")
PACKAGES = ("engine", "cas", "sandbox")
_ERROR = re.compile(r"\S+:\d+: error: ")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                       reason="mypy is not installed (pip install -e '.[test]')"),
]


def _mypy(name: str, *args: str) -> tuple[list[str], str]:
    """Run mypy from the repository root: (its error lines, its whole output)."""
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(REPO / ".mypy_cache" / name), *args],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    out = proc.stdout + proc.stderr
    if proc.returncode not in (0, 1):  # 2: mypy itself failed (a bad config, a crash)
        pytest.fail(f"mypy did not run (exit {proc.returncode}):\n{out}")
    return [line for line in out.splitlines() if _ERROR.match(line)], out


def _baseline() -> int:
    """The recorded engine error count: the first line that is not a comment."""
    for line in BASELINE.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return int(line)
    raise AssertionError(f"{BASELINE} records no number")


def test_typecheck_links_point_at_the_working_tree() -> None:
    """mypy must check these very files, not an installed copy."""
    for name in PACKAGES:
        link = REPO / "typecheck" / "mcpp" / name
        assert link.is_symlink(), f"{link} must be a symlink to ../../{name}"
        assert os.path.realpath(link) == str(REPO / name)


def test_cas_and_sandbox_pass_mypy_strict() -> None:
    errors, out = _mypy("strict", "--strict", "-p", "mcpp.cas", "-p", "mcpp.sandbox")
    assert not errors, f"mypy --strict found {len(errors)} errors in cas/ and sandbox/:\n{out}"


def test_engine_mypy_errors_only_go_down() -> None:
    errors, out = _mypy("engine", "-p", "mcpp.engine")
    recorded = _baseline()
    rel = BASELINE.relative_to(REPO)
    assert len(errors) <= recorded, (
        f"mypy -p mcpp.engine: {len(errors)} errors, more than the {recorded} recorded in {rel}: "
        f"fix the new ones (the count may only go down):\n{out}")
    assert len(errors) == recorded, (
        f"mypy -p mcpp.engine: {len(errors)} errors, fewer than the {recorded} recorded in {rel}: "
        f"well done; write {len(errors)} there so the ratchet holds the gain")
