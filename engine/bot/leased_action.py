"""One leased REAPI `Action` run by `mcpp worker`: stage, run in the sandbox, upload, answer.

The worker runs an action as a local build does: the same `SandboxSpec` (argv and environment
with the `@@EXECROOT@@` placeholder, the declared inputs staged by hard link, the tools mounted
read-only, the depfile checked for undeclared inputs, the timeout enforced on the process
group) through the same sandbox (bwrap when it works), and stdout/stderr made portable the same
way (`action_output.portable`), so a diagnostic reads the same whether the compile ran here or
on the worker. The inputs come from the worker's CAS cache (`cas/remote/worker_cas.py`).

Outputs, stdout and stderr are uploaded (only what the server lacks) before the `ActionResult`
naming them is returned: the server then answers the client and stores the result in its
action cache.
"""
from __future__ import annotations

import os
import posixpath
import shutil
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass

from google.protobuf.message import DecodeError

from mcpp.cas.digest import digest_file
from mcpp.cas.remote import protocol as pb
from mcpp.cas.remote.client import RemoteClient
from mcpp.cas.remote.digests import BadDigest, DigestFunction, RemoteDigest
from mcpp.cas.remote.exec_messages import TOOL_PROPERTY, decode_command
from mcpp.cas.remote.worker_cas import WorkerCas
from mcpp.sandbox import SandboxSpec, SandboxSpecError

from ..core.paths import ExecPath
from ..exec.action_output import portable


@dataclass
class LeaseOutcome:
    result: object  # pb.ActionResult
    timed_out: bool
    outputs: list[ExecPath]  # the paths produced
    exit_code: int
    duration: float
    # seconds in each part of `duration`: fetching and staging inputs, the sandboxed run, the
    # upload of outputs (what a worker adds to the run itself is stage + upload)
    phases: dict[str, float]


class ToolMismatch(Exception):
    """The action names a tool whose bytes here differ from the ones it was keyed on."""


class MalformedAction(Exception):
    """The action (or a message it names) is not a well-formed REAPI action: a digest that is not
    one, a directory entry that is not a single path component, bytes that do not parse."""


def run_leased_action(action, client: RemoteClient, cas: WorkerCas, sandbox, work_dir: str,
                      worker_name: str, tool_digests: dict[str, str]) -> LeaseOutcome:
    """Run one REAPI `Action` message; `tool_digests` maps each tool this worker has to its blake3.

    Raises `MalformedAction` (before anything is staged) for an action that names a blob by
    something that is not a digest of the server's function, or a file by a path that is not one."""
    start = time.monotonic()
    fn = client.digest_function
    with _well_formed():
        command_digest = RemoteDigest.from_wire(action.command_digest, fn)
        root_digest = RemoteDigest.from_wire(action.input_root_digest, fn)
        cas.ensure([command_digest, root_digest])  # one request for both
        command = pb.Command()
        command.ParseFromString(cas.read(command_digest))
    props = decode_command(command)
    tools = []
    for p in command.platform.properties:
        if p.name == TOOL_PROPERTY:
            path, _, want = p.value.partition("=blake3:")
            if tool_digests.get(path) != want:
                raise ToolMismatch(f"tool {path} here is not blake3:{want}")
            tools.append(path)
    with _well_formed():
        files = _input_files(cas, root_digest, fn)
    cas.ensure(d for d, _x in files.values())
    inputs = {rel: cas.staged(d, x) for rel, (d, x) in files.items()}
    wd = command.working_directory
    outputs = tuple(posixpath.normpath(posixpath.join(wd, p)) for p in command.output_paths)
    timeout = float(props["mcpp-timeout"]) if props.get("mcpp-timeout") else None
    out_dir = tempfile.mkdtemp(prefix="out-", dir=work_dir)
    staged = time.monotonic()
    try:
        spec = SandboxSpec(
            argv=tuple(command.arguments), env={e.name: e.value for e in command.environment_variables},
            inputs=inputs, tools=tuple(tools), outputs=outputs, cwd=wd or ".", timeout=timeout,
            label=f"`remote action {command_digest.hash[:12]}`",
            depfile=props.get("mcpp-depfile") or None, out_dir=out_dir)
        try:
            res = sandbox.run(spec)
            code, out, err = res.exit_code, portable(res.stdout, res.root_seen), portable(res.stderr, res.root_seen)
            timed_out = res.timed_out
        except SandboxSpecError as e:
            code, out, err, timed_out = 2, b"", f"error: remote action: {e}\n".encode(), False
        ran = time.monotonic()
        result = pb.ActionResult(exit_code=code)
        blobs: dict[RemoteDigest, bytes] = {}
        produced = []
        if code == 0 and not timed_out:
            for rel, wd_rel in zip(outputs, command.output_paths):
                path = os.path.join(out_dir, rel)
                if not os.path.isfile(path):
                    continue
                with open(path, "rb") as f:
                    data = f.read()
                d = client.digest_function.of_bytes(data)
                blobs[d] = data
                result.output_files.add(path=wd_rel, digest=d.to_proto(),
                                        is_executable=bool(os.stat(path).st_mode & 0o111))
                produced.append(rel)
        for name, data in (("stdout", out), ("stderr", err)):
            if data:
                d = client.digest_function.of_bytes(data)
                blobs[d] = data
                getattr(result, f"{name}_digest").CopyFrom(d.to_proto())
        if blobs:  # outputs are new bytes as a rule: upload without asking first (one request)
            client.upload(blobs)
        result.execution_metadata.worker = worker_name
        end = time.monotonic()
        return LeaseOutcome(result, timed_out, produced, code, end - start,
                            {"stage": staged - start, "run": ran - staged, "upload": end - ran})
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def _input_files(cas: WorkerCas, root: RemoteDigest, fn: DigestFunction) -> dict[str, tuple[RemoteDigest, bool]]:
    """execroot path -> (digest, executable) of every file under the input root. Every digest is
    parsed (`RemoteDigest.from_wire`: raises `BadDigest`) and every name checked to be one path
    component (raises `MalformedAction`) before anything is fetched under it."""
    out: dict[str, tuple[RemoteDigest, bool]] = {}
    level = [("", root)]
    while level:
        cas.ensure(d for _p, d in level)
        nxt = []
        for prefix, d in level:
            directory = pb.Directory()
            directory.ParseFromString(cas.read(d))
            for f in directory.files:
                out[prefix + _component(f.name)] = (RemoteDigest.from_wire(f.digest, fn), f.is_executable)
            for sub in directory.directories:
                nxt.append((prefix + _component(sub.name) + "/", RemoteDigest.from_wire(sub.digest, fn)))
        level = nxt
    return out


@contextmanager
def _well_formed():
    """Turns what a malformed action raises while it is read into `MalformedAction`."""
    try:
        yield
    except (BadDigest, DecodeError) as e:
        raise MalformedAction(str(e) or type(e).__name__) from None


def _component(name: str) -> str:
    """`name` when it is one path component (REAPI: no `/`, not `.` or `..`, not empty)."""
    if not name or name in (".", "..") or "/" in name or "\x00" in name:
        raise MalformedAction(f"directory entry {name[:64]!r} is not a file name")
    return name


def tool_digest(path: str) -> str:
    return digest_file(path).hash
