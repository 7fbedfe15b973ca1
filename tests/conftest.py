"""Shared fixtures: a real `mcpp` CLI and throwaway projects (helpers in tests/e2e/e2e_support.py).

Files holding a test marked `heavy` run first (tests/ordering.py). The session starts only when
`mcpp`, in this process and behind the `mcpp` executable the e2e tests run, is the working tree's,
and that executable (the native client) was built from the tree's client.c: tests/working_tree.py
says why and how to fix it otherwise.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests import ordering, working_tree
from tests.e2e.e2e_support import Mcpp, mcpp_executable, stop_servers, write_tree


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items[:] = ordering.heavy_files_first(items)


def pytest_sessionstart(session: pytest.Session) -> None:
    if hasattr(session.config, "workerinput"):  # an xdist worker: the controller has checked
        return
    exe = mcpp_executable()
    found = (working_tree.problem(working_tree.REPO, working_tree.located_here(), "pytest's Python")
             or working_tree.problem(working_tree.REPO, working_tree.located_by(exe), f"the `mcpp` executable {exe}")
             or working_tree.stale_client(exe))
    if found:
        pytest.exit(found, returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.fixture
def mcpp(tmp_path_factory):
    """The CLI with a home of the test's own; the build servers it started stop with the test."""
    cli = Mcpp(tmp_path_factory.mktemp("mcpp-home"))
    yield cli
    stop_servers(cli.home)


@pytest.fixture
def project(tmp_path):
    """Make a project from {relative path: text}; returns its root."""

    def make(files: dict[str, str], name: str = "proj") -> Path:
        return write_tree(tmp_path / name, files)

    return make
