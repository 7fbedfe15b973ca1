"""What an action can see: network, environment, files, /tmp."""
from __future__ import annotations

import os
import socket
import threading

import pytest

CLIENT_C = r"""
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons(atoi(argv[1]));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(s, (struct sockaddr *)&a, sizeof a) != 0) { perror("connect"); return 3; }
    char buf[16] = {0};
    if (read(s, buf, sizeof buf - 1) < 0) { perror("read"); return 4; }
    fputs(buf, stdout);
    return 0;
}
"""


@pytest.fixture
def server():
    """A TCP server on the host's 127.0.0.1 that greets each connection; yields its port."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.settimeout(0.2)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except (socket.timeout, OSError):
                continue
            with conn:
                conn.sendall(b"hello")

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield sock.getsockname()[1]
    stop.set()
    t.join()
    sock.close()


def connect(make, mkspec, host_exe, mode, port, **kw):
    client = host_exe("client", CLIENT_C)
    return make(mode).run(mkspec(["./client", str(port)], inputs={"client": client},
                                 root=os.path.dirname(client), timeout=20, **kw))


def test_bwrap_cannot_reach_a_server_on_host_loopback(make, mkspec, host_exe, server):
    r = connect(make, mkspec, host_exe, "bwrap", server)
    assert r.exit_code == 3, (r.stdout, r.stderr)
    assert b"connect" in r.stderr


def test_bwrap_with_network_reaches_the_host(make, mkspec, host_exe, server):
    r = connect(make, mkspec, host_exe, "bwrap", server, network=True)
    assert (r.exit_code, r.stdout) == (0, b"hello"), r.stderr


def test_off_reaches_the_host(make, mkspec, host_exe, server):
    r = connect(make, mkspec, host_exe, "off", server)
    assert (r.exit_code, r.stdout) == (0, b"hello"), r.stderr


def test_dir_mode_does_not_isolate_the_network(make, mkspec, host_exe, server):
    # documented limitation: no namespaces, so no network isolation
    r = connect(make, mkspec, host_exe, "dir", server)
    assert (r.exit_code, r.stdout) == (0, b"hello"), r.stderr


@pytest.mark.parametrize("mode", ["bwrap", "dir", "off"])
def test_environment_is_exactly_the_declared_one(mode, make, mkspec, tmp_path, monkeypatch):
    monkeypatch.setenv("MCPP_SANDBOX_LEAK", "yes")
    env = {"PATH": "/usr/bin:/bin", "FOO": "bar baz", "ROOT": "@@EXECROOT@@/x"}
    r = make(mode).run(mkspec(["env"], env=env, root=str(tmp_path)))
    assert r.exit_code == 0, r.stderr
    seen = dict(line.split("=", 1) for line in r.stdout.decode().splitlines())
    assert set(seen) == set(env)
    assert seen["FOO"] == "bar baz"
    expected_root = {"bwrap": "/execroot", "off": str(tmp_path)}.get(mode)
    if expected_root:
        assert seen["ROOT"] == expected_root + "/x"
    else:
        assert seen["ROOT"].startswith(os.path.realpath(tmp_path / "work" / "sandbox") + "/")


def test_bwrap_hides_undeclared_files_and_has_a_private_tmp(make, mkspec, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("s")
    marker = f"/tmp/mcpp-sandbox-test-{os.getpid()}"
    r = make("bwrap").run(mkspec(["sh", "-c", f"cat {secret}; echo x > {marker}; pwd; ls /; ls /execroot"],
                                 inputs={"in.txt": str(secret)}, cwd="sub"))
    assert b"No such file" in r.stderr
    out = r.stdout.decode().split()
    assert out[0] == "/execroot/sub"
    assert "home" not in out and "work" not in out
    assert out[-2:] == ["in.txt", "sub"]
    assert not os.path.exists(marker)  # /tmp inside was a private tmpfs


def test_bwrap_mounts_the_root_of_a_declared_tool_outside_usr(make, mkspec, host_exe, tmp_path):
    prefix = tmp_path / "opt" / "tool"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "share").mkdir()
    (prefix / "share" / "data.txt").write_text("tool data\n")
    tool = prefix / "bin" / "hello"
    tool.write_text(f"#!/bin/sh\ncat {prefix}/share/data.txt\n")
    tool.chmod(0o755)
    sb = make("bwrap")
    assert sb.run(mkspec([str(tool)], tools=(str(tool),))).stdout == b"tool data\n"
    assert sb.run(mkspec([str(tool)])).exit_code != 0  # not declared: not there
