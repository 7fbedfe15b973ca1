"""The order `make test`'s parallel runs take the tests in: the slowest groups first.

pytest-xdist (`--dist load`) hands tests to its workers in collection order. A slow file left at
the end keeps one worker busy while the others idle; started first, it runs beside the many short
tests. Files holding a test marked `heavy` go first; each file's tests stay together, so its
module-scoped fixtures (a BuildGrid, a built tool) are made once per worker.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Item(Protocol):
    path: object

    def get_closest_marker(self, name: str) -> object | None: ...


def heavy_files_first(items: Sequence[Item]) -> list[Item]:
    heavy = {item.path for item in items if item.get_closest_marker("heavy")}
    return sorted(items, key=lambda item: item.path not in heavy)
