"""What a remote execution sends: the scheduling properties, every file the action may read,
and the settings that turn it on."""
from __future__ import annotations

import pytest

from mcpp.cas.action import Action, ActionKind
from mcpp.cas.digest import Digest
from mcpp.cas.remote import protocol as pb
from mcpp.engine.core.errors import McppError
from tests.unit.engine.settings_support import remote_of
from mcpp.cas.remote.digests import SHA256
from mcpp.cas.remote.exec_messages import decode_command, exec_messages

GXX = Digest("ab" * 32, 10)


def _compile() -> Action:
    return Action(id="compile app:src/a.cpp", argv=("/usr/bin/g++", "-c", "src/a.cpp", "-o", "obj/a.o"),
                  outputs=("obj/a.o", "obj/a.d"), inputs=("src/a.cpp",), may_read=("include/a.hpp",),
                  tools=("/usr/bin/g++",), env=(("LC_ALL", "C"),), depfile="obj/a.d", kind=ActionKind.COMPILE,
                  timeout=7.5)


def _files(tmp_path):
    out = {}
    for rel, data, x in (("src/a.cpp", b"int a;", False), ("include/a.hpp", b"#pragma once", False),
                         ("tools/gen.sh", b"#!/bin/sh", True)):
        p = tmp_path / rel.replace("/", "_")
        p.write_bytes(data)
        out[rel] = (SHA256.of_bytes(data), x, str(p))
    return out


def _directory(msgs, digest) -> pb.Directory:
    d = pb.Directory()
    d.ParseFromString(msgs.blobs[digest])
    return d


def test_the_input_root_holds_every_file_the_action_may_read_with_its_mode(tmp_path):
    msgs = exec_messages(_compile(), {"/usr/bin/g++": GXX}, _files(tmp_path), SHA256)
    action = pb.Action.FromString(msgs.blobs[msgs.action_digest])
    root = _directory(msgs, type(msgs.action_digest).from_wire(action.input_root_digest, SHA256))
    assert [d.name for d in root.directories] == ["include", "src", "tools"]
    tools = _directory(msgs, type(msgs.action_digest).from_wire(root.directories[2].digest, SHA256))
    assert tools.files[0].name == "gen.sh" and tools.files[0].is_executable
    assert set(msgs.files) == {f[0] for f in _files(tmp_path).values()}


def test_scheduling_names_the_os_the_isa_and_each_tool_digest(tmp_path):
    msgs = exec_messages(_compile(), {"/usr/bin/g++": GXX}, _files(tmp_path), SHA256)
    action = pb.Action.FromString(msgs.blobs[msgs.action_digest])
    names = {(p.name, p.value) for p in action.platform.properties}
    assert ("mcpp-tool", f"/usr/bin/g++=blake3:{GXX.hash}") in names
    assert {n for n, _ in names} == {"OSFamily", "ISA", "mcpp-tool"}  # what BuildGrid matches on
    command = pb.Command.FromString(msgs.blobs[type(msgs.action_digest).from_wire(action.command_digest, SHA256)])
    props = decode_command(command)
    assert props["mcpp-timeout"] == "7.5" and props["mcpp-depfile"] == "obj/a.d"
    assert list(command.output_paths) == ["obj/a.d", "obj/a.o"]
    # another compiler's bytes: another action, which only a worker with that compiler takes
    other = exec_messages(_compile(), {"/usr/bin/g++": Digest("cd" * 32, 10)}, _files(tmp_path), SHA256)
    assert other.action_digest != msgs.action_digest


def test_remote_execution_is_a_flag_an_environment_variable_or_a_config_key(tmp_path):
    url = "grpc://localhost:50051"
    assert remote_of(url, None, {}, tmp_path, True).execute
    assert not remote_of(url, None, {}, tmp_path).execute
    assert remote_of(url, None, {"MCPP_REMOTE_EXEC": "1"}, tmp_path).execute
    assert not remote_of(url, None, {"MCPP_REMOTE_EXEC": "1"}, tmp_path, False).execute
    (tmp_path / "config.toml").write_text("[remote]\nexecute = true\n")
    assert remote_of(url, None, {}, tmp_path).execute
    with pytest.raises(McppError, match="--remote-exec needs a remote server"):
        remote_of(None, None, {}, tmp_path / "none", True)
    with pytest.raises(McppError, match="MCPP_REMOTE_EXEC"):
        remote_of(url, None, {"MCPP_REMOTE_EXEC": "maybe"}, tmp_path)
