"""What one client's action on a real `mcpp worker` can reach of the worker's host and of the
actions that run after it. A real PostgreSQL cluster, a real BuildGrid and one real `mcpp worker`
(one slot, bwrap), started through `scripts/buildgrid/local_grid.py`; actions are sent with REAPI
`Execute` as any client could send them:

- an input root naming a "blob" by a digest that is a path to a host file is refused by the
  worker (the lease fails with INVALID_ARGUMENT, nothing runs), never staged into the action;
- a SysV shared memory segment and message queue one action leaves are gone for the next
  action on the same slot (the same warm sandbox);
- an entry of the worker's store whose bytes changed on disk is not staged: the worker downloads
  the blob again;
- a result naming an output by a "digest" that is a path is refused by the client (a warning, the
  action runs locally).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from e2e_support import REPO, Mcpp

sys.path.insert(0, str(REPO / "scripts" / "buildgrid"))
from local_grid import LocalGrid  # noqa: E402

from test_remote_exec import _requirements  # noqa: E402

# Plants (argv[1] == "plant") or looks for a SysV shared memory segment holding a marker and a
# message queue, under one fixed key (ctypes: nothing to compile on the worker).
PROBE = r"""
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
KEY, IPC_CREAT, MARK = 0x6d637071, 0o1000, b"another client's secret"
if sys.argv[1] == "plant":
    seg = libc.shmget(KEY, 4096, IPC_CREAT | 0o600)
    ctypes.memmove(libc.shmat(seg, None, 0), MARK, len(MARK))
    print("planted", seg >= 0 and libc.msgget(KEY, IPC_CREAT | 0o600) >= 0)
else:
    seg = libc.shmget(KEY, 0, 0)
    print("segment", ctypes.string_at(libc.shmat(seg, None, 0), len(MARK)).decode() if seg >= 0 else None)
    print("queue", libc.msgget(KEY, 0) >= 0)
"""


@pytest.fixture(scope="module")
def grid():
    why = _requirements()
    if why:
        pytest.skip(why)
    g = LocalGrid(keepalive=4)
    g.start(workers=1, slots=1)
    yield g
    g.stop()


@pytest.fixture
def client(grid):
    from mcpp.cas.remote.client import RemoteClient

    c = RemoteClient(grid.url, timeout=30)
    c.connect()
    yield c
    c.close()


def _execute(client, argv: list[str], root) -> tuple[int, bytes]:
    """Run `argv` on the grid with input root `root` (a Directory whose blobs are uploaded);
    answers (the status code of the run, its stdout)."""
    from mcpp.cas.remote import exec_protocol as xp
    from mcpp.cas.remote import protocol as pb
    from mcpp.cas.remote.digests import RemoteDigest
    from mcpp.cas.remote.exec_messages import host_isa, host_os

    fn = client.digest_function
    platform = pb.Platform(properties=[pb.Platform.Property(name=n, value=v)
                                       for n, v in [("ISA", host_isa()), ("OSFamily", host_os())]])
    command = pb.Command(arguments=argv, platform=platform,
                         environment_variables=[pb.Command.EnvironmentVariable(name="PATH", value="/usr/bin:/bin")])
    cd, cb = fn.of_message(command)
    rd, rb = fn.of_message(root)
    action = pb.Action(command_digest=cd.to_proto(), input_root_digest=rd.to_proto(), platform=platform,
                       do_not_cache=True)
    ad, ab = fn.of_message(action)
    client.upload({cd: cb, rd: rb, ad: ab})
    execute = client.execute
    op = [o for o in execute(xp.ExecuteRequest(action_digest=ad.to_proto(), digest_function=fn.value,
                                               skip_cache_lookup=True), timeout=60)][-1]
    assert op.done
    if op.HasField("error") and op.error.code:
        return op.error.code, b""
    response = xp.ExecuteResponse()
    op.response.Unpack(response)
    out = response.result.stdout_raw
    if not out and response.result.stdout_digest.size_bytes:
        d = RemoteDigest(response.result.stdout_digest.hash, response.result.stdout_digest.size_bytes)
        out = client.download([d])[d]
    return response.status.code, bytes(out)


def _file_root(name: str, digest) -> object:
    from mcpp.cas.remote import protocol as pb

    return pb.Directory(files=[pb.FileNode(name=name, digest=digest)])


def test_a_digest_that_is_a_path_to_a_host_file_is_refused_by_the_worker(grid, client, tmp_path):
    from mcpp.cas.remote import protocol as pb

    secret = b"a file of the worker's host\n"
    host = tmp_path / f"secret-{len(secret)}"  # where the store would look for "hash" `…/secret`
    host.write_bytes(secret)
    path_hash = "../" * 40 + str(tmp_path / "secret").lstrip("/")
    marker = f"refused-{time.monotonic_ns()}"
    code, out = _execute(client, ["/bin/sh", "-c", f"cat leak; echo {marker}"],
                         _file_root("leak", pb.Digest(hash=path_hash, size_bytes=len(secret))))
    assert secret not in out and marker.encode() not in out  # nothing ran
    assert code == 3, (code, out)  # INVALID_ARGUMENT: malformed wherever it runs, so not retried
    failed = [e for e in grid.events(0) if e.get("event") == "action-failed"]
    assert failed and "is not a SHA256 hash" in failed[-1]["reason"], failed


def test_sysv_ipc_of_one_action_is_gone_for_the_next_on_the_same_slot(grid, client):
    from mcpp.cas.remote import protocol as pb

    before = len([e for e in grid.events(0) if e.get("event") == "action-executed"])
    tag = str(time.monotonic_ns())  # a fresh command each run: nothing comes from a cache
    code, out = _execute(client, ["/usr/bin/python3", "-c", PROBE, "plant", tag], pb.Directory())
    assert (code, out) == (0, b"planted True\n")
    code, out = _execute(client, ["/usr/bin/python3", "-c", PROBE, "look", tag], pb.Directory())
    assert code == 0 and out.decode().splitlines() == ["segment None", "queue False"], out
    runs = [e for e in grid.events(0) if e.get("event") == "action-executed"][before:]
    assert len(runs) == 2  # both ran on the one worker (one slot: one warm sandbox)


def test_a_worker_store_entry_changed_on_disk_is_downloaded_again_not_staged(grid, client):
    data = f"the header's real bytes {time.monotonic_ns()}\n".encode()
    d = client.digest_function.of_bytes(data)
    client.upload({d: data})
    root = _file_root("in.txt", d.to_proto())
    assert _execute(client, ["/bin/cat", "in.txt"], root) == (0, data)

    entry = grid.dir / "worker-0" / "worker" / "cas" / d.hash[:2] / f"{d.hash}-{d.size}"
    os.chmod(entry, 0o644)
    entry.write_bytes(data.upper())  # same size, other bytes
    os.chmod(entry, 0o444)
    code, out = _execute(client, ["/bin/sh", "-c", "cat in.txt #again"], root)
    assert (code, out) == (0, data)
    assert entry.read_bytes() == data  # healed


def test_a_result_naming_an_output_by_a_path_is_run_locally_with_a_warning(grid, tmp_path, monkeypatch):
    """The other direction: a worker (or a server) answers a compile with an `ActionResult` that
    names the object by a "digest" that is a path. The client refuses it before it names
    anything (no resource name, no store path is made of it), says so once and compiles here."""
    from mcpp.engine.bot import lease_loop as worker_loop
    from test_remote_exec import _hello, _only_worker

    real_run = worker_loop.run_leased_action

    def forging_run(action, client, *args, **kwargs):
        outcome = real_run(action, client, *args, **kwargs)
        for f in outcome.result.output_files:
            if f.path.endswith("greeting.cpp.o"):
                f.digest.hash = "../../../../../../etc/passwd"
        return outcome

    monkeypatch.setattr(worker_loop, "run_leased_action", forging_run)
    proj = _hello(tmp_path, "malformed-result test")
    try:
        with _only_worker(grid, tmp_path / "forger", "forger"):
            res = Mcpp(tmp_path / "home")("build", "--remote", grid.url, "--remote-exec", cwd=proj,
                                          env={"MCPP_REMOTE_EXEC_WAIT": "60"})
    finally:
        grid.start_worker(0)
        grid.wait_workers()
    assert res.code == 0, res.err
    warnings = [line for line in res.err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, res.err
    assert "malformed result for `compile hello:src/greeting.cpp`" in warnings[0], res.err
    assert "the action runs locally" in warnings[0]
    out = subprocess.run([str(proj / "target/dev/hello")], capture_output=True, text=True, check=True).stdout
    assert out == "Hello, world!\n"
