"""The values of the package model: one package with its edges, what the command line selects,
and the graph of one build."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..manifest.context import BuildContext
from ..manifest.model import DependencySpec, Manifest
from .system_libs import SystemFlags

if TYPE_CHECKING:  # a build program's result: imported where a package has a build.star
    from .program_result import ProgramResult


@dataclass(eq=False)  # one object per package of the build: it hashes and compares by identity
class Package:
    """One package of a build: its manifest and the packages it depends on."""
    manifest: Manifest
    deps: list["Package"] = field(default_factory=list)  # library deps, manifest order
    dev_deps: list["Package"] = field(default_factory=list)
    features: set[str] = field(default_factory=set)  # active, implies expanded
    edges: list[tuple[DependencySpec, "Package"]] = field(default_factory=list)  # every spec -> package
    # Edges with `tools = [...]`: the dependency is built for the build machine as a host tool
    # (engine/build/host_tools.py), never linked into this package, so it is not part of `order`.
    tool_edges: list[DependencySpec] = field(default_factory=list)
    # What its build.star declared; the program driver fills it in once the program has been
    # evaluated (after the host tools exist), None for a package without a build program.
    program: ProgramResult | None = None
    # Its system libraries' flags (engine/package/system_libs.py), set once per build before
    # planning; `dev_system` those of its [dev-dependencies], for its tests.
    system: SystemFlags = field(default_factory=SystemFlags)
    dev_system: SystemFlags = field(default_factory=SystemFlags)

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def version(self) -> str:
        return self.manifest.version

    @property
    def root(self) -> str:
        return self.manifest.root


@dataclass
class Selection:
    """What the command line asks for."""

    packages: tuple[str, ...] = ()  # -p; empty: the default members
    features: tuple[str, ...] = ()
    all_features: bool = False
    no_default_features: bool = False
    with_dev_deps: bool = False  # only `mcpp test` resolves [dev-dependencies]
    target: str | None = None  # --target TRIPLE; None: the host
    accel: str | None = None  # --accel SPEC; None: the root package's [build] accel
    no_accel: bool = False  # --no-accel: the empty accelerator set
    strict: bool = False  # --strict: unknown keys are errors
    locked: bool = False  # --locked: mcpp.lock may not change (engine/registry/)
    offline: bool = False  # --offline: index packages from the source cache or vendor/ only
    archive_members: bool = False  # `mcpp pack`: each member's library is archived even beside its bins


@dataclass
class PackageGraph:
    """The packages of a build, resolved, in dependency order."""
    root_manifest: Manifest
    workspace_root: str  # where target/ lives
    members: list[Package]  # the packages this command builds
    order: list[Package]  # every package, dependencies first
    context: BuildContext | None = None  # what every manifest was folded for
    target_override: str | None = None  # a host tool's build puts its target/ elsewhere
    lock_file: str | None = None  # mcpp.lock, when the graph has index packages
    resolution: Any = None  # their resolution (engine/registry/session.py), for `mcpp tree`
    archive_members: bool = False  # Selection.archive_members

    @property
    def target_dir(self) -> str:
        return self.target_override or os.path.join(self.workspace_root, "target")


def declared_by(owner: Package, spec: DependencySpec) -> tuple[Package, tuple]:
    """A stable identity for the dependency entry `spec` of `owner`'s manifest: where it is
    written. (A `DependencySpec` compares by value and holds unhashable positions.)"""
    return owner, spec.keypath
