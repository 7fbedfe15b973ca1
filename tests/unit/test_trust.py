"""engine/trust/policy.py: every trust decision of a build follows from what its sandbox guarantees
(never from the backend's name) and from the remote settings, in one `TrustPolicy`."""
import pytest

from mcpp.cas.action import Action, ActionKind, Platform
from mcpp.cas.remote.config import RemoteSettings
from mcpp.cas.remote.signing import generate
from mcpp.cas.remote.trust import remote_origin
from mcpp.engine.trust import policy as trust
from mcpp.engine.trust.policy import TrustPolicy
from mcpp.sandbox import NAMES, BwrapSandbox, DirSandbox, LocalSandbox, guarantees_of, possible_guarantees

BWRAP, DIR, OFF = BwrapSandbox.guarantees, DirSandbox.guarantees, LocalSandbox.guarantees

COMPILE = Action("compile p:a.cpp", ("g++", "-c", "a.cpp"), ("a.o", "a.d"), depfile="a.d", kind=ActionKind.COMPILE)
LINK = Action("link p:p", ("g++", "a.o", "-o", "p"), ("p",), kind=ActionKind.LINK)
RULE = Action("gen", ("/bin/sh", "-c", "x"), ("x",), depfile="x.d", kind=ActionKind.RULE)
PLATFORM = Platform("gcc 13", "x86_64-linux-gnu")


def _platform(policy: TrustPolicy, action: Action) -> Platform:
    return Platform(PLATFORM.toolchain, PLATFORM.host, namespace=policy.namespace(action))


def test_the_namespace_is_chosen_by_guarantees_not_by_the_backend_name():
    assert guarantees_of("bwrap") is BWRAP and guarantees_of("dir") is DIR and guarantees_of("off") is OFF
    assert {trust.namespace(BWRAP, a) for a in (COMPILE, LINK, RULE)} == {trust.SHARED}


def test_under_dir_nothing_is_shared_not_even_a_compile_with_a_checked_depfile():
    # a depfile does not name an inline `.incbin`'s file nor what `__has_include` tested: under
    # dir those reach the host, so no kind of action is proven
    assert {trust.namespace(DIR, a) for a in (COMPILE, LINK, RULE)} == {trust.apart(DIR)} != {trust.SHARED}


def test_off_shares_nothing_and_keys_apart_from_dir():
    assert {trust.namespace(OFF, a) for a in (COMPILE, LINK, RULE)} == {trust.apart(OFF)}
    assert trust.apart(OFF) != trust.apart(DIR)


@pytest.mark.parametrize("name", NAMES)
def test_each_backend_answers_every_question_from_its_guarantees(name):
    g = guarantees_of(name)
    policy = TrustPolicy(name)
    assert policy.hermetic == g.hermetic
    assert policy.stages_inputs == policy.memoizes_keys == g.stages_inputs
    assert policy.executes_remotely(COMPILE) == g.stages_inputs
    for action in (COMPILE, LINK, RULE):
        platform = _platform(policy, action)
        assert policy.uploads(platform) == policy.accepts_remote(platform) == g.hermetic


def test_the_policy_reads_promises_not_names_a_fake_backend_is_judged_by_what_it_promises():
    # the guarantees given decide, whatever the name says
    policy = TrustPolicy("off", guarantees=BWRAP)
    assert policy.hermetic and policy.memoizes_keys and policy.uploads(_platform(policy, COMPILE))
    policy = TrustPolicy("bwrap", guarantees=OFF)
    assert not policy.stages_inputs and not policy.uploads(_platform(policy, COMPILE))


def test_bwrap_shares_and_memoizes_dir_stages_but_shares_nothing_off_does_neither():
    bwrap, dir_, off = TrustPolicy("bwrap"), TrustPolicy("dir"), TrustPolicy("off")
    assert bwrap.uploads(_platform(bwrap, LINK)) and bwrap.memoizes_keys
    assert not dir_.uploads(_platform(dir_, COMPILE)) and dir_.memoizes_keys and dir_.executes_remotely(COMPILE)
    assert not off.uploads(_platform(off, COMPILE)) and not off.memoizes_keys and not off.executes_remotely(COMPILE)


def test_the_default_answers_what_every_candidate_promises_without_probing_bwrap():
    # bwrap and dir both stage inputs: the default's answer needs no probe
    assert all(g.stages_inputs for g in possible_guarantees(None))
    policy = TrustPolicy(None)
    assert policy.stages_inputs and policy.memoizes_keys and policy.executes_remotely(COMPILE)
    assert policy._guarantees is None  # nothing was looked up


def test_uploading_is_off_where_the_build_is_not_hermetic():
    warned = []
    settings = RemoteSettings("grpc://h:1", "h:1", upload=True)
    for sandbox in ("off", "dir"):
        assert TrustPolicy(sandbox, settings).remote(warned.append).upload is False
    assert len(warned) == 2 and all("not uploaded" in w for w in warned)
    assert TrustPolicy("bwrap", settings).remote(warned.append) is settings
    assert TrustPolicy("off").remote(warned.append) is None
    assert len(warned) == 2


def test_a_local_entry_fetched_unsigned_is_refused_only_when_trusted_keys_are_required():
    ci = generate("ci")
    signed = remote_origin("unix:/s", "ab/1", ci.public)
    unsigned = remote_origin("unix:/s", "ab/1", None)
    built_here = {"kind": "executed"}
    requiring = TrustPolicy("bwrap", RemoteSettings("grpc://h:1", "h:1", trusted_keys=(ci.public,)))
    assert requiring.accepts_cached(signed) and requiring.accepts_cached(built_here) and requiring.accepts_cached(None)
    assert not requiring.accepts_cached(unsigned)
    for open_ in (TrustPolicy("bwrap"), TrustPolicy("bwrap", RemoteSettings("grpc://h:1", "h:1"))):
        assert open_.accepts_cached(unsigned) and open_.accepts_cached(signed)


def test_a_host_tool_built_by_a_build_that_is_not_hermetic_is_keyed_apart():
    host = "x86_64-linux-gnu"
    assert TrustPolicy("off").tool_host(host) != host
    assert TrustPolicy("dir").tool_host(host) not in (host, TrustPolicy("off").tool_host(host))
    assert TrustPolicy("bwrap").tool_host(host) == host


def test_no_engine_module_decides_by_a_backend_name():
    # the promises decide (sandbox/select.py is the registry that names the backends)
    import re
    from pathlib import Path

    engine = Path(trust.__file__).resolve().parent
    named = [f"{p.relative_to(engine)}:{n}" for p in sorted(engine.rglob("*.py"))
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"""["']off["']""", line)]
    assert named == []


def test_the_default_takes_the_promises_of_the_sandbox_made_ahead_without_a_probe_beside_it(tmp_path, monkeypatch):
    # a build whose sandbox warms up: its first key waits for that sandbox, whose worker answered
    # for bwrap (or which fell back to dir), instead of running the bwrap probe while the worker starts
    from mcpp.engine.exec.sandbox_warm_up import SandboxWarmUp

    warm = SandboxWarmUp((None, str(tmp_path), ()))
    try:
        made = warm.get()
        monkeypatch.setattr(trust, "guarantees_of", lambda name: pytest.fail("the bwrap probe ran"))
        policy = TrustPolicy(None)
        policy.follow(warm.get)
        assert policy.guarantees is type(made).guarantees
        assert policy.namespace(COMPILE) == trust.namespace(type(made).guarantees, COMPILE)
    finally:
        warm.close()


def test_a_sandbox_that_could_not_be_made_ahead_leaves_the_choice_to_the_probe(monkeypatch):
    def failed():
        raise OSError("no worker")

    monkeypatch.setattr(trust, "guarantees_of", lambda name: DIR)
    policy = TrustPolicy(None)
    policy.follow(failed)
    assert policy.guarantees is DIR


def test_a_named_backend_is_not_decided_by_a_sandbox_made_ahead():
    policy = TrustPolicy("dir")
    policy.follow(lambda: pytest.fail("waited for the sandbox"))
    assert policy.guarantees is DIR
