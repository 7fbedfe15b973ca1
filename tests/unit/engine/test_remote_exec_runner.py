"""Which actions `--remote-exec` sends to workers, and which stay on this machine."""
from __future__ import annotations

from mcpp.cas.action import Action, ActionKind
from mcpp.engine.exec.remote_exec_runner import RemoteExecRunner, remote_exec_jobs
from mcpp.engine.trust.policy import TrustPolicy


class _Executor:
    disabled = None


def _runner(sandbox: str | None = None) -> RemoteExecRunner:
    return RemoteExecRunner(lambda: None, "/nonexistent", lambda rel: rel, _Executor(), 2, TrustPolicy(sandbox))


def _action(kind=ActionKind.COMPILE, tools=("/usr/bin/g++",), outputs=("obj/a.o",)) -> Action:
    return Action(id="x", argv=(tools[0], "-c"), outputs=outputs, tools=tools, kind=kind)


def test_compiles_archives_and_links_with_system_tools_go_remote():
    r = _runner()
    assert r.remote_ok(_action())
    assert r.remote_ok(_action(ActionKind.ARCHIVE, tools=("/usr/bin/x86_64-linux-gnu-ar",)))
    assert r.remote_ok(_action(ActionKind.LINK))


def test_rules_unsandboxed_runs_tree_outputs_and_built_tools_stay_local():
    assert not _runner().remote_ok(_action(ActionKind.RULE))  # build-program rules, `check` ones too
    assert not _runner("off").remote_ok(_action())
    assert not _runner().remote_ok(_action(outputs=("gen/docs/",)))
    assert not _runner().remote_ok(_action(tools=("/home/me/.mcpp/tools/protoc",)))


def test_jobs_default_to_four_per_core_when_executing_remotely():
    import os

    assert remote_exec_jobs(0) == 4 * (os.cpu_count() or 1)
    assert remote_exec_jobs(3) == 3


def test_a_remote_run_says_which_worker_ran_it(tmp_path):
    from mcpp.cas.remote.execution import ExecResult

    class Answering(_Executor):
        def run(self, action, inputs, execroot):
            return ExecResult(0, b"", b"", 0.05, False, "host-7/0")

    r = RemoteExecRunner(lambda: None, str(tmp_path), lambda rel: rel, Answering(), 2, TrustPolicy(None))
    res = r.run(_action())
    assert (res.exit_code, res.worker) == (0, "host-7/0")
