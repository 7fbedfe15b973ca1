"""What a sandbox is asked to run, and what it answers. Knows nothing of manifests or caches.

Paths in a spec are *action-relative*: relative to the action's root, the directory the action
sees as its execroot (``/execroot`` under bwrap, a private directory under ``dir``, the real
project directory ``root`` under ``off``). ``@@EXECROOT@@`` in ``argv`` and in ``env`` values is
replaced by that root's absolute path as the action sees it (see ``sandbox/placeholder.py``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Protocol


@dataclass(frozen=True)
class Guarantees:
    """What a sandbox backend promises about every action it runs. The engine decides from
    these alone (never from a backend's name) which results the shared caches may take
    (engine/trust/policy.py)."""

    # a file the action did not declare (and that is not under the system roots, a declared
    # tool's root or an installed payload) does not exist for it
    confines_reads: bool
    # the action can write nothing but its own directory (and a private /tmp)
    confines_writes: bool
    # no process the action started outlives it
    kills_leftovers: bool
    # the action runs in a directory of its own holding its declared inputs, which it cannot change
    stages_inputs: bool
    # every file an action's depfile names (and every response file its argv names) is
    # checked against its declared inputs, and the action fails on one that is not
    checks_depfile: bool

    @property
    def hermetic(self) -> bool:
        """Every result is that of exactly the action's declared inputs and tools."""
        return self.confines_reads and self.confines_writes and self.kills_leftovers and self.stages_inputs

    @property
    def missing(self) -> tuple[str, ...]:
        """The promises this backend does not make, by name."""
        return tuple(name for name in GUARANTEE_NAMES if not getattr(self, name))


GUARANTEE_NAMES = ("confines_reads", "confines_writes", "kills_leftovers", "stages_inputs", "checks_depfile")


@dataclass(frozen=True)
class SandboxSpec:
    """What one sandboxed run is given: the command, its environment, inputs and outputs."""
    argv: tuple[str, ...]
    env: Mapping[str, str]  # exactly the environment the action sees, in every mode
    # {path relative to the action's root: absolute path of a local file holding its bytes}
    inputs: Mapping[str, str]
    tools: tuple[str, ...]  # absolute paths of executables the action runs (read-only)
    outputs: tuple[str, ...]  # paths relative to the action's root to collect
    cwd: str = "."  # relative to the action's root
    timeout: float | None = None
    network: bool = False
    label: str = ""  # the action's id, for messages
    # A make-syntax depfile the action writes (action-relative). bwrap and dir check every
    # dependency it names against the declared inputs, tools and system roots.
    depfile: str | None = None
    # `off` only: the real directory that the action-relative paths are relative to.
    root: str | None = None
    # Where the collected outputs are moved (bwrap, dir), keeping their relative paths; default:
    # the pool's results directory under the work root, flat, each file removed by
    # `release(result)` once the caller has ingested it (or moved it away)
    out_dir: str | None = None
    # The action runs again with mostly the same inputs (a local build's link, from one build to
    # the next): bwrap may keep its many inputs as a prepared tree between runs, keyed by the
    # label, outputs, `root` and `out_dir` (input_tree.py). Not for one-off actions (a remote
    # worker's, a probe's), whose trees nothing would reuse.
    prepared_tree: bool = False
    # {input source path: its (st_dev, st_ino)} as the caller saw the source when it staged it
    # (a regular file): a prepared tree takes these instead of a `stat` of its own per input.
    # May name more sources than `inputs` holds; a source it lacks is stat'ed.
    input_ids: Mapping[str, tuple[int, int]] | None = None
    # Called once, when everything before the action's own process is done (inputs staged, its
    # directory ready) and the process is about to start: the engine's scheduling thread waits
    # for this on a build's first action before it goes on with its own Python work
    # (engine/exec/pipeline.py, `first_started`). Not part of what the action is.
    started: Callable[[], None] | None = field(default=None, compare=False, repr=False)


@dataclass
class SandboxResult:
    """How a sandboxed run ended: its exit status and what it printed."""
    exit_code: int
    stdout: bytes
    stderr: bytes
    # {relative output path: absolute path where the produced file now lies}
    outputs: dict[str, str] = field(default_factory=dict)
    timed_out: bool = False
    duration: float = 0.0
    # dependencies named by the depfile that were not declared (action-relative when inside the
    # action's root, absolute otherwise); non-empty implies a non-zero exit_code and no outputs
    undeclared: list[str] = field(default_factory=list)
    # the action's root as the action saw it (`/execroot`, a private directory, the real root):
    # the engine shows paths under it in the action's output as the user's paths
    root_seen: str = ""
    # every dependency the depfile names (`parse_depfile`), as the check parsed it, for the
    # engine to take instead of reading and parsing the moved depfile again; None: not parsed
    # here (no depfile, no check, or a depfile that is not ASCII, which the engine decodes its way)
    deps: list[str] | None = None


class Sandbox(Protocol):
    """bwrap, dir and off implement all of it; a test double may implement only ``run``."""

    name: str
    guarantees: Guarantees

    def run(self, spec: SandboxSpec) -> SandboxResult:
        """Run one action; safe to call from several threads at once. A failing action is a
        result with a non-zero exit code; a malformed spec raises ``SandboxSpecError``; a run
        interrupted by ``shutdown()`` raises ``SandboxClosed``."""
        ...

    def release(self, result: SandboxResult) -> None:
        """Remove ``result``'s collected outputs still held by the sandbox (after ingesting)."""
        ...

    def shutdown(self) -> None:
        """Kill every running action's process group and remove every sandbox directory."""
        ...
