"""Shared fixtures for the storage-layer tests: a fresh mcpp home per test, on a real disk."""
from __future__ import annotations

import pytest

from mcpp.cas.home import Home
from mcpp.cas.local_store import LocalZstdStore
from mcpp.cas.verifying_store import VerifyingStore


@pytest.fixture
def home(tmp_path) -> Home:
    return Home(tmp_path / "mcpp-home")


@pytest.fixture
def local(home) -> LocalZstdStore:
    return LocalZstdStore(home.cas)


@pytest.fixture
def store(local) -> VerifyingStore:
    return VerifyingStore(local)
