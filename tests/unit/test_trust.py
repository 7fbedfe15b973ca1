"""engine/trust.py: the namespace a result is keyed in follows from what the sandbox guarantees
and what kind of action it is; results the sandbox cannot prove are never uploaded."""
from mcpp.cas.action import Action, ActionKind
from mcpp.cas.remote.config import RemoteSettings
from mcpp.engine import trust
from mcpp.sandbox import BwrapSandbox, DirSandbox, LocalSandbox, guarantees_of

BWRAP, DIR, OFF = BwrapSandbox.guarantees, DirSandbox.guarantees, LocalSandbox.guarantees

COMPILE = Action("compile p:a.cpp", ("g++", "-c", "a.cpp"), ("a.o", "a.d"), depfile="a.d", kind=ActionKind.COMPILE)
LINK = Action("link p:p", ("g++", "a.o", "-o", "p"), ("p",), kind=ActionKind.LINK)
RULE = Action("gen", ("/bin/sh", "-c", "x"), ("x",), depfile="x.d", kind=ActionKind.RULE)


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


def test_uploading_is_off_where_the_build_is_not_hermetic():
    warned = []
    settings = RemoteSettings("grpc://h:1", "h:1", upload=True)
    for sandbox in ("off", "dir"):
        assert trust.Trust(sandbox).without_upload(settings, warned.append).upload is False
    assert len(warned) == 2 and all("not uploaded" in w for w in warned)
    assert trust.Trust("bwrap").without_upload(settings, warned.append) is settings
    assert trust.Trust("off").without_upload(None, warned.append) is None
    assert len(warned) == 2


def test_a_host_tool_built_by_a_build_that_is_not_hermetic_is_keyed_apart():
    host = "x86_64-linux-gnu"
    assert trust.Trust("off").tool_host(host) != host
    assert trust.Trust("dir").tool_host(host) not in (host, trust.Trust("off").tool_host(host))
    assert trust.Trust("bwrap").tool_host(host) == host
