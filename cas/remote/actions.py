"""Translating an mcpp `Action` into REAPI messages, entirely in the server's digest space.

The remote key of an action is the digest of a REAPI `Action` message: its `Command` (argv,
sorted environment, sorted output paths, working directory, platform properties) and its input
root `Directory` tree (every input file with its digest under the server's digest function).
Any other client that builds the same action on any machine arrives at the same digest, so the
encoding must hold nothing machine-specific: every path in it is execroot-relative (the engine
guarantees that for argv, inputs and outputs); tools are absolute system paths (`/usr/bin/g++`)
and so are *not* placed in the input root (that would make the tree depend on the host's
layout) but named, with the digest of their bytes, in `Command.platform`, next to the toolchain
identity (version, target, compiler digests) and the host triple. Changing a compiler's bytes
therefore changes every remote key, as it changes every local one.

`REMOTE_ENCODING` says where each keyed field of `Action` (and of `Platform`) goes;
`tests/unit/remote/test_remote_actions.py` fails when a field of `cas.action.KEY_FIELDS` has no
place here, the same guard `action_key` has.

Two-level lookup, remotely: a compile's key covers headers known only from a depfile, so a fresh
machine cannot compute it. The header sets travel as a *manifest*: an `ActionResult` stored under
a synthetic Action derived from the first-level Action (the compile without its discovered
inputs), whose one output file is `manifest.json` (`{"v": 1, "sets": [[path, ...], ...]}`).
"""
from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from . import protocol as pb
from ..action import KEY_VERSION, Action, Platform
from ..digest import Digest
from .digests import BadDigest, DigestFunction, RemoteDigest
from .local_digests import attach, claimed

if TYPE_CHECKING:
    # protobuf ships no types, and the REAPI classes are built at run time (protocol.py): to
    # the type checker a message is `Any`; the name says which kind of value it is.
    from google.protobuf.message import Message

ENCODING_VERSION = "mcpp-remote-v1"
MANIFEST_PATH = "manifest.json"
MANIFEST_SETS = 8
# Where a remote set of discovered inputs may name files outside the execroot: the system roots
# a sandboxed action reads (a link's `libc.so` script names `/lib/x86_64-linux-gnu/libc.so.6`).
HOST_FILE_ROOTS = ("/usr/", "/lib/", "/lib32/", "/lib64/", "/libx32/")

# Where each keyed field of `Action` lands in the remote messages (see the module docstring).
REMOTE_ENCODING = {
    "argv": "Command.arguments",
    "env": "Command.environment_variables, sorted by name",
    "outputs": "Command.output_paths, sorted, relative to the working directory",
    "cwd": "Command.working_directory",
    "inputs": "the input root Directory tree (with the discovered inputs and their digests); a discovered "
              "file outside the execroot (a system header) as Command.platform property `mcpp-host-file` = "
              "`<path>=<digest>`, as tools are",
    "tools": "Command.platform property `mcpp-tool` = `<path>=blake3:<digest>`",
    "depfile": "Command.platform property `mcpp-depfile`",
    "content_keyed": "Command.platform property `mcpp-content-keyed` = `1`, and then no `mcpp-toolchain` (the "
                     "tools' digests stand for it; the arguments keep the tools' paths, which a worker runs)",
}
PLATFORM_ENCODING = {
    "toolchain": "Command.platform property `mcpp-toolchain`",
    "host": "Command.platform property `mcpp-host`",
    "namespace": "Command.platform property `mcpp-namespace`, when not empty (results of non-hermetic "
                 "runs, which the engine never uploads)",
}


@dataclass(frozen=True, slots=True)
class RemoteAction:
    """An action as the server names it, plus the messages a result upload must include."""

    digest: RemoteDigest  # of the serialized `Action`: the action cache key
    blobs: dict[RemoteDigest, bytes]  # the `Action` and `Command` messages
    working_directory: str  # "" for the input root


def remote_action(action: Action, platform: Platform, tools: Mapping[str, Digest],
                  inputs: Mapping[str, RemoteDigest], fn: DigestFunction) -> RemoteAction:
    """The REAPI Action for `action` with the input files `inputs` (path -> remote digest).

    `tools` maps each of `action.tools` to the blake3 digest of its bytes. `inputs` must cover
    `action.inputs` plus any discovered inputs that belong in the key.
    """
    cwd = working_directory(action.cwd)
    props = [
        ("mcpp-key", f"{ENCODING_VERSION} {KEY_VERSION}"),
        ("mcpp-content-keyed", "1") if action.content_keyed else ("mcpp-toolchain", platform.toolchain),
        ("mcpp-host", platform.host),
        ("mcpp-depfile", action.depfile or ""),
    ]
    props += [("mcpp-tool", f"{t}=blake3:{tools[t]}") for t in action.tools]
    if platform.namespace:
        props.append(("mcpp-namespace", platform.namespace))
    # Host files a depfile named (absolute: `/usr/include/stdio.h`) are keyed like tools: by path
    # and digest, outside the input root, whose paths are all execroot-relative.
    host_files = {p: d for p, d in inputs.items() if posixpath.isabs(p)}
    props += [("mcpp-host-file", f"{p}={d}") for p, d in sorted(host_files.items())]
    command = pb.Command(
        arguments=list(action.argv),
        environment_variables=[pb.Command.EnvironmentVariable(name=k, value=v) for k, v in sorted(action.env)],
        output_paths=sorted(relative_to(o, cwd) for o in action.outputs),
        working_directory=cwd,
        platform=_platform(props),
    )
    tree = {p: d for p, d in inputs.items() if p not in host_files}
    return _action(command, input_root(tree, fn), fn, cwd)


def manifest_action(first_level: RemoteAction, fn: DigestFunction) -> RemoteAction:
    """The synthetic Action whose result names the header sets seen for `first_level`."""
    command = pb.Command(
        arguments=["mcpp-header-manifest", str(first_level.digest)],
        output_paths=[MANIFEST_PATH],
        platform=_platform([("mcpp-key", ENCODING_VERSION)]),
    )
    return _action(command, input_root({}, fn), fn, "")


def input_root(files: Mapping[str, RemoteDigest], fn: DigestFunction) -> RemoteDigest:
    """The digest of the canonical `Directory` tree holding `files` (relative paths)."""
    return _encode_directory(nest(files), fn)


# Nested dicts of path components whose leaves are the values `nest` was given.
PathTree = dict[str, Any]


def nest(files: Mapping[str, object]) -> PathTree:
    """Relative paths -> their leaves, as nested dicts of path components (the shape of a
    `Directory` tree); a path that is both a file and a directory is refused."""
    tree: PathTree = {}
    for path, leaf in files.items():
        parts = _parts(path)
        node = tree
        for name in parts[:-1]:
            node = node.setdefault(name, {})
            if not isinstance(node, dict):
                raise ValueError(f"input {path!r}: {name!r} is both a file and a directory")
        if isinstance(node.get(parts[-1]), dict):
            raise ValueError(f"input {path!r} is both a file and a directory")
        node[parts[-1]] = leaf
    return tree


# --- results ---------------------------------------------------------------------------------

def action_result(action: Action, outputs: Mapping[str, tuple[RemoteDigest, bool]],
                  stdout: RemoteDigest | None, stderr: RemoteDigest | None,
                  local: Mapping[str, Digest] | None = None) -> Message:
    """The `ActionResult` of a successful run: `outputs` maps execroot paths to (digest, executable);
    `local` the output files' blake3 digests, which the result carries (local_digests.py) when
    the server names blobs otherwise."""
    cwd = working_directory(action.cwd)
    result = pb.ActionResult(exit_code=0)
    if local:
        attach(result, {relative_to(p, cwd): d for p, d in local.items() if not p.endswith("/")})
    for path in sorted(outputs):
        d, executable = outputs[path]
        if path.endswith("/"):  # a tree output: `d` names its REAPI Tree (cas/tree.py)
            result.output_directories.add(path=relative_to(path.rstrip("/"), cwd), tree_digest=d.to_proto())
            continue
        result.output_files.add(path=relative_to(path, cwd), digest=d.to_proto(), is_executable=executable)
    if stdout is not None:
        result.stdout_digest.CopyFrom(stdout.to_proto())
    if stderr is not None:
        result.stderr_digest.CopyFrom(stderr.to_proto())
    return result


def result_outputs(action: Action, result: Message, fn: DigestFunction) -> dict[str, tuple[RemoteDigest, bool]] | None:
    """execroot path -> (digest, executable) for every declared output, or None when the result
    lacks one (a result of some other client's different idea of this action: a miss). Raises
    `BadDigest` when it names an output by a malformed digest (digests are `fn`'s)."""
    cwd = working_directory(action.cwd)
    by_path = {f.path: f for f in result.output_files}
    trees = {t.path: t for t in result.output_directories}
    out: dict[str, tuple[RemoteDigest, bool]] = {}
    for path in action.outputs:
        if path.endswith("/"):
            t = trees.get(relative_to(path.rstrip("/"), cwd))
            if t is None:
                return None
            out[path] = (RemoteDigest.from_wire(t.tree_digest, fn), False)
            continue
        f = by_path.get(relative_to(path, cwd))
        if f is None:
            return None
        out[path] = (RemoteDigest.from_wire(f.digest, fn), f.is_executable)
    return out


def result_local_digests(action: Action, result: Message) -> dict[str, Digest]:
    """execroot path -> the blake3 digest `result` claims for that output file (local_digests.py)."""
    cwd = working_directory(action.cwd)
    by_rel = claimed(result)
    out = {}
    for path in action.outputs:
        d = by_rel.get(relative_to(path, cwd)) if not path.endswith("/") else None
        if d is not None:
            out[path] = d
    return out


def manifest_result(blob: RemoteDigest) -> Message:
    result = pb.ActionResult(exit_code=0)
    result.output_files.add(path=MANIFEST_PATH, digest=blob.to_proto())
    return result


def manifest_blob_of(result: Message, fn: DigestFunction) -> RemoteDigest | None:
    """The manifest blob a synthetic result names; None when it names none (or a malformed one:
    a manifest is only ever a hint, so a bad one is no manifest)."""
    for f in result.output_files:
        if f.path == MANIFEST_PATH:
            try:
                return RemoteDigest.from_wire(f.digest, fn)
            except BadDigest:
                return None
    return None


def encode_manifest(sets: list[tuple[str, ...]]) -> bytes:
    return json.dumps({"v": 1, "sets": [list(s) for s in sets]}, separators=(",", ":")).encode()


def decode_manifest(data: bytes) -> list[tuple[str, ...]]:
    """The header sets of a manifest blob; [] for anything malformed (a miss, not an error)."""
    try:
        obj = json.loads(data)
        if obj.get("v") != 1:
            return []
        sets = []
        for s in obj["sets"]:
            if not all(isinstance(p, str) for p in s):
                return []
            paths = tuple(s)
            for p in paths:
                if posixpath.isabs(p):
                    # A system header or library, keyed as `mcpp-host-file`. The client reads
                    # (hashes) every file a set names, so a server may name only files under the
                    # system roots a sandboxed action can read, never `/etc/passwd` or `/home/...`.
                    if posixpath.normpath(p) != p or not p.startswith(HOST_FILE_ROOTS):
                        return []
                    continue
                _parts(p)  # relative, normalized: a path that escapes the execroot is refused
            sets.append(paths)
        return sets[:MANIFEST_SETS]
    except (ValueError, KeyError, TypeError, AttributeError):
        return []


def merge_manifest(sets: list[tuple[str, ...]], new: tuple[str, ...]) -> list[tuple[str, ...]]:
    """`new` first, then the older sets without it, at most `MANIFEST_SETS` (as locally)."""
    new = tuple(sorted(set(new)))
    return ([new] + [s for s in sets if s != new])[:MANIFEST_SETS]


# --- internals -------------------------------------------------------------------------------

def relative_to(path: str, cwd: str) -> str:
    return posixpath.relpath(path, cwd) if cwd else posixpath.normpath(path)


def working_directory(cwd: str) -> str:
    cwd = posixpath.normpath(cwd or ".")
    return "" if cwd == "." else "/".join(_parts(cwd))


def _parts(path: str) -> list[str]:
    norm = posixpath.normpath(path)
    if posixpath.isabs(norm) or norm == "." or norm == ".." or norm.startswith("../"):
        raise ValueError(f"path {path!r} is not inside the execroot; it cannot be part of a remote key")
    return norm.split("/")


def _platform(props: list[tuple[str, str]]) -> Message:
    # REAPI: properties sorted by name, then value, so equal platforms serialize alike.
    return pb.Platform(properties=[pb.Platform.Property(name=n, value=v) for n, v in sorted(props)])


def _action(command: Message, root: RemoteDigest, fn: DigestFunction, cwd: str) -> RemoteAction:
    command_digest, command_bytes = fn.of_message(command)
    action = pb.Action(command_digest=command_digest.to_proto(), input_root_digest=root.to_proto(),
                       do_not_cache=False)
    digest, action_bytes = fn.of_message(action)
    return RemoteAction(digest, {digest: action_bytes, command_digest: command_bytes}, cwd)


def _encode_directory(node: PathTree, fn: DigestFunction) -> RemoteDigest:
    directory = pb.Directory()
    for name in sorted(node):
        value = node[name]
        if isinstance(value, dict):
            directory.directories.add(name=name, digest=_encode_directory(value, fn).to_proto())
        else:
            directory.files.add(name=name, digest=value.to_proto(), is_executable=False)
    return fn.of_message(directory)[0]
