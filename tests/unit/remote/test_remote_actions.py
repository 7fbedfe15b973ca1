"""Translating an Action into REAPI messages: every keyed field counts, nothing else does."""
from __future__ import annotations

import dataclasses

import pytest

from mcpp.cas.action import KEY_FIELDS, Action, Platform
from mcpp.cas.digest import digest_bytes
from mcpp.cas.remote import protocol as pb
from mcpp.cas.remote.actions import (MANIFEST_SETS, PLATFORM_ENCODING, REMOTE_ENCODING, action_result, decode_manifest,
                                encode_manifest, input_root, manifest_action, merge_manifest, remote_action,
                                result_outputs)
from mcpp.cas.remote.digests import BLAKE3, SHA256, RemoteDigest

PLATFORM = Platform("gcc 12.2.0 x86_64-linux-gnu cxx=aa cc=bb", "x86_64-linux-gnu")
BASE = Action(id="compile p:src/a.cpp", argv=("/usr/bin/g++", "-c", "src/a.cpp", "-o", "out/a.o"),
              outputs=("out/a.o", "out/a.d"), inputs=("src/a.cpp",), tools=("/usr/bin/g++",),
              env=(("LC_ALL", "C"), ("A", "1")), depfile="out/a.d")
TOOLS = {"/usr/bin/g++": digest_bytes(b"g++ binary"), "/usr/bin/clang++": digest_bytes(b"clang")}


def rd(text: str) -> RemoteDigest:
    return SHA256.of_bytes(text.encode())


def inputs_of(action: Action) -> dict[str, RemoteDigest]:
    return {p: rd(p) for p in action.inputs}


def key(action: Action = BASE, platform: Platform = PLATFORM, tools=TOOLS, inputs=None) -> RemoteDigest:
    return remote_action(action, platform, tools, inputs_of(action) if inputs is None else inputs, SHA256).digest


def test_every_keyed_field_has_a_place_in_the_remote_messages():
    assert set(REMOTE_ENCODING) == set(KEY_FIELDS), "say in cas/remote/actions.py where the new field goes"
    assert set(PLATFORM_ENCODING) == {f.name for f in dataclasses.fields(Platform)}


CHANGES = {
    "argv": ("/usr/bin/g++", "-O2", "-c", "src/a.cpp", "-o", "out/a.o"),
    "outputs": ("out/a.o", "out/a.d", "out/a.gcm"),
    "inputs": ("src/a.cpp", "src/b.cpp"),
    "tools": ("/usr/bin/clang++",),
    "env": (("LC_ALL", "C"), ("A", "2")),
    "cwd": "sub",
    "depfile": "out/other.d",
    "content_keyed": True,
}


@pytest.mark.parametrize("name", sorted(KEY_FIELDS))
def test_changing_a_keyed_field_changes_the_remote_key(name):
    assert key(dataclasses.replace(BASE, **{name: CHANGES[name]})) != key()


def test_input_bytes_tool_bytes_and_platform_change_the_key():
    assert key(inputs={"src/a.cpp": rd("edited")}) != key()
    assert key(tools={"/usr/bin/g++": digest_bytes(b"g++ 13")}) != key()
    assert key(platform=Platform("gcc 13.1.0 x86_64-linux-gnu cxx=cc cc=dd", PLATFORM.host)) != key()
    assert key(platform=Platform(PLATFORM.toolchain, "aarch64-linux-gnu")) != key()
    assert key(platform=Platform(PLATFORM.toolchain, PLATFORM.host, "sandbox-off")) != key()


def test_a_system_header_the_depfile_named_is_keyed_by_path_and_bytes():
    with_header = {**inputs_of(BASE), "/usr/include/stdio.h": rd("v1")}
    assert key(inputs=with_header) != key()
    assert key(inputs={**with_header, "/usr/include/stdio.h": rd("v2")}) != key(inputs=with_header)


def test_display_fields_and_ordering_do_not_change_the_key():
    same = dataclasses.replace(BASE, id="other name", kind="x", description="y", timeout=5.0,
                               env=tuple(reversed(BASE.env)))
    assert key(same) == key()
    two = {"src/b.cpp": rd("b"), "src/a.cpp": rd("a")}
    assert key(dataclasses.replace(BASE, inputs=("src/a.cpp", "src/b.cpp")), inputs=two) == \
        key(dataclasses.replace(BASE, inputs=("src/b.cpp", "src/a.cpp")), inputs=dict(reversed(two.items())))


def test_the_messages_are_in_the_remote_digest_space():
    ra = remote_action(BASE, PLATFORM, TOOLS, inputs_of(BASE), SHA256)
    action = pb.Action.FromString(ra.blobs[ra.digest])
    assert SHA256.of_bytes(ra.blobs[ra.digest]) == ra.digest
    command_digest = RemoteDigest.from_wire(action.command_digest, SHA256)
    command = pb.Command.FromString(ra.blobs[command_digest])
    assert SHA256.of_bytes(ra.blobs[command_digest]) == command_digest
    assert list(command.arguments) == list(BASE.argv)
    assert [(e.name, e.value) for e in command.environment_variables] == [("A", "1"), ("LC_ALL", "C")]
    assert list(command.output_paths) == ["out/a.d", "out/a.o"]
    props = [(p.name, p.value) for p in command.platform.properties]
    assert props == sorted(props)
    assert ("mcpp-tool", f"/usr/bin/g++=blake3:{TOOLS['/usr/bin/g++']}") in props
    assert action.do_not_cache is False
    # BLAKE3 names the same action differently (another digest space), never the same.
    assert remote_action(BASE, PLATFORM, TOOLS, {"src/a.cpp": BLAKE3.of_bytes(b"src/a.cpp")}, BLAKE3).digest != ra.digest


def test_the_input_root_is_a_canonical_tree():
    files = {"b/y.h": rd("y"), "a.cpp": rd("a"), "b/c/z.h": rd("z"), "b/x.h": rd("x")}
    root = input_root(files, SHA256)
    assert root == input_root(dict(reversed(files.items())), SHA256)
    top = pb.Directory(files=[pb.FileNode(name="a.cpp", digest=rd("a").to_proto())])
    c = pb.Directory(files=[pb.FileNode(name="z.h", digest=rd("z").to_proto())])
    b = pb.Directory(files=[pb.FileNode(name="x.h", digest=rd("x").to_proto()),
                            pb.FileNode(name="y.h", digest=rd("y").to_proto())],
                     directories=[pb.DirectoryNode(name="c", digest=SHA256.of_message(c)[0].to_proto())])
    top.directories.add(name="b", digest=SHA256.of_message(b)[0].to_proto())
    assert root == SHA256.of_message(top)[0]
    assert input_root({}, SHA256) == SHA256.of_bytes(b"")  # the empty Directory serializes to nothing


@pytest.mark.parametrize("bad", ["/abs/a.cpp", "../outside.h", "."])
def test_paths_outside_the_execroot_cannot_enter_a_key(bad):
    with pytest.raises(ValueError, match="execroot"):
        input_root({bad: rd("x")}, SHA256)


def test_results_map_outputs_through_the_working_directory():
    action = dataclasses.replace(BASE, cwd="pkg", outputs=("pkg/out/a.o", "pkg/bin/tool"))
    result = action_result(action, {"pkg/out/a.o": (rd("o"), False), "pkg/bin/tool": (rd("t"), True)},
                           stdout=rd("warning"), stderr=None)
    assert sorted(f.path for f in result.output_files) == ["bin/tool", "out/a.o"]
    assert result_outputs(action, result, SHA256) == {"pkg/out/a.o": (rd("o"), False), "pkg/bin/tool": (rd("t"), True)}
    assert RemoteDigest.from_wire(result.stdout_digest, SHA256) == rd("warning") and not result.HasField("stderr_digest")
    partial = pb.ActionResult(exit_code=0)
    partial.output_files.add(path="out/a.o", digest=rd("o").to_proto())
    assert result_outputs(action, partial, SHA256) is None  # a declared output is missing: not our result


def test_the_manifest_action_depends_only_on_the_first_level_action():
    first = remote_action(BASE, PLATFORM, TOOLS, inputs_of(BASE), SHA256)
    other = remote_action(dataclasses.replace(BASE, argv=BASE.argv + ("-g",)), PLATFORM, TOOLS, inputs_of(BASE), SHA256)
    assert manifest_action(first, SHA256).digest == manifest_action(first, SHA256).digest
    assert manifest_action(first, SHA256).digest not in (first.digest, manifest_action(other, SHA256).digest)


def test_manifests_encode_merge_and_refuse_malformed_data():
    sets = [("include/a.h",), ("include/a.h", "include/b.h")]
    assert decode_manifest(encode_manifest(sets)) == sets
    merged = merge_manifest(sets, ("include/b.h", "include/a.h"))
    assert merged == [("include/a.h", "include/b.h"), ("include/a.h",)]
    many = [(f"h{i}.h",) for i in range(20)]
    assert len(merge_manifest(many, ("new.h",))) == MANIFEST_SETS
    assert decode_manifest(encode_manifest([("/usr/include/stdio.h", "a.h")])) == [("/usr/include/stdio.h", "a.h")]
    # A link's set names the libraries a `libc.so` script points to, under /lib and /lib64.
    libs = ("/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2", "out/a.o")
    assert decode_manifest(encode_manifest([libs])) == [libs]
    for bad in (b"not json", b'{"v": 2, "sets": []}', b'{"v": 1, "sets": [[1]]}', b'{"v": 1, "sets": [["/etc/passwd"]]}',
                b'{"v": 1, "sets": [["/usr/../etc/passwd"]]}', b'{"v": 1, "sets": [["/libfoo/x"]]}'):
        assert decode_manifest(bad) == []
