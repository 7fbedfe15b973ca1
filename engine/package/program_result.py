"""What a package's build program declared: plain data the planner turns into actions and flags,
and the evaluation cache stores as JSON (so a cache hit needs no Starlark at all).

It is part of the package model (`Package.program`) rather than of `engine/program/`, which
evaluates programs: the planner and the package's include directories read it without depending
on the evaluator, and the evaluator depends on the package model, not the other way round."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# What an action's outputs become (`role` of `mcpp.action`, docs/rules.md): compiled with the
# package, linked into it, checked (run, consumed by nobody), or made after the link.
ROLES = ("source", "object", "check", "artifact")


@dataclass(frozen=True)
class RuleAction:
    id: str  # as the program named it, unique within the package
    argv: tuple[str, ...]
    inputs: tuple[str, ...]  # absolute paths
    outputs: tuple[str, ...]  # absolute paths, under out_dir()
    tools: tuple[str, ...] = ()  # absolute paths
    role: str = "object"
    env: tuple[tuple[str, str], ...] = ()
    description: str = ""
    depfile: str | None = None  # absolute, under out_dir()
    # Where the program declared it (`build.star:4:1`, or a rule `.star` file's line) and the
    # lines that called that one (`build.star:7`): errors found once the plan is made name them.
    where: str = ""
    via: tuple[str, ...] = ()

    @property
    def products(self) -> tuple[str, ...]:
        """The outputs that are results (not the depfile, should a program list it as one too)."""
        return tuple(o for o in self.outputs if o != self.depfile)


# What a rule-declared target links into (`mcpp.binary`, `mcpp.library`, `mcpp.link`, `mcpp.test`).
TARGET_KINDS = ("bin", "static", "shared", "test")


@dataclass(frozen=True)
class RuleCompile:
    """`mcpp.compile(...)`: sources compiled as the package's own are, plus these settings; each
    object lands at `objects[i]` (absolute, under the build's object directory)."""

    id: str  # unique within the package: the objects' directory
    srcs: tuple[str, ...]  # absolute: files of the package, or outputs of its actions
    objects: tuple[str, ...]  # absolute, one per source
    cflags: tuple[str, ...] = ()  # C sources only
    cxxflags: tuple[str, ...] = ()  # C++ sources only
    defines: tuple[str, ...] = ()
    includes: tuple[str, ...] = ()  # absolute


@dataclass(frozen=True)
class RuleTarget:
    """A binary, library or test a rule declares: what `mcpp build/run/test/install` act on."""

    name: str
    kind: str  # one of TARGET_KINDS
    objects: tuple[str, ...] = ()  # absolute: from `compile()`, or outputs of the package's actions
    libs: tuple[str, ...] = ()  # `-l<name>` for a bare name, else passed to the link as written
    deps: tuple[str, ...] = ()  # static rule libraries of this package it links, by name
    data: tuple[str, ...] = ()  # test: absolute paths, passed to the test binary as its arguments
    binary: str | None = None  # test: runs this rule binary of the package instead of linking one
    testonly: bool = False  # bin: built for `mcpp test` alone (what its tests run), never run or installed


@dataclass
class ProgramResult:
    actions: list[RuleAction] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  # package-relative, chosen by `source()`
    generated: list[str] = field(default_factory=list)  # absolute, under out_dir(), by `generated()`
    objects: list[str] = field(default_factory=list)  # absolute, under out_dir(), by `object()`
    cflags: list[str] = field(default_factory=list)
    cxxflags: list[str] = field(default_factory=list)
    defines: list[str] = field(default_factory=list)
    include_dirs: list[str] = field(default_factory=list)  # absolute
    link_libs: list[str] = field(default_factory=list)
    link_search: list[str] = field(default_factory=list)  # absolute
    warnings: list[str] = field(default_factory=list)
    facts: dict[str, str] = field(default_factory=dict)  # name -> version
    floors: list[str] = field(default_factory=list)  # "name >= v"
    provided: dict = field(default_factory=dict)  # `provide(**fields)`: plain JSON data for dependents
    compiles: list[RuleCompile] = field(default_factory=list)  # `compile()`, in call order
    targets: list[RuleTarget] = field(default_factory=list)  # `binary()`, `library()`, `link()`, `test()`

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "ProgramResult":
        actions = [RuleAction(**{**a, "argv": tuple(a["argv"]), "inputs": tuple(a["inputs"]),
                                 "outputs": tuple(a["outputs"]), "tools": tuple(a["tools"]),
                                 "env": tuple(tuple(kv) for kv in a["env"]),
                                 "via": tuple(a.get("via", ()))})
                   for a in data["actions"]]
        compiles = [RuleCompile(**_tupled(c)) for c in data.get("compiles", [])]
        targets = [RuleTarget(**_tupled(t)) for t in data.get("targets", [])]
        return cls(**{**data, "actions": actions, "compiles": compiles, "targets": targets})


def _tupled(fields: dict) -> dict[str, Any]:
    """A dataclass's fields read back from JSON: its lists are tuples again."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()}
