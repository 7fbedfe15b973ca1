"""The suite's files can all be collected in one run.

The test folders have no `__init__.py`, so pytest imports each test file under its basename
(`rootdir`-relative "prepend" import mode); two files with one basename make the whole collection
fail with "import file mismatch".
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent


def test_no_two_test_files_share_a_basename():
    by_name = defaultdict(list)
    for path in TESTS.rglob("*.py"):
        by_name[path.name].append(str(path.relative_to(TESTS)))
    shared = {name: paths for name, paths in by_name.items()
              if len(paths) > 1 and name not in ("conftest.py", "__init__.py")}
    assert not shared, f"rename one of each: {shared}"
