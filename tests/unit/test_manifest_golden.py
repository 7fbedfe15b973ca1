"""Golden manifests: `tests/manifest/<case>.toml` next to `<case>.expect`, the exact output.

Each case runs `mcpp --manifest-path manifest/<case>.toml metadata [args]` in-process through
the real CLI entry (`engine.cli.dispatch.main`), from `tests/` so that paths in the output are stable. The
first line of a case may be `# args: ...` (flags for `metadata`, e.g. `--target`, `--accel`,
`--strict`). The expect file holds stderr (warnings, or the positioned error) followed by stdout
(the folded table); a case whose output has `error:` must exit 2, any other 0. Well-formed and
malformed cases alike, one test.

Regenerate with `MCPP_GOLDEN_UPDATE=1 pytest tests/unit/test_manifest_golden.py`, then read every
changed `.expect` by hand: the point of a golden file is that a person agreed with it.
"""
from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from mcpp.engine.cli.dispatch import main

TESTS = Path(__file__).resolve().parent.parent
CASES = sorted((TESTS / "manifest").glob("*.toml"))


def case_args(case: Path) -> list[str]:
    first = case.read_text().splitlines()[0] if case.read_text() else ""
    return shlex.split(first[len("# args:"):]) if first.startswith("# args:") else []


def run_case(case: Path, capsys) -> tuple[int, str]:
    rel = case.relative_to(TESTS)
    with pytest.raises(SystemExit) as exit_info:
        main(["--manifest-path", str(rel), "metadata", *case_args(case)])
    captured = capsys.readouterr()
    return exit_info.value.code, captured.err + captured.out


def test_there_are_enough_cases_and_half_are_malformed():
    malformed = [c for c in CASES if "error:" in c.with_suffix(".expect").read_text()]
    assert len(CASES) >= 40 and len(malformed) * 2 >= len(CASES), (len(CASES), len(malformed))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.stem)
def test_golden_manifest(case: Path, capsys, monkeypatch):
    monkeypatch.chdir(TESTS)
    monkeypatch.setenv("NO_COLOR", "1")
    code, output = run_case(case, capsys)
    expect = case.with_suffix(".expect")
    if os.environ.get("MCPP_GOLDEN_UPDATE"):
        expect.write_text(output)
    assert "Traceback" not in output
    assert output == expect.read_text()
    assert code == (2 if "error:" in output else 0), output
