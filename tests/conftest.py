"""Shared fixtures: a real `mcpp` CLI and throwaway projects (helpers in tests/e2e/e2e_support.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.e2e_support import Mcpp, write_tree


@pytest.fixture
def mcpp(tmp_path_factory) -> Mcpp:
    return Mcpp(tmp_path_factory.mktemp("mcpp-home"))


@pytest.fixture
def project(tmp_path):
    """Make a project from {relative path: text}; returns its root."""

    def make(files: dict[str, str], name: str = "proj") -> Path:
        return write_tree(tmp_path / name, files)

    return make
