"""Fixtures for the remote-cache layers: a real BuildGrid server, clients connected to it."""
from __future__ import annotations

import pytest

from mcpp.cas.home import Home
from mcpp.cas.local_store import LocalZstdStore
from mcpp.cas.verifying_store import VerifyingStore

from buildgrid_server import BuildGridServer, bgd_executable


def _server(storage: str = "lru"):
    if bgd_executable() is None:
        pytest.skip("BuildGrid is not installed (pip install -e '.[test]')")
    server = BuildGridServer(storage)
    try:
        server.start()
    except BaseException:
        server.cleanup()
        raise
    return server


@pytest.fixture(scope="module")
def buildgrid():
    """One BuildGrid server (in-memory storage) shared by a module's tests; tests use distinct blobs."""
    server = _server()
    yield server
    server.cleanup()


@pytest.fixture
def fresh_buildgrid():
    """A BuildGrid server of the test's own, for tests that stop it or need it empty."""
    server = _server()
    yield server
    server.cleanup()


@pytest.fixture
def disk_buildgrid():
    """A BuildGrid server whose CAS is files on disk (so a test can corrupt one)."""
    server = _server("disk")
    yield server
    server.cleanup()


@pytest.fixture
def client(buildgrid):
    from mcpp.cas.remote.client import RemoteClient

    c = RemoteClient(buildgrid.url, timeout=10)
    c.connect()
    yield c
    c.close()


@pytest.fixture
def home(tmp_path) -> Home:
    return Home(tmp_path / "mcpp-home")


@pytest.fixture
def local(home) -> VerifyingStore:
    return VerifyingStore(LocalZstdStore(home.cas))
