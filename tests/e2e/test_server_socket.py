"""The server's socket and its intake (engine/server/paths.py, daemon.py, protocol.py): no other
user can take the socket's name or stand in for the server, a malformed request leaves no
descriptor behind, and a client that connects and sends nothing delays nobody."""
from __future__ import annotations

import array
import ast
import marshal
import os
import socket
import subprocess
import time

import pytest

from e2e_support import HELLO_PACKAGE, SERVER_ON, mcpp_executable, write_tree
from tests.working_tree import interpreter_of
from mcpp.engine.server import paths

pytestmark = pytest.mark.one_mode  # sets the server mode per build itself: the server-on run leaves it out

ON = SERVER_ON
NOBODY = 65534

HELLO = HELLO_PACKAGE


@pytest.fixture
def served(tmp_path, mcpp):
    """(root, mcpp, env) for a hello project whose server sockets go under a runtime directory
    of the test's own; the server is stopped afterwards."""
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    env = {**ON, "XDG_RUNTIME_DIR": str(runtime)}
    root = write_tree(tmp_path / "hello", HELLO)
    yield root, mcpp, env
    mcpp("server", "stop", cwd=root, env=env)


def _server_pid(mcpp, root, env) -> int:
    res = mcpp("server", "status", cwd=root, env=env)
    assert res.code == 0, res.err
    return int(dict(line.split(": ", 1) for line in res.out.splitlines())["pid"])


def _address(mcpp, root, env) -> str:
    saved = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = env["XDG_RUNTIME_DIR"]
    try:
        return paths.socket_path(paths.server_id(str(root), str(mcpp.home)))
    finally:
        if saved is None:
            del os.environ["XDG_RUNTIME_DIR"]
        else:
            os.environ["XDG_RUNTIME_DIR"] = saved


_LISTENING = 0x10000  # /proc/net/unix's flag of a listening socket (__SO_ACCEPTCON)


def _open_fds(pid: int, address: str, listening: bool = False) -> int:
    """The server's sockets named by its address: its listener and the connections it accepted
    (`listening`: its listener alone). Its other descriptors come and go with its builds (the
    sandbox it begins ahead holds pipes and a pidfd, engine/server/sandbox_ahead.py; a spare
    holds a socket pair, server/spare.py), so only these say what connections hold."""
    named = set()
    with open("/proc/net/unix") as f:
        next(f)
        for line in f:
            fields = line.split()
            if len(fields) >= 8 and fields[7] == address and (not listening or int(fields[3], 16) & _LISTENING):
                named.add(f"socket:[{fields[6]}]")
    count = 0
    for name in os.listdir(f"/proc/{pid}/fd"):
        try:
            count += os.readlink(f"/proc/{pid}/fd/{name}") in named
        except OSError:  # closed meanwhile
            pass
    return count


def _baseline(pid: int, address: str) -> int:
    """The server's sockets once it holds no connection: its listener. The connection of the
    build just before is held until the server has taken in that build's end, which a loaded
    machine may not have done yet when the client has its answer; counted then, it made the
    baseline one too many (a CI run failed so once)."""
    listeners = _open_fds(pid, address, listening=True)
    assert _settled_fds(pid, address, listeners, seconds=10) == listeners
    return listeners


def _settled_fds(pid: int, address: str, want: int, seconds: float = 3.0) -> int:
    deadline = time.monotonic() + seconds
    while (n := _open_fds(pid, address)) != want and time.monotonic() < deadline:
        time.sleep(0.05)
    return n


@pytest.mark.skipif(os.getuid() != 0, reason="stands in for another user with setuid")
def test_another_user_cannot_take_the_socket_name(served):
    """Another user binding every name the server could use first, as a squatter would."""
    root, mcpp, env = served
    ident = paths.server_id(str(root), str(mcpp.home))
    r, w = os.pipe()
    squatter = os.fork()
    if squatter == 0:  # as nobody: take the abstract name and the runtime directory's path
        try:
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(f"\0mcpp-server-0-{ident}".encode())
            s.listen(1)
            os.write(w, b"1")
            time.sleep(120)
        finally:
            os._exit(0)
    try:
        os.close(w)
        assert os.read(r, 1) == b"1"
        res = mcpp("build", cwd=root, env=env)
        assert res.code == 0 and res.diagnostics == "", res.err
        status = mcpp("server", "status", cwd=root, env=env)
        assert status.code == 0 and "pid: " in status.out, status.err
    finally:
        os.kill(squatter, 9)
        os.waitpid(squatter, 0)
        os.close(r)


@pytest.mark.parametrize("how", ["another owner", "open mode", "symlink"])
def test_a_socket_directory_others_control_is_refused(served, how):
    root, mcpp, env = served
    sockets = os.path.join(env["XDG_RUNTIME_DIR"], "mcpp")
    if how == "another owner":
        if os.getuid() != 0:
            pytest.skip("chown needs root")
        os.mkdir(sockets, 0o700)
        os.chown(sockets, NOBODY, NOBODY)
    elif how == "open mode":
        os.mkdir(sockets)
        os.chmod(sockets, 0o777)
    else:
        elsewhere = os.path.join(env["XDG_RUNTIME_DIR"], "elsewhere")
        os.mkdir(elsewhere, 0o700)
        os.symlink(elsewhere, sockets)
    res = mcpp("build", cwd=root, env=env)
    assert res.code == 0 and "Finished" in res.err, res.err
    warnings = res.diagnostics.splitlines()
    assert len(warnings) == 1 and warnings[0].startswith(f"warning: the mcpp server socket directory {sockets} "), res.err
    assert warnings[0].endswith("; building in process")
    assert mcpp("-q", "run", cwd=root, env=env).out == "hello\n"
    status = mcpp("server", "status", cwd=root, env=env)
    assert status.code == 2
    assert status.err.startswith("error: no mcpp server can run: the mcpp server socket directory"), status.err
    assert "internal error" not in status.err and "Traceback" not in status.err
    assert os.listdir(sockets) == []  # nothing was bound there


def _identity() -> str:
    """The identity a client of the installed mcpp sends (its interpreter names itself)."""
    interpreter = interpreter_of(mcpp_executable())
    out = subprocess.run([interpreter, "-c", "from mcpp.engine.server import protocol; print(repr(protocol.identity()))"],
                         capture_output=True, text=True, check=True).stdout
    return ast.literal_eval(out.strip())


def test_a_malformed_request_leaves_no_descriptor_open(served):
    root, mcpp, env = served
    assert mcpp("build", cwd=root, env=env).code == 0
    pid = _server_pid(mcpp, root, env)
    address = _address(mcpp, root, env)
    good = {"op": "build", "identity": _identity(), "root": str(root), "home": str(mcpp.home), "argv": ["build"],
            "cwd": str(root), "env": {"MCPP_HOME": str(mcpp.home)}, "umask": 0o022, "started": time.time(),
            "began": time.time()}
    malformed = [
        {**good, "started": "yesterday"},
        {**good, "began": None},
        {**good, "argv": "build"},
        {**good, "env": None},
        {"op": "status", "x": 1},
        ["not", "a", "map"],
    ]
    baseline = _baseline(pid, address)
    for message in malformed:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(address)
            ends = [os.open(os.devnull, os.O_RDWR) for _ in range(3)]
            data = _frame(message)
            protocol_send_raw(s, data, ends)
            for fd in ends:
                os.close(fd)
            s.settimeout(10)
            try:
                s.recv(1 << 16)  # its answer, or its end
            except OSError:
                pass
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:  # half a frame, then gone
        s.connect(address)
        ends = [os.open(os.devnull, os.O_RDWR) for _ in range(5)]
        protocol_send_raw(s, b"\0\0\0\x40abc", ends)
        for fd in ends:
            os.close(fd)
    assert _settled_fds(pid, address, baseline) == baseline
    assert mcpp("build", cwd=root, env=env).code == 0  # and it still serves
    assert _server_pid(mcpp, root, env) == pid


def _frame(message) -> bytes:
    body = marshal.dumps(message)
    return len(body).to_bytes(4, "big") + body


def protocol_send_raw(sock: socket.socket, data: bytes, fds: list[int]) -> None:
    sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())])


def test_a_client_that_sends_nothing_delays_no_other_build(served):
    root, mcpp, env = served
    assert mcpp("build", cwd=root, env=env).code == 0
    pid = _server_pid(mcpp, root, env)
    address = _address(mcpp, root, env)
    baseline = _baseline(pid, address)
    silent = []
    for _ in range(3):  # connected, silent (one of them mid-frame), and held open
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(address)
        silent.append(s)
    silent[0].send(b"\0\0")
    try:
        time.sleep(0.2)
        assert _settled_fds(pid, address, baseline + 3) == baseline + 3  # the server holds each
        started = time.monotonic()
        res = mcpp("build", cwd=root, env={**env, "MCPP_NO_FAST_PATH": "1"})
        took = time.monotonic() - started
        assert res.code == 0 and res.diagnostics == "", res.err
        # Waiting on the silent ones in turn would take 3 x REQUEST_S (15 s); the bound leaves a
        # loaded machine room for the build itself.
        assert took < 9, f"a build behind three silent connections took {took:.1f} s"
        # the silent ones are dropped once their time to send a request is up
        assert _settled_fds(pid, address, baseline, seconds=10) == baseline
    finally:
        for s in silent:
            s.close()


def test_connections_that_never_finish_a_request_hold_a_bounded_share_of_the_server(served):
    """Many connections that send nothing (or a frame declared too large to be a request) hold
    at most `MAX_INTAKES` descriptors of the server, each with at most `MAX_REQUEST` bytes; a frame
    declared larger is dropped at once, not buffered until its deadline."""
    from mcpp.engine.server import daemon, protocol

    root, mcpp, env = served
    assert mcpp("build", cwd=root, env=env).code == 0
    pid = _server_pid(mcpp, root, env)
    address = _address(mcpp, root, env)
    baseline = _baseline(pid, address)
    held = []
    try:
        huge = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        huge.connect(address)
        huge.sendall((protocol.MAX_REQUEST + 1).to_bytes(4, "big") + b"\0" * 4096)
        huge.settimeout(2.0)
        assert huge.recv(1) == b"", "a frame larger than any request is held open"
        huge.close()
        for _ in range(3 * daemon.MAX_INTAKES):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(address)
            held.append(s)
        time.sleep(0.5)
        assert _open_fds(pid, address) <= baseline + daemon.MAX_INTAKES, _open_fds(pid, address) - baseline
        res = mcpp("build", cwd=root, env={**env, "MCPP_NO_FAST_PATH": "1"})
        assert res.code == 0 and res.diagnostics == "", res.err
    finally:
        for s in held:
            s.close()
    assert _settled_fds(pid, address, baseline, seconds=10) == baseline


# What a repository may hold at its root, named as modules the server imports (the standard
# library's and the engine's dependencies'): each leaves a mark where it runs.
_PLANTED = ("json", "tomllib", "threading", "blake3", "zstandard", "click")
_MARK = "import os\nopen(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'ran-' + __name__), 'w').close()\n"


def test_a_module_in_the_workspace_is_never_imported_by_the_server(tmp_path, mcpp):
    """The server runs in the workspace's root, where a repository's files are: a `python -c`
    there puts the working directory first on the import path, and a `json.py` at the root
    would run in the server, with the user's rights and outside every sandbox, at the first
    build of a cloned repository (`-P`, engine/server/client.py `SERVER_ARGV`)."""
    root = write_tree(tmp_path / "hello", {**HELLO, **{f"{name}.py": _MARK for name in _PLANTED}})
    env = {**ON, "MCPP_SERVER_START": "wait"}  # the first build waits for the server and goes through it
    try:
        first = mcpp("build", cwd=root, env=env)
        assert first.code == 0, first.err
        (root / "src/main.cpp").write_text('#include <cstdio>\nint main() { std::puts("hello again"); }\n')
        second = mcpp("build", cwd=root, env=env)
        assert second.code == 0, second.err
        assert sorted(p.name for p in root.glob("ran-*")) == []
        assert int(dict(line.split(": ", 1) for line in mcpp("server", "status", cwd=root, env=env).out.splitlines())
                   ["builds"]) >= 1  # the server built
    finally:
        mcpp("server", "stop", cwd=root, env=env)
