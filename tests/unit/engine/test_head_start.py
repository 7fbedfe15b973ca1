"""A first build's first action begun before the schedule (engine/exec/head_start.py), in a real
staging sandbox (the directory sandbox): its run is taken only for the action the plan holds
unchanged; otherwise it is waited for and discarded, and outputs no action claims are removed."""
from __future__ import annotations

import os

import pytest
from engine_testdata import write

from mcpp.cas.action import Action
from mcpp.cas.digest import digest_file
from mcpp.cas.home import Home
from mcpp.engine.exec.head_start import HeadStart, adoptable
from mcpp.engine.exec.stores import Stores
from mcpp.sandbox import LocalSandbox, SandboxPool

UPPER = Action(id="upper", argv=("/bin/sh", "-c", "tr a-z A-Z < src/in.txt > target/dev/a.txt"),
               inputs=("src/in.txt",), outputs=("target/dev/a.txt",))


@pytest.fixture
def head(execroot, tmp_path):
    write(execroot, "src/in.txt", "hello")
    sandbox = LocalSandbox(pool=SandboxPool(str(tmp_path / "work")))
    h = HeadStart(str(execroot), lambda: sandbox, lambda rel: digest_file(os.path.join(execroot, rel)),
                  Stores.open(Home(tmp_path / "home")), lambda a: a)
    yield h
    h.close()
    sandbox.shutdown()


def test_the_plans_own_action_is_taken_with_its_run(head, execroot):
    head.offer(UPPER)
    head.offer(Action(id="second", argv=("/bin/false",), outputs=("x",)))  # one head start, no more
    assert head.settle({"upper": UPPER}, {"upper": ()}) == "upper"
    res = head.take("upper")
    assert res is not None and res.exit_code == 0, res
    assert (execroot / "target/dev/a.txt").read_text() == "HELLO"
    assert head.take("second") is None
    head.close()
    assert (execroot / "target/dev/a.txt").exists()  # taken: the pipeline stores and records it


@pytest.mark.parametrize("plan, prereqs", [
    ({"upper": Action(id="upper", argv=("/bin/sh", "-c", "echo other > target/dev/a.txt"),
                      inputs=("src/in.txt",), outputs=("target/dev/a.txt",))}, {"upper": ()}),
    ({"upper": UPPER}, {"upper": ("generator",)}),
], ids=["planned otherwise", "waits on another action"])
def test_a_run_the_plan_does_not_hold_as_started_is_waited_for_and_not_taken(head, execroot, plan, prereqs):
    head.offer(UPPER)
    assert head.settle(plan, prereqs) is None
    assert head.take("upper") is None  # the caller runs the plan's action: after this one ended
    assert (execroot / "target/dev/a.txt").read_text() == "HELLO"
    head.close()
    assert (execroot / "target/dev/a.txt").exists()  # the caller's run rewrites it: left to it


def test_outputs_of_a_run_no_action_claims_are_removed_at_the_end(head, execroot):
    head.offer(UPPER)
    assert head.settle({}, {}) is None
    head.close()
    assert not (execroot / "target/dev/a.txt").exists()


def test_an_action_whose_input_is_missing_is_not_started(head, execroot):
    head.offer(Action(id="upper", argv=UPPER.argv, inputs=("src/gone.txt",), outputs=UPPER.outputs))
    assert head.action is None
    assert head.settle({"upper": UPPER}, {}) is None and head.take("upper") is None


def test_adoptable_compares_the_whole_action():
    assert adoptable(UPPER, {"upper": UPPER}, {})
    assert not adoptable(UPPER, {"upper": Action(id="upper", argv=UPPER.argv, inputs=UPPER.inputs,
                                                 outputs=UPPER.outputs, may_read=("src/extra.h",))}, {})
    assert not adoptable(UPPER, {}, {})


def test_an_input_changed_between_its_hash_and_its_staging_starts_nothing(execroot, tmp_path):
    """Its key would be made from the digest it was hashed to: a run must read exactly those bytes
    (strict staging), so nothing starts and the schedule runs the action."""
    from mcpp.cas.digest import digest_bytes

    write(execroot, "src/in.txt", "saved since")
    sandbox = LocalSandbox(pool=SandboxPool(str(tmp_path / "work")))
    head = HeadStart(str(execroot), lambda: sandbox, lambda rel: digest_bytes(b"hello"),
                     Stores.open(Home(tmp_path / "home")), lambda a: a)
    try:
        head.offer(UPPER)
        assert head.action is None and head.digests == {}
    finally:
        head.close()
        sandbox.shutdown()


def test_the_digests_an_input_was_staged_by_are_kept_for_its_key(head, execroot):
    head.offer(UPPER)
    assert head.digests == {"src/in.txt": digest_file(execroot / "src/in.txt")}
