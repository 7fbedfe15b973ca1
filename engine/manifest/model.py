"""The validated, typed view of one `mcpp.toml`, folded for one build context. Plain data;
`load.py` builds it, `fold.py` decides which conditional entries it contains."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..core.accel import AccelSet
from ..core.errors import Position
from ..core.paths import AbsPath, PkgPath
from .reader import display_path

TARGET_KINDS = ("bin", "lib", "shared", "test")
# A link input written `$OUT/<path>` is the file `<path>` of the build program's `out_dir()`.
OUT_PREFIX = "$OUT/"
# The entry source of a binary a manifest does not name, the first that exists.
DEFAULT_MAINS = ("src/main.cpp", "src/main.c")


@dataclass(frozen=True)
class DependencySpec:
    """One dependency as a manifest declares it."""
    key: str  # the name under which the manifest declares it (without namespace)
    namespace: str | None
    path: AbsPath  # the dependency's package directory
    written_path: str = ""  # as the manifest spells it, for messages
    features: tuple[str, ...] = ()
    default_features: bool = True
    pos: Position | None = None  # position of the entry, for errors about it
    path_pos: Position | None = None
    tools: tuple[str, ...] = ()  # bin targets built for the build machine (engine/build/host_tools.py)
    host_module: bool = False  # every rule module of the dependency may be loaded (program/modules.py)
    reexport: bool = False  # its tools reach whoever activates the feature / depends on the declarer
    feature: str | None = None  # set for a [feature-deps.<f>] entry: the gate
    keypath: tuple = ()  # where the entry is written in the source document
    version: str | None = None  # a requirement on the dependency's [package] version (version_req.py)
    version_pos: Position | None = None
    index: bool = False  # a package of the library index (engine/registry/): `path` is set once resolved
    libs: tuple[str, ...] | None = None  # which of its libraries to link; None: the one named after it
    libs_pos: Position | None = None
    # A system library, not an mcpp package: `{ pkg-config = "zlib" }` (flags from pkg-config) or
    # `{ system = "z" }` (a bare `-lz`). Kept apart from the package graph (Manifest.system_libs).
    pkg_config: str | None = None
    system: str | None = None

    @property
    def is_system(self) -> bool:
        return self.pkg_config is not None or self.system is not None

    @property
    def display(self) -> str:
        return f"{self.namespace}.{self.key}" if self.namespace else self.key


@dataclass(frozen=True)
class PayloadSpec:
    """One xlings payload address (`[<ns>:]<name>[@<version>]`) with its version requirement."""

    address: str  # as written
    namespace: str  # default "xim"
    name: str
    version: str  # "" = any version
    axis: str  # "host" (top-level [xlings]) or "target" ([target.<selector>.xlings...])
    feature: str | None = None  # set for [feature-xlings.<f>]
    keypath: tuple = ()

    @property
    def identity(self) -> tuple[str, str]:
        """One package, one version: the version is a requirement on the payload, not part of its
        name, so `xim:glibc` and `xim:glibc@2.40` are one payload."""
        return self.namespace, self.name


@dataclass(frozen=True)
class XlingsSpec:
    """The payloads a manifest's `[xlings]` table declares."""
    deps: tuple[PayloadSpec, ...] = ()
    workspace: tuple[PayloadSpec, ...] = ()
    envs: tuple[tuple[str, str], ...] = ()
    subos: str | None = None


@dataclass(frozen=True)
class TargetSpec:
    """One `[targets.<name>]`. Its compile and link settings add to the package's `[build]`
    ones for this target alone (as CMake's `target_compile_definitions` or Bazel's `copts`)."""

    name: str
    kind: str  # one of TARGET_KINDS
    main: PkgPath | None = None  # the entry source (bin, test)
    pos: Position | None = None
    sources: tuple[str, ...] = ()  # globs of sources only this target compiles and links
    include_dirs: tuple[PkgPath, ...] = ()  # for this target's own sources
    defines: tuple[str, ...] = ()
    cflags: tuple[str, ...] = ()
    cxxflags: tuple[str, ...] = ()
    ldflags: tuple[str, ...] = ()
    deps: tuple[str, ...] = ()  # names of [dependencies]/[dev-dependencies] entries it links
    libs: tuple[str, ...] = ()  # the package's own `lib`/`shared` targets it links (named in `deps`)
    link_inputs: tuple[PkgPath, ...] = ()  # files its link reads (a version script); `$OUT/x`: generated
    soname: str | None = None  # shared: the DT_SONAME
    version: str | None = None  # shared: the versioned file name's suffix (`1.3.1`)
    install: bool = True  # `mcpp install` copies it (an example, a benchmark: `install = false`)

    @property
    def compiles_apart(self) -> bool:
        """Whether its own sources need objects of their own: settings that change a compile."""
        return bool(self.defines or self.cflags or self.cxxflags or self.include_dirs or self.deps)


@dataclass(frozen=True)
class FeatureSpec:
    """One `[features]` entry: the features it implies, its defines and its sources."""
    name: str
    implies: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    pos: Position | None = None
    rule_module: str | None = None  # dotted name bound to the .star file in `sources`
    rule_module_entry: str | None = None  # which `.star` of `sources` it binds to, when there are several
    device_extensions: tuple[str, ...] = ()  # device sources for a consumer that activates this


@dataclass(frozen=True)
class ProfileSpec:
    """One build profile (`[profile.<name>]`) as declared."""
    name: str
    inherits: str | None = None
    opt: str | None = None  # "0".."3", "s", "z", "g"
    debug: bool | None = None
    cflags: tuple[str, ...] = ()
    cxxflags: tuple[str, ...] = ()
    ldflags: tuple[str, ...] = ()


@dataclass(frozen=True)
class SourceFlags:
    """A `[[build.sources]]` table's flags: they reach the compiles of the sources its `glob`
    selects, and no other."""
    glob: str
    cflags: tuple[str, ...] = ()
    cxxflags: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()


@dataclass(frozen=True)
class BuildSpec:
    """The `[build]` table: sources, include directories and flags."""
    sources: tuple[str, ...] | None = None  # None: the convention glob; () means nothing
    include_dirs: tuple[str, ...] = ()
    cflags: tuple[str, ...] = ()
    cxxflags: tuple[str, ...] = ()
    ldflags: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()
    compile_commands: str | None = None  # "root": also link compile_commands.json at the workspace root
    sources_pos: Position | None = None
    accel: AccelSet | None = None  # [build] accel as declared (None: not declared)
    source_flags: tuple[SourceFlags, ...] = ()  # the `sources` tables that carry flags


@dataclass(frozen=True)
class RuntimeArtifact:
    """A file a package ships for its consumers to run with."""
    role: str | None = None
    path: str | None = None
    provenance: str | None = None
    abi: str | None = None
    accel: AccelSet | None = None


@dataclass
class Manifest:
    """One `mcpp.toml`, read and checked."""
    path: AbsPath  # the mcpp.toml
    root: str  # its directory
    name: str | None  # None for a virtual workspace
    version: str | None
    namespace: str | None = None
    standard: str = "c++23"
    # [package] include: the public headers `mcpp install` copies (a header as consumers include
    # it, or a directory of them); None: every header of the exposed include directories
    public_headers: tuple[str, ...] | None = None
    description: str | None = None  # [package] description: the `.pc` file's Description
    targets: tuple[TargetSpec, ...] = ()
    explicit_targets: bool = False
    lib_path: str | None = None
    test_dirs: tuple[PkgPath, ...] | None = None  # [test] dirs; None: `tests/` and `test/`
    build: BuildSpec = field(default_factory=BuildSpec)
    profiles: dict[str, ProfileSpec] = field(default_factory=dict)
    features: dict[str, FeatureSpec] = field(default_factory=dict)
    default_features: tuple[str, ...] = ()
    dependencies: tuple[DependencySpec, ...] = ()
    dev_dependencies: tuple[DependencySpec, ...] = ()
    # [dependencies] / [dev-dependencies] entries naming system libraries (`pkg-config`, `system`)
    system_libs: tuple[DependencySpec, ...] = ()
    dev_system_libs: tuple[DependencySpec, ...] = ()
    build_dependencies: tuple[DependencySpec, ...] = ()  # (not acted on yet: host modules)
    feature_deps: dict[str, tuple[DependencySpec, ...]] = field(default_factory=dict)
    xlings: XlingsSpec = field(default_factory=XlingsSpec)  # resolved and installed by engine/payloads/
    feature_xlings: dict[str, tuple[PayloadSpec, ...]] = field(default_factory=dict)
    # [payloads] index: the package's own payload indexes (an absolute directory inside the
    # package, or an http(s) URL), serving the payloads it declares (engine/payloads/package_index.py)
    payload_indexes: tuple[str, ...] = ()
    runtime_artifacts: tuple[RuntimeArtifact, ...] = ()
    runtime_library_dirs: tuple[str, ...] = ()
    runner: tuple[str, ...] | None = None  # [target.<triple>] runner of this build's target
    sysroot: str | None = None  # [target.<triple>] sysroot, absolute (checked; engine/toolchain/cross.py)
    # [target.<triple>] cxx / cc: this target's compiler drivers (a path resolved against the
    # manifest's directory, or a bare name looked up on PATH); None: `<triple>-g++` / `-gcc`
    cross_cxx: str | None = None
    cross_cc: str | None = None
    workspace_members: tuple[str, ...] | None = None  # None: not a workspace root
    vendor: AbsPath | None = None  # [source] vendor: index dependencies built from this directory
    toolchain: str | None = None
    warnings: list[str] = field(default_factory=list)
    smap: object = None  # toml_positions.SourceMap of the file, for later diagnostics
    provenance: object = None  # reader.Provenance: folded key path -> where it is written
    document: dict | None = None  # the folded document (what `mcpp metadata` prints)
    notes: dict = field(default_factory=dict)  # folded key path -> where a folded entry came from
    context: object = None  # the context.BuildContext this manifest was folded for

    @property
    def is_virtual(self) -> bool:
        return self.name is None

    def position(self, *path: str | int, prefer: str = "value") -> Position:
        """Where the folded key `path` is written (its value, else its nearest known ancestor)."""
        source = self.provenance.source_of(tuple(path)) if self.provenance is not None else tuple(path)
        return self.source_position(*source, prefer=prefer)

    def source_position(self, *path: str | int, prefer: str = "value") -> Position:
        """Where the source key `path` sits in this manifest."""
        line, col = self.smap.nearest(tuple(path), prefer=prefer)
        return Position(display_path(self.path), line, col)
