"""An mcpp `Action` as the REAPI messages a remote worker runs: `Command`, input root, `Action`.

This is the *execution* encoding, not the cache key of `actions.py`. A cache key covers only the
inputs the action read (declared inputs plus the headers its depfile named); a worker needs
every file the action *may* read, which before the first run is every declared input and every
candidate header (`Action.may_read`). So the input root here holds both, with executable bits,
and every `Directory` message of the tree is returned for upload.

Scheduling properties (`Action.platform`, which BuildGrid matches against the workers'):

- `OSFamily` and `ISA`: a worker runs only actions built for its operating system and machine;
- `mcpp-tool` = `PATH=blake3:DIGEST`, one per tool the action runs: a worker advertises the
  digest of each compiler it has, so an action keyed on one compiler's bytes never runs on a
  worker that has another at the same path.

`Command.platform` repeats them and adds what the worker needs to run the action as locally but
that must not take part in scheduling: `mcpp-timeout` (seconds) and `mcpp-depfile`. The worker
reads these back with `decode_command`.
"""
from __future__ import annotations

import platform as host_platform
import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

from . import protocol as pb
from ..action import Action
from ..digest import Digest
from .actions import PathTree, nest, relative_to, working_directory
from .digests import DigestFunction, RemoteDigest

if TYPE_CHECKING:
    # protobuf ships no types, and the REAPI classes are built at run time (protocol.py): to
    # the type checker a message is `Any`; the name says which kind of value it is.
    from google.protobuf.message import Message

TOOL_PROPERTY = "mcpp-tool"


def host_os() -> str:
    return host_platform.system().lower()  # "linux"


def host_isa() -> str:
    machine = host_platform.machine().lower()
    return {"x86_64": "x86-64", "amd64": "x86-64", "aarch64": "aarch64", "arm64": "aarch64"}.get(machine, machine)


def tool_property(path: str, digest: Digest | str) -> str:
    return f"{path}=blake3:{digest.hash if isinstance(digest, Digest) else digest}"


@dataclass(frozen=True, slots=True)
class ExecMessages:
    action_digest: RemoteDigest
    blobs: dict[RemoteDigest, bytes]  # Action, Command and every Directory of the input root
    files: dict[RemoteDigest, str]  # input file digest -> a local path holding its bytes
    output_paths: tuple[str, ...]  # as the Command names them (relative to its working directory)


def exec_messages(action: Action, tools: Mapping[str, Digest],
                  inputs: Mapping[str, tuple[RemoteDigest, bool, str]], fn: DigestFunction) -> ExecMessages:
    """`inputs`: execroot path -> (digest, executable, local path of the bytes)."""
    cwd = working_directory(action.cwd)
    scheduling = [("OSFamily", host_os()), ("ISA", host_isa())]
    scheduling += [(TOOL_PROPERTY, tool_property(t, tools[t])) for t in action.tools]
    extra = [("mcpp-depfile", action.depfile or "")]
    if action.timeout:
        extra.append(("mcpp-timeout", repr(float(action.timeout))))
    outputs = dict.fromkeys(list(action.outputs) + ([action.depfile] if action.depfile else []))
    output_paths = tuple(sorted(relative_to(o, cwd) for o in outputs))
    command = pb.Command(
        arguments=list(action.argv),
        environment_variables=[pb.Command.EnvironmentVariable(name=k, value=v) for k, v in sorted(action.env)],
        output_paths=list(output_paths),
        working_directory=cwd,
        platform=_platform(scheduling + extra),
    )
    blobs: dict[RemoteDigest, bytes] = {}
    root = _encode_tree(_nest(inputs), fn, blobs)
    command_digest, command_bytes = fn.of_message(command)
    blobs[command_digest] = command_bytes
    message = pb.Action(command_digest=command_digest.to_proto(), input_root_digest=root.to_proto(),
                        platform=_platform(scheduling))
    digest, action_bytes = fn.of_message(message)
    blobs[digest] = action_bytes
    files = {d: local for d, _x, local in inputs.values()}
    return ExecMessages(digest, blobs, files, output_paths)


def decode_command(command: Message) -> dict[str, str]:
    """`Command.platform` as a dict (the last value of each name)."""
    return {p.name: p.value for p in command.platform.properties}


def _platform(props: list[tuple[str, str]]) -> Message:
    return pb.Platform(properties=[pb.Platform.Property(name=n, value=v) for n, v in sorted(set(props))])


def _nest(inputs: Mapping[str, tuple[RemoteDigest, bool, str]]) -> PathTree:
    # a host file (an absolute path: a system header) is left out: the worker has its own, and
    # the tool digests say which
    return nest({path: (d, executable) for path, (d, executable, _local) in inputs.items()
                 if not posixpath.isabs(path)})


def _encode_tree(node: PathTree, fn: DigestFunction, blobs: dict[RemoteDigest, bytes]) -> RemoteDigest:
    directory = pb.Directory()
    for name in sorted(node):
        value = node[name]
        if isinstance(value, dict):
            directory.directories.add(name=name, digest=_encode_tree(value, fn, blobs).to_proto())
        else:
            d, executable = value
            directory.files.add(name=name, digest=d.to_proto(), is_executable=executable)
    digest, data = fn.of_message(directory)
    blobs[digest] = data
    return digest
