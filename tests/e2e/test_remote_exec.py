"""Remote execution end to end: a real PostgreSQL cluster, a real BuildGrid (CAS, action cache,
Execution, Bots with the SQL scheduler) and two real `mcpp worker` processes (bwrap), started by
the fixture through `scripts/buildgrid/local_grid.py`.

- a 200-unit project built with `--remote-exec` from an empty `$MCPP_HOME`: every compile was
  run by a worker (the workers' logs name every object file) and the binary is byte-identical
  to a local build's;
- a worker SIGKILLed mid-build: BuildGrid requeues its lease, the build succeeds, the program
  prints what the locally built one prints;
- a compile error run remotely prints exactly the local diagnostic and exit code;
- an action whose remote run outlives its timeout is reported as timed out, and its process
  group is gone from the worker;
- faults: an unreachable server and a grid whose workers are all gone each give one warning and
  a local build.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from e2e_support import REPO, Mcpp, copy_example, write_tree
from test_input_saved_before_staging import EDITED, PROJECT as SAVED_PROJECT, SAVED_AFTER_HASHING

sys.path.insert(0, str(REPO / "scripts" / "buildgrid"))
from local_grid import LocalGrid, _pg_tool  # noqa: E402


def _requirements() -> str | None:
    try:
        _pg_tool("initdb")
        import psycopg2  # noqa: F401
    except (FileNotFoundError, ImportError) as e:
        return f"remote execution needs PostgreSQL and psycopg2 ({e})"
    if not (Path(sys.executable).parent / "bgd").exists() and shutil.which("bgd") is None:
        return "BuildGrid is not installed (pip install -e '.[test]')"
    return None


@pytest.fixture(scope="module")
def grid():
    why = _requirements()
    if why:
        pytest.skip(why)
    g = LocalGrid(keepalive=4)
    g.start(workers=2, slots=1)
    yield g
    g.stop()


@pytest.fixture(scope="module")
def project200(tmp_path_factory):
    root = tmp_path_factory.mktemp("p200") / "proj"
    subprocess.run([sys.executable, str(REPO / "bench" / "gen_project.py"), "--sources", "200", "--out", str(root)],
                   check=True, capture_output=True)
    return root


@pytest.fixture(scope="module")
def local_build(project200, tmp_path_factory):
    """The 200-unit project built here (-j2): its binary's bytes and what the program prints."""
    local = tmp_path_factory.mktemp("local") / "proj"
    shutil.copytree(project200, local)
    Mcpp(local.parent / "home")("build", "-j2", cwd=local, check=True)
    binary = local / "target/dev/bench"
    return binary.read_bytes(), subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout


def _objects(target: Path) -> set[str]:
    return {str(p.relative_to(target.parent)) for p in target.rglob("*.o")}


def _executed_outputs(grid: LocalGrid) -> dict[str, int]:
    """output path -> how many times a worker produced it (across every worker's log)."""
    seen: dict[str, int] = {}
    for i in (0, 1, 2):
        for e in grid.events(i):
            if e.get("event") == "action-executed":
                for o in e["outputs"]:
                    seen[o] = seen.get(o, 0) + 1
    return seen


@pytest.mark.heavy
def test_a_clean_remote_build_runs_every_compile_on_a_worker_and_matches_a_local_build(grid, project200,
                                                                                       local_build, tmp_path):
    remote = tmp_path / "remote"
    shutil.copytree(project200, remote)
    mcpp = Mcpp(tmp_path / "home-remote")  # empty: nothing can come from a local cache
    res = mcpp("build", "--remote", grid.url, "--remote-exec", "--message-format", "json", cwd=remote, check=True)
    assert "warning" not in res.err, res.err

    compiles = [e for e in res.events if e.get("reason") == "action-finished" and e.get("kind") == "compile"]
    assert len(compiles) == 201 and all(e["status"] == "executed" for e in compiles)
    # each event names the worker that ran it (the result's ExecutedActionMetadata.worker)
    assert len({e.get("worker") for e in compiles}) == 2 and all(e.get("worker") for e in compiles), \
        sorted({str(e.get("worker")) for e in compiles})
    objects = _objects(remote / "target")
    assert len(objects) == 201
    produced = _executed_outputs(grid)
    assert objects <= set(produced), sorted(objects - set(produced))[:5]
    # both workers took part
    assert all(any(e.get("event") == "action-executed" for e in grid.events(i)) for i in (0, 1))
    assert (remote / "target/dev/bench").read_bytes() == local_build[0]
    explained = mcpp("explain", compiles[0]["id"], cwd=remote, check=True).out
    assert f"origin: executed remotely on {compiles[0]['worker']}" in explained, explained


@pytest.mark.heavy
def test_a_worker_killed_mid_build_loses_nothing(grid, tmp_path):
    proj = tmp_path / "kill"
    subprocess.run([sys.executable, str(REPO / "bench" / "gen_project.py"), "--sources", "40", "--out", str(proj)],
                   check=True, capture_output=True)
    local = tmp_path / "local"
    shutil.copytree(proj, local)
    Mcpp(tmp_path / "home-local")("build", "-j2", cwd=local, check=True)
    reference = subprocess.run([str(local / "target/dev/bench")], capture_output=True, text=True, check=True).stdout
    # New compile commands (the define changes no code), so no result is in the server's cache.
    toml = proj / "mcpp.toml"
    toml.write_text(toml.read_text().replace('include_dirs = ["include"]',
                                             'include_dirs = ["include"]\ncxxflags = ["-DKILL_TEST=1"]'))
    before = len([e for e in grid.events(0) if e.get("event") == "action-executed"])
    env = {**os.environ, "MCPP_HOME": str(tmp_path / "home"), "MCPP_REMOTE_EXEC_WAIT": "60"}
    build = subprocess.Popen([Mcpp(tmp_path / "home").exe, "build", "--remote", grid.url, "--remote-exec"],
                             cwd=proj, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while len([e for e in grid.events(0) if e.get("event") == "action-executed"]) < before + 4:
        assert build.poll() is None and time.monotonic() < deadline, build.communicate()
        time.sleep(0.05)
    grid.kill_worker(0)  # SIGKILL to its process group: mid-lease or between two
    out, err = build.communicate(timeout=120)
    grid.start_worker(0)  # for the tests after this one
    assert build.returncode == 0, err
    assert "warning" not in err, err  # nothing fell back to a local run
    binary = proj / "target/dev/bench"
    assert subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout == reference
    grid.wait_workers()


BROKEN = "int main() {\n    int x = ;\n    return undefined_name;\n}\n"


def test_a_remote_compile_error_reads_exactly_as_a_local_one(grid, tmp_path):
    outcomes = []
    for name, args in (("local", ()), ("remote", ("--remote", grid.url, "--remote-exec"))):
        proj = copy_example("01-hello", tmp_path / name)
        (proj / "src/main.cpp").write_text(BROKEN)
        res = Mcpp(tmp_path / f"home-{name}")("build", *args, cwd=proj)
        outcomes.append((res.code, res.err))
    assert outcomes[0][0] != 0
    assert "error: expected primary-expression" in outcomes[0][1]
    assert outcomes[1] == outcomes[0]
    failed = [e for i in (0, 1) for e in grid.events(i)
              if e.get("event") == "action-executed" and e["exit_code"] != 0]
    assert failed, "the failing compile did not run on a worker"


def test_a_remote_compile_with_a_warning_prints_it_as_a_local_one_and_keeps_its_object(grid, tmp_path):
    """A compile that succeeds with a diagnostic: its stderr and its outputs come back in one
    download, and both reach the build (the diagnostic on screen, the object in the link)."""
    outcomes = []
    before = _executed_outputs(grid).get("target/dev/.mcpp/obj/hello/src/greeting.cpp.o", 0)
    for name, args in (("local", ()), ("remote", ("--remote", grid.url, "--remote-exec"))):
        proj = copy_example("01-hello", tmp_path / name)
        with open(proj / "src/greeting.cpp", "a") as f:
            # code of its own too: a later test's plain hello must not find this link cached
            f.write(f'#warning "checked {os.getpid()}"\nint warned_{os.getpid()}() {{ return 1; }}\n')
        res = Mcpp(tmp_path / f"home-{name}")("build", *args, "--message-format", "json", cwd=proj)
        program = subprocess.run([str(proj / "target/dev/hello")], capture_output=True, text=True).stdout
        compiles = {e["id"]: e["status"] for e in res.events if e.get("reason") == "action-finished"}
        outcomes.append((res.code, [line for line in res.err.splitlines() if "warning" in line], program))
    assert outcomes[0][0] == 0 and any("checked" in line for line in outcomes[0][1]), outcomes[0]
    assert outcomes[1] == outcomes[0]
    assert compiles["compile hello:src/greeting.cpp"] == "executed"
    assert _executed_outputs(grid).get("target/dev/.mcpp/obj/hello/src/greeting.cpp.o", 0) == before + 1


def test_a_remote_action_past_its_timeout_is_killed_with_its_process_group(grid):
    from mcpp.cas.remote import exec_protocol as xp
    from mcpp.cas.remote import protocol as pb
    from mcpp.cas.remote.client import RemoteClient
    from mcpp.cas.remote.exec_messages import host_isa, host_os

    client = RemoteClient(grid.url, timeout=30)
    client.connect()
    fn = client.digest_function
    marker = f"{os.getpid()}.{time.monotonic_ns() % 1000}"
    props = [("ISA", host_isa()), ("OSFamily", host_os())]
    command = pb.Command(arguments=["/bin/sh", "-c", f"sleep 3{marker} & sleep 3{marker}"],
                         platform=pb.Platform(properties=[pb.Platform.Property(name=n, value=v) for n, v in
                                                          props + [("mcpp-timeout", "1.0")]]))
    cd, cb = fn.of_message(command)
    root, rb = fn.of_message(pb.Directory())
    action = pb.Action(command_digest=cd.to_proto(), input_root_digest=root.to_proto(),
                       platform=pb.Platform(properties=[pb.Platform.Property(name=n, value=v) for n, v in props]))
    ad, ab = fn.of_message(action)
    client.upload({cd: cb, root: rb, ad: ab})
    execute = client.execute
    start = time.monotonic()
    op = [o for o in execute(xp.ExecuteRequest(action_digest=ad.to_proto(), digest_function=fn.value),
                             timeout=60)][-1]
    assert op.done
    response = xp.ExecuteResponse()
    op.response.Unpack(response)
    assert response.status.code == 4, response  # DEADLINE_EXCEEDED
    assert time.monotonic() - start < 15
    leftovers = subprocess.run(["pgrep", "-f", f"sleep 3{marker}"], capture_output=True, text=True).stdout
    assert leftovers == ""
    client.close()


def test_an_unreachable_server_is_one_warning_and_a_local_build(tmp_path):
    proj = copy_example("01-hello", tmp_path)
    res = Mcpp(tmp_path / "home")("build", "--remote", f"unix:{tmp_path}/nobody.sock", "--remote-exec", cwd=proj)
    assert res.code == 0, res.err
    warnings = [line for line in res.err.splitlines() if line.startswith("warning:")]
    # the cache and execution share one endpoint: one connection tried, one warning
    assert len(warnings) == 1 and "remote cache and execution at" in warnings[0], res.err
    assert "building locally" in warnings[0], res.err
    assert (proj / "target/dev/hello").exists()


def test_when_every_worker_is_gone_the_build_waits_a_bounded_time_then_runs_locally(grid, tmp_path):
    for i in list(grid.workers):
        grid.kill_worker(i)
    proj = copy_example("01-hello", tmp_path)
    start = time.monotonic()
    res = Mcpp(tmp_path / "home")("build", "--remote", grid.url, "--remote-exec", cwd=proj,
                                  env={"MCPP_REMOTE_EXEC_WAIT": "3"})
    assert res.code == 0, res.err
    warnings = [line for line in res.err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "no worker took an action for 3s" in warnings[0], res.err
    assert time.monotonic() - start < 30
    assert (proj / "target/dev/hello").exists()


@contextlib.contextmanager
def _only_worker(grid: LocalGrid, home: Path, name: str):
    """An `mcpp worker` run in this process (so a test can wrap its functions), the grid's only
    worker while the block runs: the others are killed first and their bot sessions left to
    expire, so that nothing is leased to them. Yields the list its log events go to."""
    from mcpp.cas.home import Home
    from mcpp.cas.remote.config import parse_remote_url
    from mcpp.engine.bot import lease_loop as worker_loop
    from mcpp.engine.bot.command import _offered_tools

    for i in list(grid.workers):
        grid.kill_worker(i)
    time.sleep(grid.keepalive + 2)
    events: list[dict] = []
    worker = worker_loop.Worker(parse_remote_url(grid.url), grid.instance, None, Home(home), 1,
                                _offered_tools(("gcc",), (), Home(home)), name, events.append)
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield events
    finally:
        stop.set()
        thread.join(timeout=30)


def _hello(tmp_path: Path, tag: str) -> Path:
    """01-hello with a greeting.cpp no other test sent (so no result is in the server's cache):
    a definition of its own, not a comment, so that its object, and with it the link's key,
    differ too (a comment leaves the object, hence the link, as an earlier test cached them)."""
    proj = copy_example("01-hello", tmp_path / "proj")
    with open(proj / "src/greeting.cpp", "a") as f:
        f.write(f'extern const char mcpp_test_tag_{time.time_ns()}[] = "{tag}";\n')
    return proj


def test_an_output_whose_bytes_do_not_match_its_digest_is_never_linked(grid, tmp_path, monkeypatch):
    """The attack: a worker (or whoever can write the server's storage) answers a compile with an
    `ActionResult` naming the real object's digest while the CAS holds other bytes under it: here
    the object with "Hello, " patched to "Pwned, " (same size, still a valid object, so only the
    hash check can tell). The client must refuse those bytes and run the compile itself (a warning
    says so); were they accepted, the linked program would print "Pwned, world!"."""
    from mcpp.engine.bot import lease_loop as worker_loop

    forged = []
    real_run = worker_loop.run_leased_action

    def forging_run(action, client, *args, **kwargs):
        outcome = real_run(action, client, *args, **kwargs)
        for f in outcome.result.output_files:
            if f.path.endswith("greeting.cpp.o"):
                stored = grid.dir / "cas" / "cas" / "objects" / f.digest.hash[:2] / f.digest.hash[2:]
                data = stored.read_bytes()
                assert b"Hello, " in data
                tmp = stored.with_name(stored.name + ".forged")
                tmp.write_bytes(data.replace(b"Hello, ", b"Pwned, "))
                os.replace(tmp, stored)
                forged.append((stored, data))
        return outcome

    monkeypatch.setattr(worker_loop, "run_leased_action", forging_run)
    proj = _hello(tmp_path, "forged-output test")
    with _only_worker(grid, tmp_path / "forger", "forger") as events:
        try:
            res = Mcpp(tmp_path / "home")("build", "--remote", grid.url, "--remote-exec", cwd=proj,
                                          env={"MCPP_REMOTE_EXEC_WAIT": "60"})
        finally:  # the genuine bytes back: later builds of the same object must not meet the forgery
            for stored, data in forged:
                stored.write_bytes(data)
    assert len(forged) == 1, (forged, events)  # the compile of greeting.cpp ran on the forger
    assert res.code == 0, res.err
    out = subprocess.run([str(proj / "target/dev/hello")], capture_output=True, text=True, check=True).stdout
    assert out == "Hello, world!\n"
    warnings = [line for line in res.err.splitlines() if line.startswith("warning:")]
    assert warnings and "corrupt blob for `compile hello:src/greeting.cpp`" in warnings[0], res.err
    assert "the action runs locally" in warnings[0], res.err
    # The link's input is that digest too, which the server now holds forged: the worker's own
    # check refuses it (the lease fails), and the client runs the link here as well.
    assert any(e.get("event") == "action-failed" and "corrupt" in e["reason"] for e in events), events


def test_a_worker_slot_runs_its_actions_in_one_warm_sandbox(grid, tmp_path, monkeypatch):
    """The bwrap sandbox keeps one namespace and executor process per thread; a worker slot runs
    every action it leases on one thread, so a build's actions on a one-slot worker start one
    executor, not one each (a fresh one costs about as much as a small compile)."""
    from mcpp.sandbox import bwrap

    started = []

    class Counted(bwrap.Worker):
        def __init__(self, *args, **kwargs):
            started.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(bwrap, "Worker", Counted)
    proj = _hello(tmp_path, "warm-sandbox test")
    with _only_worker(grid, tmp_path / "warm", "warm") as events:
        res = Mcpp(tmp_path / "home")("build", "--remote", grid.url, "--remote-exec", cwd=proj)
    assert res.code == 0 and "warning" not in res.err, res.err
    runs = [e for e in events if e.get("event") == "action-executed"]
    if not any(e.get("sandbox") == "bwrap" for e in events if e.get("event") == "worker-started"):
        pytest.skip("bwrap does not work here: the directory sandbox has no per-thread executor to keep")
    # greeting.cpp's compile and the link at least (main.cpp's may come from the server's cache)
    assert len(runs) >= 2, events
    assert len(started) == 1, started


def test_an_input_saved_after_the_build_hashed_it_runs_remotely_and_is_not_cached(grid, tmp_path):
    """engine/exec/staging.py under `--remote-exec`: the worker compiles the bytes staged (the
    new ones), whose result must not be kept under the key of the bytes the build hashed; with
    the old bytes back and target/ removed, the compile runs again (remotely) and the program
    is the old bytes' program."""
    root, home = write_tree(tmp_path / "p", SAVED_PROJECT), tmp_path / "home"
    remote = ["--remote", grid.url, "--remote-exec"]
    with _only_worker(grid, tmp_path / "worker", "saved") as events:
        first = subprocess.run([sys.executable, "-c", SAVED_AFTER_HASHING, "build", *remote], cwd=root,
                               capture_output=True, text=True,
                               env={**os.environ, "MCPP_HOME": str(home), "MCPP_NO_SERVER": "1",
                                    "MCPP_REMOTE_EXEC_WAIT": "60"})
        assert first.returncode == 0, first.stderr
        assert (root / "src/util.cpp").read_text() == EDITED
        assert "`src/util.cpp` changed during the build" in first.stderr, first.stderr
        assert subprocess.run([str(root / "target/dev/hello")]).returncode == 7
        ran = [o for e in events if e.get("event") == "action-executed" for o in e["outputs"]]
        assert any(o.endswith("util.cpp.o") for o in ran), ("the compile did not run on the worker", events)
        (root / "src/util.cpp").write_text(SAVED_PROJECT["src/util.cpp"])
        shutil.rmtree(root / "target")
        again = Mcpp(home)("build", *remote, "--message-format", "json", cwd=root,
                           env={"MCPP_REMOTE_EXEC_WAIT": "60"})
    assert again.code == 0, again.err
    assert "compile hello:src/util.cpp" in again.executed("compile"), again.err
    assert subprocess.run([str(root / "target/dev/hello")]).returncode == 0
