"""A real BuildGrid server for tests: started from the test venv, on a unix socket, stopped by pid.

BuildGrid 0.4.4 facts this relies on: `bgd server start CONFIG.yml` serves CAS, ByteStream,
the action cache and Capabilities from a short YAML file; it speaks SHA-256 only, refuses gRPC
messages over 4 MiB, keeps its action cache in memory and starts in about 3 s.
`grpc.so_reuseport: 0` keeps two servers from ever sharing a port.

Used by the `buildgrid` fixtures in `tests/unit/remote/conftest.py` and `tests/e2e/test_remote.py`
and by `bench/bench_remote.py`.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONFIG = """\
server:
  - !channel
    address: "{address}"
{channel}
{authorization}
# BuildGrid's default (5 per CPU: 10 here) is also its limit on RPCs in flight; a client on a
# loaded 2-CPU machine can have more waiting and would be told RESOURCE_EXHAUSTED.
thread-pool-size: 64
grpc-server-options:
  grpc.so_reuseport: 0

instances:
  - name: ''
    storages:
      - {kind} &cas-storage
        {option}
    caches:
      - !lru-action-cache &action-cache
        storage: *cas-storage
        max-cached-refs: 1000000
        allow-updates: true
        cache-failed-actions: false
    services:
      - !cas
        storage: *cas-storage
      - !bytestream
        storage: *cas-storage
      - !action-cache
        cache: *action-cache
"""


def bgd_executable() -> str | None:
    candidate = Path(sys.executable).parent / "bgd"
    return str(candidate) if candidate.exists() else shutil.which("bgd")


class BuildGridServer:
    """One `bgd server start` process. `storage`: "lru" (in memory) or "disk" (files under
    `cas_dir`, so a test can corrupt a blob behind the server's back)."""

    def __init__(self, storage: str = "lru", lru_size: str = "2G", *, tls: dict | None = None,
                 jwt: tuple[Path, Path] | None = None, ready_security=None, config: str | None = None) -> None:
        """`tls`: {"key": path, "cert": path, "client-ca": path or None} serves TLS (mutual with
        `client-ca`) on 127.0.0.1; `jwt`: (HS256 secret file, ACL file) requires a bearer token;
        `ready_security`: the `ChannelSecurity` that the readiness probe connects with;
        `config`: a whole buildgrid.yml of the caller's, its channel address `{address}`."""
        exe = bgd_executable()
        if exe is None:
            raise FileNotFoundError("BuildGrid (`bgd`) is not installed: pip install -e '.[test]'")
        self.exe = exe
        # A short directory: a unix socket path must fit in 107 bytes.
        self.dir = Path(tempfile.mkdtemp(prefix="bgd-", dir="/tmp"))
        self.socket = self.dir / "cas.sock"
        self.cas_dir = self.dir / "storage"
        if storage == "disk":
            kind, option = "!disk-storage", f"path: {self.cas_dir}"
        else:
            kind, option = "!lru-storage", f"size: {lru_size}"
        self.port = _free_port() if tls else None
        self.ready_security = ready_security
        if tls:
            creds = (f"      tls-server-key: {tls['key']}\n      tls-server-cert: {tls['cert']}\n"
                     + (f"      tls-client-certs: {tls['client-ca']}\n" if tls.get("client-ca") else ""))
            address, channel = f"127.0.0.1:{self.port}", f"    insecure-mode: false\n    credentials:\n{creds}"
        else:
            address, channel = f"unix:{self.socket}", "    insecure-mode: true\n"
        authorization = ""
        if jwt:
            authorization = (f"authorization:\n  method: jwt\n  algorithm: hs256\n  secret: {jwt[0]}\n"
                             f"  acl-config: {jwt[1]}\n")
        self.config = self.dir / "buildgrid.yml"
        self.config.write_text(config.replace("{address}", address) if config is not None else
                               CONFIG.format(address=address, channel=channel, authorization=authorization,
                                             kind=kind, option=option))
        self.log = self.dir / "server.log"
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"grpcs://localhost:{self.port}" if self.port else f"unix:{self.socket}"

    @property
    def target(self) -> str:
        return f"localhost:{self.port}" if self.port else self.url

    def start(self, timeout: float = 60.0) -> "BuildGridServer":
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen([self.exe, "server", "start", str(self.config)], stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True, cwd=self.dir)
        self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float) -> None:
        """Poll `GetCapabilities` until the server answers."""
        from mcpp.cas.remote.client import RemoteClient, RemoteError

        deadline = time.monotonic() + timeout
        while True:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"bgd exited with {self.proc.returncode}:\n{self.log_tail()}")
            if self.port or self.socket.exists():
                client = RemoteClient(self.target, timeout=2.0, security=self.ready_security)
                try:
                    client.connect(timeout=2.0)
                    return
                except RemoteError as e:
                    if e.code == "UNAUTHENTICATED":
                        return  # it answered: it wants a token the probe does not have
                finally:
                    client.close()
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"BuildGrid did not answer GetCapabilities in {timeout:.0f}s:\n{self.log_tail()}")
            time.sleep(0.1)

    def stop(self) -> None:
        """SIGTERM the server by its pid (SIGKILL after 10 s); idempotent."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def kill(self) -> None:
        """SIGKILL by pid: the server vanishes mid-conversation, as a crashed machine would."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def blob_path(self, sha256: str) -> Path:
        """Where the disk storage keeps a blob (BuildGrid 0.4: `cas/objects/<2 hex>/<rest>`)."""
        return self.cas_dir / "cas" / "objects" / sha256[:2] / sha256[2:]

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def __enter__(self) -> "BuildGridServer":
        try:
            return self.start()
        except BaseException:
            self.cleanup()
            raise

    def __exit__(self, *exc) -> None:
        self.cleanup()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
