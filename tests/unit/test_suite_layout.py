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


class FakeItem:
    def __init__(self, path: str, heavy: bool = False):
        self.path = path
        self.heavy = heavy

    def get_closest_marker(self, name: str):
        return object() if name == "heavy" and self.heavy else None


def test_files_holding_a_heavy_test_run_first_and_keep_their_tests_together():
    from tests.ordering import heavy_files_first

    items = [FakeItem("a.py"), FakeItem("b.py"), FakeItem("b.py", heavy=True), FakeItem("c.py"),
             FakeItem("d.py", heavy=True), FakeItem("a.py")]
    got = [(i.path, i.heavy) for i in heavy_files_first(items)]
    assert got == [("b.py", False), ("b.py", True), ("d.py", True), ("a.py", False), ("c.py", False),
                   ("a.py", False)]
