"""Fixtures for the engine core's unit tests: a temporary execroot and its state directory."""
from __future__ import annotations

import pytest


@pytest.fixture
def execroot(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def state_dir(execroot):
    return execroot / "target" / "dev" / ".mcpp"
