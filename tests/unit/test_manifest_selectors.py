"""Selectors: the cfg(...) grammar, triples, evaluation, and messages built from the registries."""
from __future__ import annotations

import pytest

from mcpp.engine.core.accel import AccelSet, AccelSyntaxError, parse_accel
from mcpp.engine.manifest import selectors, triples
from mcpp.engine.manifest.selectors import SelectorError, parse_selector

LINUX = triples.parse_triple("x86_64-linux-gnu")
ARM = triples.parse_triple("aarch64-linux-gnu")
WIN = triples.parse_triple("x86_64-pc-windows-msvc")
MAC = triples.parse_triple("aarch64-apple-darwin")
CUDA = parse_accel("cuda12.9+{sm_89} ptx>=89, vulkan1.2")


@pytest.mark.parametrize("text,target,accel,expected", [
    ('cfg(os = "linux")', LINUX, AccelSet(), True),
    ('cfg(os = "linux")', WIN, AccelSet(), False),
    ("cfg(unix)", MAC, AccelSet(), True),
    ("cfg(unix)", WIN, AccelSet(), False),
    ('cfg(family = "windows")', WIN, AccelSet(), True),
    ('cfg(env = "msvc")', WIN, AccelSet(), True),
    ('cfg(all(linux, not(arch = "aarch64")))', LINUX, AccelSet(), True),
    ('cfg(all(linux, not(arch = "aarch64")))', ARM, AccelSet(), False),
    ("cfg(any(windows, macos))", MAC, AccelSet(), True),
    ("cfg(all())", LINUX, AccelSet(), True),
    ("cfg(any())", LINUX, AccelSet(), False),
    ('cfg(accelerator = "cuda")', LINUX, CUDA, True),
    ('cfg(accelerator = "vulkan")', LINUX, CUDA, True),  # membership: both hold in one build
    ('cfg(accelerator = "hip")', LINUX, CUDA, False),
    ('cfg(accelerator = "none")', LINUX, AccelSet(), True),
    ('cfg(accelerator = "none")', LINUX, CUDA, False),
    ('cfg(not(accelerator = "none"))', LINUX, CUDA, True),
    ("x86_64-linux-gnu", LINUX, AccelSet(), True),
    ("x86_64-unknown-linux-gnu", LINUX, AccelSet(), True),  # compared by facts, not by text
    ("x86_64-linux-musl", LINUX, AccelSet(), False),
    ("aarch64-linux-gnu", LINUX, AccelSet(), False),
])
def test_selector_evaluation(text, target, accel, expected):
    assert parse_selector(text).matches(target, accel) is expected


@pytest.mark.parametrize("text,offset,message", [
    ("cfg(os = linux)", 9, "expected a quoted string after `os =`, found `linux`"),
    ('cfg(platform = "x")', 4, "unknown predicate `platform`; expected os = \"...\", arch = \"...\""),
    ('cfg(os = "darwin")', 9, "unknown os `darwin`; accepted values: linux, macos, windows"),
    ('cfg(arch = "x86")', 11, "unknown arch `x86`; accepted values: x86_64, i686, aarch64"),
    ("cfg(not(linux, unix))", 4, "`not` takes exactly one predicate, found 2"),
    ("cfg(linux", 9, "expected `)` closing cfg(, found end of selector"),
    ("cfg(linux) x", 11, "unexpected `x` after the closing `)`"),
    ("cfg()", 4, "expected a predicate"),
    ('cfg(linux = "x")', 10, "`linux` is an alias and takes no value"),
    ("cfg(all(linux unix))", 14, "expected `,` or `)` in all(...), found `unix`"),
    ('cfg(accelerator = "cuda12.9")', 18, "`accelerator` compares backend names"),
    ("linux", 0, "`linux` is an alias, not a selector: write it inside cfg, 'cfg(linux)'"),
    ("x86-linux-gnu", 0, "unknown arch `x86`"),
    ("aarch64-linux-gnux", 14, "unknown env `gnux`"),
    ("x86_64-haiku", 7, "unknown os `haiku`"),
])
def test_malformed_selectors_name_what_was_expected_and_where(text, offset, message):
    with pytest.raises(SelectorError) as e:
        parse_selector(text)
    assert message in str(e.value)
    assert e.value.offset == offset


def test_messages_follow_the_registry(monkeypatch):
    """Add a value, the check and the message follow (seed 001)."""
    monkeypatch.setitem(selectors.PREDICATES, "os", triples.OSES + ("haiku",))
    assert parse_selector('cfg(os = "haiku")').expr.value == "haiku"
    with pytest.raises(SelectorError) as e:
        parse_selector('cfg(os = "beos")')
    assert "accepted values: linux, macos, windows, haiku" in str(e.value)
    monkeypatch.setitem(selectors.PREDICATES, "vendor", ("pc", "apple"))
    with pytest.raises(SelectorError) as e:
        parse_selector("cfg(nope)")
    assert 'vendor = "..."' in str(e.value)


def test_resolved_layers_parse_so_that_a_message_can_name_them():
    sel = parse_selector('cfg(all(linux, compiler = "gcc"))')
    assert [leaf.name for leaf in sel.leaves() if leaf.is_layer] == ["compiler"]


def test_host_triple_is_spelled_like_gcc_dumpmachine():
    host = triples.host_triple()
    assert host.text.count("-") >= 2 and host.facts()["os"] in triples.OSES


def test_accel_entries_and_membership():
    s = parse_accel("cuda12.9+{sm_80,sm_90f} ptx>=90, hip6.4+{gfx942}, sycl")
    assert [e.name for e in s.entries] == ["cuda", "hip", "sycl"]
    assert s.entries[0].archs == ("sm_80", "sm_90f") and s.entries[0].floor == "90"
    assert s.entries[0].version == "12.9" and s.entries[2].version == ""
    assert s.has("hip") and not s.has("none") and AccelSet().has("none")
    assert str(parse_accel("")) == "none"


@pytest.mark.parametrize("text,offset,message", [
    ("cuda12.9+{sm_89", 0, "malformed accelerator entry"),
    ("cuda12.9 ptx>89", 9, "unknown accelerator modifier `ptx>89`; accepted: floor>=<version>, ptx>=<version>"),
    ("cuda, cuda12", 6, "backend `cuda` is named twice"),
    ("cuda,", 5, "empty accelerator entry"),
    ("none", 0, "`none` is not a backend"),
])
def test_accel_syntax_errors(text, offset, message):
    with pytest.raises(AccelSyntaxError) as e:
        parse_accel(text)
    assert message in str(e.value) and e.value.offset == offset


def test_combinators_nest_at_most_max_depth_levels():
    ok = "cfg(" + "not(" * selectors.MAX_DEPTH + "unix" + ")" * selectors.MAX_DEPTH + ")"
    assert parse_selector(ok).leaves()[0].name == "unix"
    deep = "cfg(" + "any(" * 5000 + "unix" + ")" * 5000 + ")"
    with pytest.raises(SelectorError) as e:
        parse_selector(deep)
    assert "nest deeper than 64 levels" in str(e.value)
    assert e.value.offset == 4 + 4 * selectors.MAX_DEPTH  # the first combinator past the limit
