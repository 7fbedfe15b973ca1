"""Remote deadlines and cancellation against servers that misbehave on purpose, on 127.0.0.1:
one that accepts connections and never answers, and one that speaks only TLS."""
from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
import threading
import time
from pathlib import Path

import pytest

from e2e_support import SERVER_ON, Mcpp, mcpp_executable, started

PROJECT = {"mcpp.toml": '[package]\nname = "slow"\nversion = "0.1.0"\n',
           "src/main.cpp": '#include <cstdio>\nint f();\nint main() { std::printf("%d\\n", f()); }\n',
           "src/f.cpp": "int f() { return 7; }\n"}


class Listener:
    """Accepts TCP connections on 127.0.0.1 and, with `tls`, completes a TLS handshake and then
    closes; without, holds them open and never says a word."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.tls = tls
        self.accepted = threading.Event()
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.set()
            if self.tls is None:
                self.held.append(conn)
                continue
            try:
                with self.tls.wrap_socket(conn, server_side=True):
                    pass
            except (OSError, ssl.SSLError):
                conn.close()

    def close(self) -> None:
        self.sock.close()
        for c in self.held:
            c.close()


@pytest.fixture
def silent():
    server = Listener()
    yield server
    server.close()


def write_project(root: Path) -> Path:
    for rel, text in PROJECT.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def home_with(tmp_path: Path, config: str) -> Mcpp:
    m = Mcpp(tmp_path / "home")
    m.home.mkdir()
    (m.home / "config.toml").write_text(config)
    return m


def test_a_server_that_never_answers_costs_the_connect_timeout_once(tmp_path, silent):
    m = home_with(tmp_path, "[remote]\nconnect-timeout = 1\ntimeout = 60\n")
    a = write_project(tmp_path / "a")
    t0 = time.monotonic()
    res = m("build", "--remote", f"grpc://127.0.0.1:{silent.port}", "--message-format", "json", cwd=a, check=True)
    took = time.monotonic() - t0
    warnings = [line for line in res.err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "unavailable (DEADLINE_EXCEEDED" in warnings[0], res.err
    finished = [json.loads(line) for line in res.out.splitlines() if '"build-finished"' in line][0]
    assert finished["remote_cache"]["disabled"].startswith("DEADLINE_EXCEEDED")
    assert finished["remote_cache"]["retries"] == 0  # a first call that timed out is not repeated
    assert took < 20, took  # one second of waiting, not one per action, not the 60 s call timeout


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM through the build server"])
def test_an_interrupt_cancels_the_calls_in_flight_at_once(how, tmp_path, silent):
    m = home_with(tmp_path, "[remote]\nconnect-timeout = 120\ntimeout = 120\n")
    a = write_project(tmp_path / "a")
    env = {**os.environ, "MCPP_HOME": str(m.home), **(SERVER_ON if "server" in how else {})}
    # A test run started in the background of a shell inherits SIGINT ignored, and mcpp keeps a
    # signal it was started with ignored (`nohup mcpp build`): give the build the terminal's default.
    proc = subprocess.Popen(started([mcpp_executable(), "build", "--remote", f"grpc://127.0.0.1:{silent.port}"]),
                            cwd=a, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert silent.accepted.wait(60), "the build never reached the server"
        time.sleep(0.5)  # the first call is in flight, on its 120 s deadline
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT if how == "SIGINT" else signal.SIGTERM)
        code = proc.wait(timeout=30)
        took = time.monotonic() - t0
        assert took < 10, (took, proc.stderr.read())
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = proc.stderr.read()
    assert code != 0 and "Traceback" not in err and "warning: remote" not in err, err
    if "server" in how:
        Mcpp(m.home)("server", "stop", cwd=a)


def test_grpc_at_a_tls_server_says_to_use_grpcs(tmp_path):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    import datetime

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256()))
    (tmp_path / "s.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "s.key").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                       serialization.NoEncryption()))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tmp_path / "s.pem", tmp_path / "s.key")
    server = Listener(ctx)
    try:
        m = home_with(tmp_path, "[remote]\nretries = 0\n")
        a = write_project(tmp_path / "a")
        res = m("build", "--remote", f"grpc://127.0.0.1:{server.port}", cwd=a, check=True)
    finally:
        server.close()
    warnings = [line for line in res.err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, res.err
    assert f"(the server speaks TLS: use grpcs://127.0.0.1:{server.port})" in warnings[0], warnings[0]
