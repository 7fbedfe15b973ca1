"""cas/remote/endpoint.py: one channel per build, shared by the remote cache and remote execution,
and one warning when the server goes away, after which neither asks it again."""
from __future__ import annotations

from mcpp.cas.home import Home
from mcpp.cas.local_store import LocalZstdStore
from mcpp.cas.remote.cache import RemoteCache
from mcpp.cas.remote.client import RemoteError, ServerInfo
from mcpp.cas.remote.config import RemoteSettings
from mcpp.cas.remote.endpoint import RemoteEndpoint
from mcpp.cas.remote.execution import RemoteExecutor
from mcpp.cas.verifying_store import VerifyingStore

SETTINGS = RemoteSettings(url="grpc://cache:1", target="cache:1", execute=True)
INFO = ServerInfo(("SHA256",), 0, True, "2.0-2.2")


class FakeClient:
    """Stands for a connected `RemoteClient`: the endpoint only hands it out and closes it."""

    closed = False

    def close(self) -> None:
        self.closed = True


class Connections:
    """The `connect` an endpoint is given: counts the channels it opens, or refuses them."""

    def __init__(self, refuse: str | None = None):
        self.opened: list[FakeClient] = []
        self.refuse = refuse

    def __call__(self, settings: RemoteSettings):
        if self.refuse:
            raise RemoteError("UNAVAILABLE", self.refuse)
        self.opened.append(FakeClient())
        return self.opened[-1], INFO


def users(tmp_path, endpoint: RemoteEndpoint, warnings: list[str]) -> tuple[RemoteCache, RemoteExecutor]:
    home = Home(tmp_path / "home")
    local = VerifyingStore(LocalZstdStore(home.cas))
    return (RemoteCache(endpoint, home, local, lambda rel: b"", warnings.append),
            RemoteExecutor(endpoint, local, warnings.append))


def test_the_cache_and_execution_share_one_channel_opened_at_first_use(tmp_path):
    connect, warnings = Connections(), []
    endpoint = RemoteEndpoint(SETTINGS, warnings.append, connect)
    cache, executor = users(tmp_path, endpoint, warnings)
    assert connect.opened == []  # nothing asked yet: no network
    assert cache._ready() and executor._ready()
    assert len(connect.opened) == 1 and endpoint.client() is connect.opened[0]
    assert cache.info == INFO and warnings == []
    executor.close()
    cache.close()
    endpoint.close()
    assert connect.opened[0].closed and endpoint.client() is None  # closed: never reopened


def test_a_server_that_cannot_be_reached_is_one_warning_and_never_asked_again(tmp_path):
    connect, warnings = Connections(refuse="connection refused"), []
    endpoint = RemoteEndpoint(SETTINGS, warnings.append, connect)
    cache, executor = users(tmp_path, endpoint, warnings)
    assert not cache._ready() and not executor._ready() and not cache._ready()
    assert warnings == ["remote cache and execution at grpc://cache:1 unavailable "
                        "(UNAVAILABLE: connection refused); building locally"]
    assert cache.disabled and executor.disabled


def test_a_server_one_user_finds_gone_is_gone_for_the_other(tmp_path):
    connect, warnings = Connections(), []
    endpoint = RemoteEndpoint(SETTINGS, warnings.append, connect)
    cache, executor = users(tmp_path, endpoint, warnings)
    assert cache._ready() and executor._ready()
    endpoint.down(RemoteError("UNAVAILABLE", "socket closed"), "remote cache")
    endpoint.down(RemoteError("UNAVAILABLE", "socket closed"), "remote execution")
    assert executor.disabled and not executor._ready() and not cache._ready()
    assert warnings == ["remote cache at grpc://cache:1 unavailable (UNAVAILABLE: socket closed); building locally"]
    assert len(connect.opened) == 1


def test_turning_execution_off_leaves_the_cache_its_server(tmp_path):
    connect, warnings = Connections(), []
    endpoint = RemoteEndpoint(SETTINGS, warnings.append, connect)
    cache, executor = users(tmp_path, endpoint, warnings)
    executor._disable_with("UNIMPLEMENTED: this server does not execute")
    assert executor.disabled and not endpoint.disabled and cache._ready()
    assert len(warnings) == 1 and warnings[0].startswith("remote execution at grpc://cache:1 unavailable")
