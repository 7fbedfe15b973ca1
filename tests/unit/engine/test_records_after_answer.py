"""A server's build whose command ends with it answers before its records are written
(engine/build/compose.py `_records_after_answer`, engine/build/memory.py `after_answer`): the build
returns with its outputs in place while its action records are not yet on disk and its lock is
held; the tasks it left write the records and release the lock, and the next build finds every
action fresh. Real compiler, real sandbox, in process with a memory that answers first."""
from __future__ import annotations

import fcntl
import os
import subprocess

import pytest

from mcpp.engine.build import compose
from mcpp.engine.build.compose import BuildOptions
from mcpp.engine.build.memory import NoMemory
from mcpp.engine.report.reporter import Reporter


class AnswersFirst(NoMemory):
    """A host that answers first, as a server's build child does: the tasks wait for `answered`."""

    def __init__(self) -> None:
        super().__init__()
        self.after = []
        self.teardown = []

    def answers_first(self) -> bool:
        return True

    def after_answer(self, task) -> None:
        self.after.append(task)

    def after_reply(self, task) -> None:
        self.teardown.append(task)

    def answered(self) -> None:
        for task in self.after + self.teardown:
            task()
        self.after, self.teardown = [], []


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("MCPP_HOME", str(tmp_path / "home"))
    root = tmp_path / "p"
    (root / "src").mkdir(parents=True)
    (root / "mcpp.toml").write_text('[package]\nname = "p"\nversion = "0.1.0"\n')
    (root / "src" / "main.cpp").write_text('#include <cstdio>\nint main() { std::puts("one"); }\n')
    return root


def _locked(lock_file: str) -> bool:
    fd = os.open(lock_file, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def test_the_records_and_the_lock_follow_the_answer(project):
    records = project / "target" / "dev" / ".mcpp" / "actions"
    memory = AnswersFirst()
    outcome = compose.build(BuildOptions(cwd=str(project), jobs=2), Reporter(quiet=True), memory=memory)
    assert outcome.result.ok
    # the answer: the binary is in place and runs ...
    binary = project / "target" / "dev" / "p"
    assert subprocess.run([binary], capture_output=True, text=True).stdout == "one\n"
    # ... while the records are not written and the target directory is still locked
    assert not records.exists()
    assert _locked(str(project / "target" / ".lock"))
    assert memory.after  # the records, then the lock
    memory.answered()
    assert records.exists()
    assert not _locked(str(project / "target" / ".lock"))
    again = compose.build(BuildOptions(cwd=str(project), jobs=2), Reporter(quiet=True), memory=AnswersFirst())
    assert again.result.ok and not again.result.succeeded  # every action fresh: the records held


def test_a_command_that_runs_what_it_built_writes_its_records_before_it_goes_on(project):
    memory = AnswersFirst()
    compose.build(BuildOptions(cwd=str(project), jobs=2, executes=True), Reporter(quiet=True), memory=memory)
    assert (project / "target" / "dev" / ".mcpp" / "actions").exists()
    assert not _locked(str(project / "target" / ".lock"))  # a `mcpp run` program does not hold it
    assert memory.after == []
    memory.answered()


def test_the_in_process_build_writes_its_records_before_it_returns(project):
    compose.build(BuildOptions(cwd=str(project), jobs=2), Reporter(quiet=True), memory=NoMemory())
    assert (project / "target" / "dev" / ".mcpp" / "actions").exists()
    assert not _locked(str(project / "target" / ".lock"))
