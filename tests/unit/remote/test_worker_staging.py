"""What `mcpp worker` stages into an action (engine/bot/leased_action.py, cas/remote/worker_cas.py),
against a real BuildGrid CAS and a real sandbox:

- a digest from the wire names a file of the worker's store only once it is parsed: an input
  root whose digests are paths (`../../…/secret-N`), of the wrong length or of a negative size,
  or whose names are not file names, is refused before anything is fetched, staged or run;
- a store entry is staged only in a state this process verified: a file changed on disk (by a
  restart's predecessor, another process, the disk) is re-hashed, removed and downloaded again.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcpp.cas.remote import protocol as pb
from mcpp.cas.remote import digests
from mcpp.cas.remote.digests import SHA256, RemoteDigest
from mcpp.cas.remote.worker_cas import WorkerCas
from mcpp.engine.bot import leased_action as worker_action
from mcpp.sandbox import make_sandbox

SECRET = b"host secret: the worker must never stage me\n"


class Recording:
    """The worker's real sandbox, remembering every spec it was asked to run."""

    def __init__(self, sandbox) -> None:
        self.sandbox, self.specs = sandbox, []

    def run(self, spec):
        self.specs.append(spec)
        return self.sandbox.run(spec)


@pytest.fixture
def sandbox(tmp_path):
    sb, _warning = make_sandbox(None, str(tmp_path / "sandbox-work"))
    yield Recording(sb)
    sb.shutdown()


@pytest.fixture
def cas(client, tmp_path):
    return WorkerCas(tmp_path / "worker" / "cas", client)


def _escape(target) -> str:
    """A "hash" that walks from the store's shard directory to `target` (without its `-SIZE`)."""
    return "../" * 40 + str(target).lstrip("/")


def _action(client, root: pb.Directory, extra: list[pb.Directory] = (), argv=("/bin/cat", "leak")):
    """Upload a Command, the Directories and an Action naming them; returns the Action."""
    fn = client.digest_function
    command = pb.Command(arguments=list(argv))
    cd, cb = fn.of_message(command)
    blobs = {cd: cb}
    for d in [root, *extra]:
        rd, data = fn.of_message(d)
        blobs[rd] = data
    client.upload(blobs)
    return pb.Action(command_digest=cd.to_proto(), input_root_digest=fn.of_message(root)[0].to_proto())


def _run(action, client, cas, sandbox, tmp_path):
    return worker_action.run_leased_action(action, client, cas, sandbox, str(tmp_path), "test-worker", {})


def _store_files(cas) -> set[str]:
    return {os.path.relpath(os.path.join(d, n), cas.root) for d, _s, names in os.walk(cas.root) for n in names}


def _malformed_roots(secret) -> dict[str, tuple[pb.Directory, list[pb.Directory]]]:
    size = len(SECRET)
    good = SHA256.of_bytes(b"good\n").to_proto()
    file_at = lambda h, n=size: pb.Directory(files=[pb.FileNode(name="leak", digest=pb.Digest(hash=h, size_bytes=n))])  # noqa: E731
    sub = pb.Directory(files=[pb.FileNode(name="leak", digest=pb.Digest(hash=_escape(secret), size_bytes=size))])
    sub_digest = SHA256.of_message(sub)[0].to_proto()
    return {
        "a file digest that is a path to a host file": (file_at(_escape(secret)), []),
        "the same, one directory down": (
            pb.Directory(directories=[pb.DirectoryNode(name="d", digest=sub_digest)]), [sub]),
        "a directory digest that is a path": (pb.Directory(directories=[pb.DirectoryNode(
            name="d", digest=pb.Digest(hash=_escape(secret.parent), size_bytes=0))]), []),
        "a hash of the wrong length": (file_at("ab" * 20), []),
        "an upper-case hash": (file_at(good.hash.upper(), good.size_bytes), []),
        "a negative size": (file_at(good.hash, -5), []),
        "a file name that climbs": (pb.Directory(files=[pb.FileNode(name="..", digest=good)]), []),
        "a file name with a slash": (pb.Directory(files=[pb.FileNode(name="../../leak", digest=good)]), []),
    }


CASES = list(_malformed_roots(Path("/secret")))


@pytest.mark.parametrize("case", CASES)
def test_an_input_root_that_names_no_blob_is_refused_before_anything_is_staged(case, client, cas, sandbox, tmp_path):
    secret_dir = tmp_path / "host"
    secret_dir.mkdir()
    secret = secret_dir / "secret"
    (secret_dir / f"secret-{len(SECRET)}").write_bytes(SECRET)  # where `../../…/secret` + "-SIZE" lands
    root, extra = _malformed_roots(secret)[case]
    client.upload({SHA256.of_bytes(b"good\n"): b"good\n"})
    action = _action(client, root, extra)
    before = _store_files(cas)

    with pytest.raises(Exception) as raised:
        outcome = _run(action, client, cas, sandbox, tmp_path)
        pytest.fail(f"the action ran: exit {outcome.exit_code}, inputs {sandbox.specs[0].inputs if sandbox.specs else {}}")
    assert isinstance(raised.value, worker_action.MalformedAction), raised.value
    assert sandbox.specs == []  # nothing staged, nothing run
    # the store gained only the Command and the root Directory it had to read to find the fault
    assert all(name.count("/") == 1 and not name.endswith(".x") for name in _store_files(cas) - before)
    assert (secret_dir / f"secret-{len(SECRET)}").read_bytes() == SECRET


@pytest.mark.parametrize("hash_, size", [
    ("../../etc/passwd", 3), ("a" * 63, 1), ("a" * 65, 1), ("A" * 64, 1), ("g" * 64, 1), ("a" * 64, -1),
])
def test_a_wire_digest_is_parsed_before_it_is_a_value(hash_, size):
    with pytest.raises(digests.BadDigest):
        RemoteDigest.from_wire(pb.Digest(hash=hash_, size_bytes=size), SHA256)
    with pytest.raises(digests.BadDigest):
        RemoteDigest(hash_, size)  # no other way round the check


def test_the_worker_store_names_files_by_parsed_digests_only(cas):
    with pytest.raises(TypeError):
        cas.path(("../../etc/passwd", 3))  # type: ignore[arg-type]


def _corrupt(path: str, keep_mtime: bool) -> None:
    """Change the file's bytes in place, at the same size and mode."""
    st = os.stat(path)
    os.chmod(path, 0o644)
    with open(path, "r+b") as f:
        data = f.read()
        f.seek(0)
        f.write(bytes(b ^ 0x20 for b in data))
    os.chmod(path, st.st_mode & 0o777)
    if keep_mtime:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.mark.parametrize("executable", [False, True])
def test_a_store_entry_left_corrupt_on_disk_is_rehashed_and_healed_before_it_is_staged(executable, client, tmp_path):
    """A restarted worker (a new `WorkerCas` over the same directory) finds an entry whose bytes
    changed at the same size, mode and mtime: it re-hashes it before its first use, removes it
    and downloads the blob again."""
    data = b"int answer() { return 42; }\n"
    d = client.digest_function.of_bytes(data)
    client.upload({d: data})
    first = WorkerCas(tmp_path / "cas", client)
    first.ensure([d])
    path = first.staged(d, executable)
    _corrupt(path, keep_mtime=True)
    assert open(path, "rb").read() != data

    restarted = WorkerCas(tmp_path / "cas", client)
    restarted.ensure([d])
    staged = restarted.staged(d, executable)
    assert open(staged, "rb").read() == data
    assert restarted.healed == 1


def test_an_entry_rewritten_while_the_worker_runs_is_healed(client, tmp_path):
    data = b"#pragma once\nint x;\n"
    d = client.digest_function.of_bytes(data)
    client.upload({d: data})
    cas = WorkerCas(tmp_path / "cas", client)
    cas.ensure([d])
    _corrupt(cas.path(d), keep_mtime=False)
    assert cas.ensure([d]) == 1  # downloaded again
    assert open(cas.staged(d, False), "rb").read() == data and cas.healed == 1


def test_an_entry_replaced_by_a_link_to_a_host_file_is_not_followed(client, tmp_path):
    data = b"the real header\n"
    d = client.digest_function.of_bytes(data)
    client.upload({d: data})
    cas = WorkerCas(tmp_path / "cas", client)
    cas.ensure([d])
    host = tmp_path / "host-file"
    host.write_bytes(b"x" * len(data))
    os.unlink(cas.path(d))
    os.symlink(host, cas.path(d))
    cas.ensure([d])
    assert not os.path.islink(cas.path(d)) and open(cas.staged(d, False), "rb").read() == data


def test_a_worker_refuses_to_run_without_a_sandbox_that_confines_actions(tmp_path, monkeypatch):
    """Where only the directory sandbox works, a worker would fill the server's action cache,
    which every client reads, with results no sandbox proved: it refuses to start instead."""
    import threading

    from mcpp.cas.home import Home
    from mcpp.engine.bot import lease_loop
    from mcpp.engine.core.errors import McppError
    from mcpp.sandbox.directory import DirSandbox
    from mcpp.sandbox.pool import SandboxPool

    made = []

    def only_dir(name, work_root, ro_roots=()):  # the fallback make_sandbox takes without bwrap
        made.append(DirSandbox(pool=SandboxPool(work_root)))
        return made[-1], "bwrap: not found"

    monkeypatch.setattr(lease_loop, "make_sandbox", only_dir)
    worker = lease_loop.Worker("grpc://127.0.0.1:9", "", None, Home(tmp_path / "home"), 1, {}, "w", lambda e: None)
    stop = threading.Event()
    threading.Timer(5, stop.set).start()  # a worker that does start waits for a server: end it
    with pytest.raises(McppError, match="only in a sandbox that confines them: bwrap: not found"):
        worker.run(stop)
    assert len(made) == 1 and not stop.is_set()  # refused at once, before asking the server anything
