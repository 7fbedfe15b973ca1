"""The validated, typed view of one `mcpp.toml`. Plain data; `load.py` builds it."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import Position

TARGET_KINDS = ("bin", "lib", "shared")


@dataclass(frozen=True)
class DependencySpec:
    key: str  # the name under which the manifest declares it (without namespace)
    namespace: str | None
    path: str  # absolute directory of the dependency's package
    written_path: str = ""  # as the manifest spells it, for messages
    features: tuple[str, ...] = ()
    default_features: bool = True
    pos: Position | None = None  # position of the entry, for errors about it
    path_pos: Position | None = None

    @property
    def display(self) -> str:
        return f"{self.namespace}.{self.key}" if self.namespace else self.key


@dataclass(frozen=True)
class TargetSpec:
    name: str
    kind: str  # one of TARGET_KINDS
    main: str | None = None  # package-relative path of the entry source (bin)
    pos: Position | None = None


@dataclass(frozen=True)
class FeatureSpec:
    name: str
    implies: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    pos: Position | None = None


@dataclass(frozen=True)
class ProfileSpec:
    name: str
    inherits: str | None = None
    opt: str | None = None  # "0".."3", "s", "z", "g"
    debug: bool | None = None
    cflags: tuple[str, ...] = ()
    cxxflags: tuple[str, ...] = ()
    ldflags: tuple[str, ...] = ()


@dataclass(frozen=True)
class BuildSpec:
    sources: tuple[str, ...] | None = None  # None: the convention glob; () means nothing
    include_dirs: tuple[str, ...] = ()
    cflags: tuple[str, ...] = ()
    cxxflags: tuple[str, ...] = ()
    ldflags: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()
    sources_pos: Position | None = None


@dataclass
class Manifest:
    path: str  # absolute path of the mcpp.toml
    root: str  # its directory
    name: str | None  # None for a virtual workspace
    version: str | None
    namespace: str | None = None
    standard: str = "c++20"
    targets: tuple[TargetSpec, ...] = ()
    explicit_targets: bool = False
    lib_path: str | None = None
    build: BuildSpec = field(default_factory=BuildSpec)
    profiles: dict[str, ProfileSpec] = field(default_factory=dict)
    features: dict[str, FeatureSpec] = field(default_factory=dict)
    default_features: tuple[str, ...] = ()
    dependencies: tuple[DependencySpec, ...] = ()
    dev_dependencies: tuple[DependencySpec, ...] = ()
    workspace_members: tuple[str, ...] | None = None  # None: not a workspace root
    toolchain: str | None = None
    warnings: list[str] = field(default_factory=list)
    smap: object = None  # toml_positions.SourceMap of the file, for later diagnostics

    @property
    def is_virtual(self) -> bool:
        return self.name is None

    def position(self, *path: str | int, prefer: str = "value") -> Position:
        """Where `path` sits in this manifest (its value, else its nearest known ancestor)."""
        line, col = self.smap.nearest(tuple(path), prefer=prefer)
        return Position(self.path, line, col)
