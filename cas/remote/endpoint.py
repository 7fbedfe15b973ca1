"""`RemoteEndpoint`: the one connection of a build to its REAPI server, shared by the remote cache
(`cache.py`) and remote execution (`execution.py`).

It owns what both would otherwise each do their own way:

- *One channel*: the `RemoteClient` (TLS, token, every stub: `client.py`) is opened and its
  capabilities read at the first `client()` call, once, whichever user asks first; a build
  with nothing to do never touches the network.
- *Retry, then degrade*: a transient failure (`UNAVAILABLE`, `RESOURCE_EXHAUSTED`, a read
  that timed out) is retried by the client under the build's one `Retrier` (`retry.py`). When
  the server cannot be reached, or a user reports that it went away (`down`) after the retries
  were used, the endpoint is off for the rest of the build: one warning through `warn`, which
  says how many retries were made, and every later `client()` answers None, so the cache
  misses and execution runs here. A cache must never fail a build that could simply run the
  action.

What a failure of one service means for that service alone (a refused upload, no worker taking
an action) stays with that service: it is not the server going away.
"""
from __future__ import annotations

import socket
import ssl
import threading
from typing import Callable

from .client import RemoteClient, RemoteError, ServerInfo, WireCounts, open_client
from .config import RemoteSettings
from .retry import Retrier

# RemoteSettings -> (client, capabilities); raises RemoteError when the server cannot be reached
Connect = Callable[[RemoteSettings], "tuple[RemoteClient, ServerInfo]"]


class RemoteEndpoint:
    """Thread-safe: the engine's worker threads and the upload threads share one endpoint."""

    def __init__(self, settings: RemoteSettings, warn: Callable[[str], None],
                 connect: Connect | None = None) -> None:
        self.settings = settings
        self.warn = warn
        self.info: ServerInfo | None = None  # what `GetCapabilities` said, once connected
        self.retrier = Retrier(settings.retries)  # the build's one retry budget
        self._connect: Connect = connect or (lambda s: open_client(s, self.retrier))
        self._lock = threading.Lock()
        self._client: RemoteClient | None = None
        self._down: str | None = None
        self._closed = False
        self.wire: WireCounts | None = None  # the bytes the client moved, once connected

    @property
    def url(self) -> str:
        return self.settings.url

    @property
    def services(self) -> str:
        """What this endpoint is to the build, for messages."""
        return "remote cache and execution" if self.settings.execute else "remote cache"

    @property
    def disabled(self) -> str | None:
        """Why the server was given up for this build, or None."""
        return self._down

    def client(self) -> RemoteClient | None:
        """The connected client (opened at the first call); None once the endpoint is off."""
        with self._lock:
            if self._down or self._closed:
                return None
            if self._client is None:
                try:
                    self._client, self.info = self._connect(self.settings)
                    self.wire = getattr(self._client, "wire", None)
                except RemoteError as e:
                    self._down_locked(e, self.services)
                    return None
            return self._client

    def down(self, e: RemoteError, service: str) -> None:
        """`service` ("remote cache", "remote execution") found the server gone: off for everyone."""
        with self._lock:
            self._down_locked(e, service)

    def cancel(self) -> None:
        """Interrupted (Ctrl-C, SIGTERM): end every retry wait and every call in flight now,
        the first connection's too (the retrier closes every channel it was given; gRPC fails
        the calls in flight on a closed channel). Takes no lock a call may hold."""
        self._closed = True
        self.retrier.cancel()

    @property
    def contacted(self) -> bool:
        """Whether this build tried the server at all (a no-op build never does)."""
        return self.wire is not None or self._down is not None

    @property
    def retries(self) -> int:
        """Retries made this build."""
        return self.retrier.count

    @property
    def retried_codes(self) -> dict[str, int]:
        """This build's retries by the status code that asked for each (a server refusing
        calls answers UNAVAILABLE or RESOURCE_EXHAUSTED; a slow one, DEADLINE_EXCEEDED)."""
        return dict(self.retrier.codes)

    def close(self) -> None:
        """Close the channel; from now on `client()` answers None."""
        with self._lock:
            self._closed = True
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def _down_locked(self, e: RemoteError, service: str) -> None:
        if self._down:
            return
        self._down = reason(e)
        if self.retrier.cancelled:
            return  # interrupted: the build is ending, nothing to warn about
        retried = f"; {self.retrier.gave_up}" if self.retrier.gave_up else ""
        self.warn(f"{service} at {self.url} unavailable ({self._down}{retried}){hint(e, self.settings)}; "
                  "building locally")


REFUSED = ("UNAUTHENTICATED", "PERMISSION_DENIED")


def reason(e: RemoteError) -> str:
    """The first line of `e`, at most 200 characters: what a warning quotes."""
    text = str(e).splitlines()[0] if str(e) else e.code
    return text if len(text) <= 200 else text[:197] + "..."


def hint(e: RemoteError, settings: RemoteSettings) -> str:
    """What to check, for the failures that are about credentials rather than the network."""
    text = str(e)
    if e.code in REFUSED:
        if settings.security.token:
            return " (the server refused the token)"
        return " (the server wants credentials: `token-file` under [remote] or MCPP_REMOTE_TOKEN_FILE)"
    if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text.lower():
        return " (TLS: the server's certificate is not signed by a trusted CA; set `tls-ca` under [remote])"
    if "handshake" in text.lower() or "SSL" in text:
        return " (TLS handshake failed: check `tls-ca`, `tls-cert` and `tls-key` under [remote])"
    if e.code == "UNAVAILABLE" and not settings.security.tls and not settings.target.startswith("unix:") \
            and speaks_tls(settings.target):
        return f" (the server speaks TLS: use grpcs://{settings.target})"
    if e.code == "UNAVAILABLE" and settings.security.tls and not settings.target.startswith("unix:") \
            and untrusted_certificate(settings.target, settings.security.ca):
        # gRPC names only the last address it tried ("connection refused" on ::1 while 127.0.0.1
        # refused the certificate): the handshake asked again says which it was
        return " (TLS: the server's certificate is not signed by a trusted CA; set `tls-ca` under [remote])"
    return ""


def untrusted_certificate(target: str, ca: bytes | None, timeout: float = 2.0) -> bool:
    """Whether a TLS handshake with the server at `target` fails on its certificate, verified as
    the channel verifies it (the configured roots, else the system's): asked only after a call
    failed without saying why. Nothing is sent but the handshake."""
    host, _, port = target.rpartition(":")
    host = host.strip("[]")
    ctx = ssl.create_default_context(cadata=ca.decode("ascii", "replace") if ca else None)
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as raw:
            with ctx.wrap_socket(raw, server_hostname=host):
                return False
    except ssl.SSLCertVerificationError:
        return True
    except (OSError, ValueError):
        return False


def speaks_tls(target: str, timeout: float = 2.0) -> bool:
    """Whether the server at `target` ("host:port") completes a TLS handshake: asked only after
    a plain-text connection failed, to say `grpcs://` where gRPC would only say "Socket closed".
    Nothing is sent but the handshake, and its certificate is not used for anything."""
    host, _, port = target.rpartition(":")
    host = host.strip("[]")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as raw:
            with ctx.wrap_socket(raw, server_hostname=host):
                return True
    except (OSError, ValueError):
        return False
