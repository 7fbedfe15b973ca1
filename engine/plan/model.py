"""What the planner produces: a `Plan` (actions, their order, files to write first) and the
`Artifact`s users care about. Every path in it is relative to the execroot."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from mcpp.cas.action import Action

from ..core.action_env import ACTION_ENV  # noqa: F401 - planning's modules take it from here
from ..core.paths import AbsPath, ExecPath


class ArtifactKind(StrEnum):
    """A `str` enum: compares equal to, formats as and serializes to its value (`"bin"`)."""

    BIN = "bin"
    LIB = "lib"
    SHARED = "shared"
    TEST = "test"  # a test binary, built only for `mcpp test`


@dataclass
class Artifact:
    """A final output of a build: a binary, a library or a test."""
    package: str
    name: str
    kind: ArtifactKind
    path: ExecPath
    # (link, what it points to) made after the build: a shared library's libz.so -> libz.so.1
    aliases: tuple[tuple[str, str], ...] = ()
    args: tuple[str, ...] = ()  # a test's arguments: the data files a rule's `mcpp.test` names


@dataclass
class Plan:
    """The actions of a build and the artifacts they make."""
    execroot: AbsPath
    actions: list[Action] = field(default_factory=list)
    prereqs: dict[str, tuple[str, ...]] = field(default_factory=dict)  # action id -> action ids
    package_of: dict[str, str] = field(default_factory=dict)  # action id -> package name
    generated: dict[str, bytes] = field(default_factory=dict)  # execroot path -> bytes to write
    artifacts: list[Artifact] = field(default_factory=list)
    compile_commands: list[dict] = field(default_factory=list)
    made_by: dict[str, str] = field(default_factory=dict)  # execroot path -> id of the action writing it
    # tree outputs (execroot-relative, `/`-ended) whose files a rule compiles: planned once the
    # generator ran (dynamic_trees.py)
    dynamic: list[str] = field(default_factory=list)
    # action id -> (`file:line:col`, the lines that called it) of a build program's declaration
    declared_at: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    # `compile_commands` as the file's bytes, made once per plan (engine/build/build_outputs.py)
    compile_commands_json: bytes | None = field(default=None, repr=False, compare=False)
    # What a build derives from the plan alone, made once per plan: `actions` larger compiles
    # first (engine/exec/larger_first.py `by_size`), `index` and `staged_inputs`. A server makes
    # them while idle after the build that planned (engine/server/warm.py): a build it gives the
    # plan to then does not walk every action for them before its first compile (~25 ms at
    # 10,000 units in a child forked for the request, where each action's first touch copies a
    # page). Each is made again where actions were added since (`add`, while planning).
    by_size: list[Action] | None = field(default=None, repr=False, compare=False)
    _index: dict[str, Action] = field(default_factory=dict, init=False, repr=False, compare=False)
    _staged: frozenset[str] = field(default=frozenset(), init=False, repr=False, compare=False)
    _derived_of: int = field(default=-1, init=False, repr=False, compare=False)  # len(actions) both were made for

    def add(self, action: Action, package: str, prereqs: list[str]) -> None:
        self.actions.append(action)
        self.prereqs[action.id] = tuple(dict.fromkeys(prereqs))
        self.package_of[action.id] = package
        for out in action.outputs:
            self.made_by[out] = action.id

    def index(self) -> dict[str, Action]:
        """The actions by id."""
        self._derive()
        return self._index

    def staged_inputs(self) -> frozenset[str]:
        """The inputs of the actions that wait on another: the outputs a later action stages."""
        self._derive()
        return self._staged

    def _derive(self) -> None:
        if self._derived_of != len(self.actions):  # one walk makes both (the pipeline takes both)
            prereqs = self.prereqs
            self._index = {a.id: a for a in self.actions}
            self._staged = frozenset(p for a in self.actions if prereqs.get(a.id) for p in a.inputs)
            self._derived_of = len(self.actions)

    def producers(self, action: Action) -> list[str]:
        """The actions planned so far that write one of `action`'s inputs."""
        return [self.made_by[i] for i in action.inputs if i in self.made_by]
