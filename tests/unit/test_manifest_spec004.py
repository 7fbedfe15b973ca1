"""SPEC-004 §7 criteria 1 to 3, each in a test named after it (seed 002_d2ae32f0f70fce59).

1. Outside `[target.<selector>.<section>]` there is no second way to write a condition (the
   top-level platform-key object excepted: it is an axis, not a condition).
2. The target axis differs from the host axis only when the target differs from the host, so the
   test must cross targets: one manifest resolved for two targets, target-axis entries appear and
   disappear, host-axis entries stay both times.
3. The "two places" condition (outer selector plus inner platform-key object) is refused.
"""
from __future__ import annotations

import textwrap

import pytest

from mcpp.engine.core.accel import AccelSet
from mcpp.engine.core.errors import ManifestError
from mcpp.engine.manifest.context import BuildContext
from mcpp.engine.manifest.fold import fold
from mcpp.engine.manifest.load import parse_manifest
from mcpp.engine.manifest.triples import host_triple, parse_triple

HEAD = '[package]\nname = "spec"\nversion = "0.1.0"\n\n'


def write(tmp_path, body: str):
    path = tmp_path / "mcpp.toml"
    path.write_text(HEAD + textwrap.dedent(body).lstrip("\n"))
    return str(path)


def for_target(path: str, triple: str):
    return fold(parse_manifest(path), BuildContext(parse_triple(triple), host_triple(), AccelSet()))


def payloads(m) -> dict[str, str]:
    """address -> axis of the folded [xlings.workspace]."""
    return {p.address: p.axis for p in m.xlings.workspace}


# -- criterion 1 ---------------------------------------------------------------------------------
SECOND_WAYS = {
    "trailing key on a payload table": ('[xlings.workspace.linux]\n"xim:glibc" = "2.40"\n',
                                        "[target.'cfg(os = \"linux\")'.xlings.workspace]"),
    "trailing key on build": ('[build.\'cfg(unix)\']\ncxxflags = ["-pthread"]\n', "[target.'cfg(unix)'.build]"),
    "trailing triple on dependencies": ('[dependencies.x86_64-linux-gnu]\nfoo = { path = "foo" }\n',
                                        "[target.x86_64-linux-gnu.dependencies]"),
    "trailing key on a feature gate": ('[features]\nf = []\n[feature-deps.f.windows]\nfoo = { path = "foo" }\n',
                                       "[target.'cfg(os = \"windows\")'.feature-deps.f]"),
    "leading key": ('[linux.build]\ncxxflags = ["-pthread"]\n', "[target.'cfg(os = \"linux\")'.build]"),
    "sibling key beside a dependency": ('[dependencies]\nfoo = { path = "foo", target = "cfg(unix)" }\n',
                                        "[target.'cfg(unix)'.dependencies]"),
    "sibling predicate beside a dependency": ('[dependencies]\nfoo = { path = "foo", os = "windows" }\n',
                                              "[target.'cfg(os = \"windows\")'.dependencies]"),
    "platform-key object in build": ('[build]\ncxxflags = { linux = ["-pthread"] }\n',
                                     "[target.'cfg(os = \"linux\")'.build]"),
    "platform-key object as a dependency": ('[dependencies]\nfoo = { windows = { path = "foo" } }\n',
                                            "[target.'cfg(os = \"windows\")'.dependencies.foo]"),
    "bare alias as a selector": ('[target.linux.build]\ncxxflags = ["-pthread"]\n', "'cfg(linux)'"),
    "features under a selector": ("[target.'cfg(unix)'.features]\nf = []\n", "[target.<selector>.feature-deps.<f>]"),
}


@pytest.mark.parametrize("body,shown", SECOND_WAYS.values(), ids=SECOND_WAYS.keys())
def test_spec004_7_1_no_second_way_to_write_a_condition(tmp_path, body, shown):
    path = write(tmp_path, body)
    with pytest.raises(ManifestError) as e:
        parse_manifest(path)
    assert shown in e.value.message, e.value.message
    assert e.value.pos is not None and e.value.pos.line is not None  # positioned, at the key or value


def test_spec004_7_1_the_one_shape_and_the_host_axis_object_are_accepted(tmp_path):
    path = write(tmp_path, """
        [xlings.workspace]
        "xim:dpcpp" = { linux = "7.1.0", macosx = "7.0.0", windows = "7.0.1", default = "7.0.0" }

        [target.'cfg(unix)'.build]
        cxxflags = ["-pthread"]

        [target.'cfg(os = "linux")'.xlings.workspace]
        "xim:glibc" = "2.40"
    """)
    m = for_target(path, host_triple().text)
    assert m.build.cxxflags == ("-pthread",)
    assert {p.address: p.version for p in m.xlings.workspace} == {"xim:dpcpp": "7.1.0", "xim:glibc": "2.40"}


# -- criterion 2 ---------------------------------------------------------------------------------
AXES = """
    [xlings.workspace]
    "xim:ninja" = "1.12.1"
    "xim:dpcpp" = { linux = "7.1.0", windows = "7.0.1" }

    [target.'cfg(arch = "x86_64")'.xlings.workspace]
    "xim:glibc" = "2.40"

    [target.aarch64-linux-gnu.xlings.workspace]
    "xim:aarch64-linux-gnu-glibc" = "2.40"

    [target.'cfg(windows)'.xlings.workspace]
    "xim:mingw-w64" = "12.0"
"""


def test_spec004_7_2_target_axis_follows_the_target_host_axis_stays(tmp_path):
    path = write(tmp_path, AXES)
    host_axis = {"xim:ninja": "host", "xim:dpcpp": "host"}
    x86 = for_target(path, "x86_64-linux-gnu")
    arm = for_target(path, "aarch64-linux-gnu")
    win = for_target(path, "x86_64-pc-windows-msvc")
    assert payloads(x86) == {**host_axis, "xim:glibc": "target"}
    assert payloads(arm) == {**host_axis, "xim:aarch64-linux-gnu-glibc": "target"}
    assert payloads(win) == {**host_axis, "xim:glibc": "target", "xim:mingw-w64": "target"}
    # The host axis resolves against the machine that runs the build, whatever the target:
    # on a Linux host the windows target still gets the linux version of a host tool.
    if host_triple().os == "linux":
        assert {p.address: p.version for p in win.xlings.workspace}["xim:dpcpp"] == "7.1.0"


def test_spec004_7_2_on_a_non_cross_build_the_axes_coincide(tmp_path):
    """The zero-information green the criterion warns about: both axes present, no difference."""
    m = for_target(write(tmp_path, AXES), host_triple().text)
    assert {"xim:ninja", "xim:dpcpp"} <= set(payloads(m))


# -- criterion 3 ---------------------------------------------------------------------------------
def test_spec004_7_3_two_place_condition_is_refused(tmp_path):
    path = write(tmp_path, """
        [target.'cfg(os = "linux")'.xlings.workspace]
        "xim:glibc" = { linux = "2.40" }
    """)
    with pytest.raises(ManifestError) as e:
        parse_manifest(path)
    assert "[target.'cfg(os = \"linux\")']" in e.value.message  # names the outer selector
    assert "states its condition twice" in e.value.message
    assert (e.value.pos.line, e.value.pos.col) == (6, 15)  # at the inner object


def test_spec004_7_3_two_place_condition_is_refused_under_a_gate_and_whether_or_not_it_matches(tmp_path):
    path = write(tmp_path, """
        [features]
        rules = []

        [target.'cfg(windows)'.feature-xlings.rules]
        "xim:msvc" = { windows = "17.0" }
    """)
    with pytest.raises(ManifestError) as e:
        parse_manifest(path)
    assert "[target.'cfg(windows)']" in e.value.message


def test_spec004_7_3_each_single_statement_is_accepted(tmp_path):
    """The reverse leg: either half alone is legal, so the refusal is about the pair."""
    outer = write(tmp_path, """
        [target.'cfg(os = "linux")'.xlings.workspace]
        "xim:glibc" = "2.40"
    """)
    assert payloads(for_target(outer, "x86_64-linux-gnu")) == {"xim:glibc": "target"}
    inner = write(tmp_path, """
        [xlings.workspace]
        "xim:glibc" = { linux = "2.40" }
    """)
    assert [p.version for p in parse_manifest(inner).base.xlings.workspace] == \
        (["2.40"] if host_triple().os == "linux" else [])
