"""The action key: every field of Action is classified, and each hashed field changes the key."""
from __future__ import annotations

import dataclasses

import pytest

from mcpp.cas.action import EXCLUDED_FIELDS, KEY_FIELDS, Action, Platform, action_key
from mcpp.cas.digest import Digest, digest_bytes

PLATFORM = Platform("gcc 12.2.0 x86_64-linux-gnu", "x86_64-linux-gnu")
BASE = Action(id="compile p:src/a.cpp", argv=("g++", "-c", "src/a.cpp", "-o", "a.o"), outputs=("a.o", "a.d"),
              inputs=("src/a.cpp",), tools=("/usr/bin/g++",), env=(("LC_ALL", "C"),), depfile="a.d")


def digests(path: str) -> Digest:
    return digest_bytes(path.encode())


def key(action: Action, platform: Platform = PLATFORM, digest_of=digests, discovered=()) -> str:
    return action_key(action, platform, digest_of, digests, discovered)


def test_every_field_is_hashed_or_explicitly_excluded():
    names = {f.name for f in dataclasses.fields(Action)}
    unclassified = names - KEY_FIELDS - set(EXCLUDED_FIELDS)
    assert not unclassified, f"classify these Action fields in cas/action.py: {sorted(unclassified)}"
    assert not (KEY_FIELDS & set(EXCLUDED_FIELDS))
    assert (KEY_FIELDS | set(EXCLUDED_FIELDS)) == names  # no stale names either


CHANGES = {
    "argv": ("g++", "-O2", "-c", "src/a.cpp", "-o", "a.o"),
    "outputs": ("a.o", "a.d", "a.gcm"),
    "inputs": ("src/a.cpp", "src/b.cpp"),
    "tools": ("/usr/bin/clang++",),
    "env": (("LC_ALL", "C"), ("X", "1")),
    "cwd": "sub",
    "depfile": "other.d",
    "content_keyed": True,
}


@pytest.mark.parametrize("field", sorted(KEY_FIELDS))
def test_each_hashed_field_changes_the_key(field):
    assert field in CHANGES, "add an example change for the new hashed field"
    assert key(dataclasses.replace(BASE, **{field: CHANGES[field]})) != key(BASE)


@pytest.mark.parametrize("field", sorted(EXCLUDED_FIELDS))
def test_excluded_fields_do_not_change_the_key(field):
    value = {"id": "x", "may_read": ("h.hpp",), "kind": "link", "description": "d", "timeout": 5.0}[field]
    assert key(dataclasses.replace(BASE, **{field: value})) == key(BASE)


def test_input_digest_platform_and_discovered_inputs_change_the_key():
    assert key(BASE, digest_of=lambda p: digest_bytes(b"changed")) != key(BASE)
    assert key(BASE, platform=Platform("gcc 13", "x86_64-linux-gnu")) != key(BASE)
    assert key(BASE, discovered=("src/a.hpp",)) != key(BASE)


def test_a_non_hermetic_namespace_keys_apart_and_the_default_keeps_old_keys():
    off = Platform(PLATFORM.toolchain, PLATFORM.host, "sandbox-off")
    assert key(BASE, platform=off) != key(BASE)
    assert key(BASE, platform=Platform(PLATFORM.toolchain, PLATFORM.host, "")) == key(BASE)


def test_environment_order_does_not_matter_and_no_field_collides():
    swapped = dataclasses.replace(BASE, env=(("B", "2"), ("A", "1")))
    ordered = dataclasses.replace(BASE, env=(("A", "1"), ("B", "2")))
    assert key(swapped) == key(ordered)
    # Length-prefixing: moving text between adjacent argv entries is a different command.
    assert key(dataclasses.replace(BASE, argv=("ab", "c"))) != key(dataclasses.replace(BASE, argv=("a", "bc")))


def test_a_content_keyed_action_names_its_tools_by_digest_not_by_path():
    """A tool rebuilt into another store path with the same bytes keeps the key; other bytes,
    or another tool, change it; the platform's toolchain does not enter it."""
    def action(tool: str) -> Action:
        return Action(id="rule p:gen", argv=(tool, "--plugin=gen=" + tool, "in.txt"), outputs=("out.h",),
                      inputs=("in.txt",), tools=(tool,), content_keyed=True)

    by_bytes = {"/store/gen@1+aa/bin/gen": b"gen v1", "/store/gen@1+bb/bin/gen": b"gen v1",
                "/store/gen@1+cc/bin/gen": b"gen v2"}

    def tool_digest(path: str) -> Digest:
        return digest_bytes(by_bytes.get(path, path.encode()))

    def k(a: Action, platform: Platform = PLATFORM) -> str:
        return action_key(a, platform, digests, tool_digest)

    assert k(action("/store/gen@1+aa/bin/gen")) == k(action("/store/gen@1+bb/bin/gen"))
    assert k(action("/store/gen@1+aa/bin/gen")) != k(action("/store/gen@1+cc/bin/gen"))
    assert k(action("/store/gen@1+aa/bin/gen")) == k(action("/store/gen@1+aa/bin/gen"), Platform("clang 18", PLATFORM.host))
    assert k(action("/store/gen@1+aa/bin/gen")) != k(action("/store/gen@1+aa/bin/gen"), Platform("gcc", "aarch64-linux-gnu"))
    # the engine's own actions stay keyed by path and toolchain
    plain = dataclasses.replace(action("/store/gen@1+aa/bin/gen"), content_keyed=False)
    assert k(plain) != k(dataclasses.replace(plain, argv=("/store/gen@1+bb/bin/gen",) + plain.argv[1:],
                                             tools=("/store/gen@1+bb/bin/gen",)))
    assert k(plain) != k(plain, Platform("clang 18", PLATFORM.host))


def test_the_key_encoding_is_pinned():
    """Keys name results in every store and remote cache already written: the encoding may be
    made faster, never different (a change bumps KEY_VERSION). The keys of KEY_VERSION v2."""
    assert key(BASE, discovered=("src/a.hpp", "/usr/include/stdio.h")) == \
        "3bcc4963b9596b5c47a2c746f61d82784cb3d109f12c9ffc089ec6e4909c8336"
    content = dataclasses.replace(BASE, content_keyed=True, argv=("/usr/bin/g++", "--plugin=x=/usr/bin/g++"))
    assert key(content, platform=Platform(PLATFORM.toolchain, PLATFORM.host, "sandbox-off")) == \
        "8b7e7ca6ed83bae783b164cb2453804add48bca4ade540d455811960b4813aca"
    assert key(dataclasses.replace(BASE, depfile=None, cwd="sub", env=())) == \
        "d1061e91220e4419837938d624b888c83bef9d4d18354fa1bd7384dc1ab0e716"
