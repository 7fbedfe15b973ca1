"""The sandbox made ahead of a build's first action (engine/exec/sandbox_warm_up.py), the worker whose
answer stands for the bwrap probe (sandbox/select.py), and the teardown left for after the
client's answer (a build's `BuildMemory`: engine/build/memory.py, engine/server/child_memory.py).
Real bwrap, real workers."""
from __future__ import annotations

import os

import pytest

from mcpp.engine.exec import sandbox_warm_up
from mcpp.engine.build.memory import NoMemory
from mcpp.engine.core.errors import McppError
from mcpp.engine.exec.sandbox_warm_up import SandboxWarmUp
from mcpp.engine.server.child_memory import ChildMemory
from mcpp.engine.server.plan_memo import Given
from mcpp.sandbox import SandboxSpec, SandboxUnavailable, bwrap as bwrap_module, select, worker
from mcpp.sandbox.bwrap import BwrapSandbox
from mcpp.sandbox.slot import SLOT_SUFFIX


@pytest.fixture
def work_root(work_root, make):
    make("bwrap")  # skips where bwrap cannot run, as every bwrap test here does
    return work_root


def _slots(work_root):
    base = os.path.join(work_root, "sandbox")
    return sorted(n for n in os.listdir(base) if n.endswith(SLOT_SUFFIX)) if os.path.isdir(base) else []


def _spec(argv):
    return SandboxSpec(argv=tuple(argv), env={"PATH": "/usr/bin:/bin"}, inputs={}, tools=(), outputs=(),
                       label="//t:a")


def test_a_worker_that_answers_stands_for_the_probe(work_root, monkeypatch):
    monkeypatch.setattr(select, "probe_bwrap", lambda *a: pytest.fail("the probe ran"))
    sandbox, warning = select.begin_sandbox(None, work_root)()
    try:
        assert isinstance(sandbox, BwrapSandbox) and warning is None
        assert len(_slots(work_root)) == 1  # the worker started ahead, idle
        assert sandbox.run(_spec(["echo", "hi"])).stdout == b"hi\n"
        assert len(_slots(work_root)) == 1  # and it ran the first action
    finally:
        sandbox.shutdown()


def test_a_worker_that_cannot_start_leaves_the_choice_to_the_probe(work_root, monkeypatch):
    monkeypatch.setattr(worker, "PYTHON", "/nonexistent/python3")
    monkeypatch.setattr(bwrap_module, "PYTHON", "/nonexistent/python3")
    probed = []
    real = select.probe_bwrap
    monkeypatch.setattr(select, "probe_bwrap", lambda *a: probed.append(1) or real(*a))
    sandbox, _ = select.begin_sandbox(None, work_root)()
    try:
        assert probed == [1]
        assert sandbox.run(_spec(["echo", "hi"])).stdout == b"hi\n"  # one bwrap per action
    finally:
        sandbox.shutdown()


def test_the_warm_ups_worker_serves_the_actions_of_every_thread_and_goes_with_close(work_root, one_thread_after_another):
    warm = SandboxWarmUp((None, work_root, ()))  # the worker is started here, on the test's main thread
    assert len(_slots(work_root)) == 1
    sandbox = warm.get()
    assert warm.get() is sandbox
    results = []

    one_thread_after_another(lambda: results.append(sandbox.run(_spec(["sh", "-c", "echo $$"]))))
    assert [r.exit_code for r in results] == [0, 0]
    assert len(_slots(work_root)) == 1
    warm.close()
    assert _slots(work_root) == []


def test_an_error_making_the_sandbox_reaches_every_action_that_asks(work_root, monkeypatch):
    def begin(*settings):
        def finish():
            raise SandboxUnavailable("--sandbox bwrap: bwrap does not work here")
        return finish

    monkeypatch.setattr(sandbox_warm_up, "begin_sandbox", begin)
    warm = SandboxWarmUp(("bwrap", work_root, ()))
    for _ in range(2):
        with pytest.raises(McppError, match="does not work here"):
            warm.get()
    warm.close()


@pytest.mark.parametrize("memory, expected", [
    (NoMemory(), False),  # in process: no watcher to ask
    (ChildMemory(None, {}), True),  # no earlier build of this request to go by
    (ChildMemory(Given(entry=None, changed=set()), {}), False),  # the watcher saw nothing change: a no-op
    (ChildMemory(Given(entry=None, changed={"/w/src/a.cpp"}), {}), True),
])
def test_a_server_build_warms_up_only_when_something_changed(memory, expected):
    assert memory.likely_work() is expected


def test_teardown_waits_for_the_reply_only_in_a_build_child():
    done = []
    NoMemory().after_reply(lambda: done.append("in process"))
    assert done == ["in process"]  # no reply to wait for: at once

    logged = []
    memory = ChildMemory(None, {})
    memory.after_reply(lambda: done.append("first"))
    memory.after_reply(lambda: 1 / 0)
    memory.after_reply(lambda: done.append("after a failure"))
    assert done == ["in process"]
    memory.run_after_reply(logged.append)
    assert done == ["in process", "first", "after a failure"]
    assert len(logged) == 1 and "ZeroDivisionError" in logged[0]


def test_a_warning_about_the_sandbox_made_ahead_is_shown_once_by_the_build_that_uses_it(work_root, monkeypatch):
    class Made:
        def shutdown(self):
            pass

    monkeypatch.setattr(sandbox_warm_up, "begin_sandbox",
                        lambda *settings: lambda: (Made(), "bwrap does not work here; using the directory sandbox"))
    warm = SandboxWarmUp((None, work_root, ()))
    shown = []
    warm.report = shown.append
    warm.get()
    warm.get()
    assert shown == ["bwrap does not work here; using the directory sandbox"]
    warm.close()


def _early(settings: tuple) -> ChildMemory:
    """A build child whose last build of the same request used `settings`, and saw a change."""
    memory = ChildMemory(Given(entry=None, changed={"/w/src/a.cpp"}, sandbox=settings), {})
    memory.start_sandbox()
    return memory


def test_a_build_adopts_the_early_warm_up_only_for_the_sandbox_it_was_started_for(work_root):
    settings = (None, work_root, ())
    memory = _early(settings)
    early = memory.sandbox(settings)
    assert early is not None and early.settings == settings
    assert memory.sandbox(settings) is None  # taken once
    early.close()

    memory = _early(settings)
    assert memory.sandbox(("dir", work_root, ())) is None  # another sandbox: this one goes, after the reply
    assert len(_slots(work_root)) == 1
    memory.run_after_reply(lambda text: pytest.fail(text))
    assert _slots(work_root) == []
    assert memory.hand_off().sandbox == ("dir", work_root, ())  # what the next build will start early


def test_a_build_child_starts_no_sandbox_early_when_nothing_changed(work_root):
    memory = ChildMemory(Given(entry=None, changed=set(), sandbox=(None, work_root, ())), {})
    memory.start_sandbox()
    assert _slots(work_root) == [] and memory.sandbox((None, work_root, ())) is None


def test_an_early_warm_up_no_build_adopted_is_closed_after_the_answer(work_root):
    memory = _early((None, work_root, ()))
    assert len(_slots(work_root)) == 1
    memory.hand_off()
    assert len(_slots(work_root)) == 1  # nothing the answer waits for
    memory.run_after_reply(lambda text: pytest.fail(text))
    assert _slots(work_root) == []
    assert memory.sandbox((None, work_root, ())) is None


def test_an_early_warm_up_begun_before_a_payload_was_installed_is_not_adopted(work_root, tmp_path):
    payload = tmp_path / "payload-root"
    settings = (None, work_root, (str(payload),))
    memory = _early(settings)
    payload.mkdir()  # installed by this build, after the worker's mounts were fixed
    assert memory.sandbox(settings) is None
    memory.run_after_reply(lambda text: pytest.fail(text))
    assert _slots(work_root) == []


def _in_fork(child) -> tuple[int, int]:
    """Fork; the child runs `child(write)` and exits at once (os._exit). (pid, read end)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            child(lambda text: os.write(w, text.encode()))
        except BaseException as e:  # noqa: BLE001 - told to the test through the pipe
            os.write(w, f"child failed: {e!r}".encode())
        finally:
            os._exit(0)
    os.close(w)
    return pid, r


def _read_all(fd: int) -> str:
    out = b""
    while chunk := os.read(fd, 4096):
        out += chunk
    os.close(fd)
    return out.decode()


def test_a_worker_begun_in_one_process_runs_the_actions_of_the_fork_that_takes_it_over(work_root):
    """A warm server begins the next build's sandbox and its build child takes the worker over
    (engine/server/sandbox_ahead.py): the fork runs its actions in that worker, watches it through
    a pidfd (it is not the fork's child), and ends it and its slot when it shuts its sandbox
    down; the starter, which let go of it, reaps its process."""
    begun = select.begin_sandbox("bwrap", work_root)
    assert begun.open_pidfd()

    def child(say):
        begun.take_over()
        sandbox, _ = begun()
        result = sandbox.run(_spec(["echo", "hi"]))
        say(f"{result.stdout!r} {type(begun.worker.proc).__name__} {begun.worker.alive}")
        sandbox.shutdown()

    pid, r = _in_fork(child)
    proc = begun.let_go()
    assert _read_all(r) == "b'hi\\n' ForeignProcess True"
    assert os.waitpid(pid, 0)[1] == 0
    assert proc.wait(timeout=10) is not None  # the fork ended the worker; the starter reaps it
    assert _slots(work_root) == []  # and the fork removed its slot
    os.close(begun.pidfd)


def test_a_worker_taken_over_ends_when_the_fork_dies_without_a_word(work_root):
    """The starter lets go of its ends of the worker's pipes: when the fork that took the worker
    dies (killed, mid-build), nothing holds the worker's requests open, so it ends as well and is
    not left idling for the starter's lifetime."""
    begun = select.begin_sandbox("bwrap", work_root)
    assert begun.open_pidfd()

    def child(say):
        begun.take_over()
        begun()  # the worker's answer read: it is this process's
        say("taken")
        os.kill(os.getpid(), 9)

    pid, r = _in_fork(child)
    proc = begun.let_go()
    assert _read_all(r) == "taken"
    os.waitpid(pid, 0)
    assert proc.wait(timeout=10) is not None
    os.close(begun.pidfd)


def test_a_begun_sandbox_nobody_took_is_closed_by_its_starter(work_root):
    begun = select.begin_sandbox("bwrap", work_root)
    assert begun.open_pidfd()
    proc = begun.worker.proc
    assert _slots(work_root) != []
    begun.close()
    assert proc.returncode is not None and _slots(work_root) == []
