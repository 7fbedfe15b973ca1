"""Everything a build program may know about its build, as one value.

The evaluation cache keys on `fingerprint()`: a program's result can depend on nothing else
except the files and variables it reads through the API (recorded separately, see cache.py).
The host tools' paths are part of it, and a tool's path names its store entry, so a different
tool build (another version, an edited source tree) re-evaluates the program: going back to an
older tool version follows, too (a cache keyed on "the newest version seen" would keep the newer
tool's result).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import blake3

from ..core.paths import PkgPath

# Bump when the API's behaviour changes so that old cached evaluations are not reused.
API_VERSION = "mcpp-starlark-3"


@dataclass(frozen=True)
class AccelEntry:
    """One backend of the build's accelerator set (`cuda12.9+{sm_89} ptx>=89`)."""

    name: str
    version: str
    archs: tuple[str, ...]
    floor: str  # the portable-form floor, "" when none


@dataclass(frozen=True)
class ToolRef:
    """A host tool this package can see (`tools = [...]` on a dependency entry)."""

    entry: str  # the declaring dependency entry, as `mcpp.dep_bin` names it
    tool: str
    path: str  # absolute, in the tool store


@dataclass(frozen=True)
class PayloadRef:
    namespace: str
    name: str
    directory: str  # "" when not installed
    version: str = ""  # the resolved version, what a range given to `xpkg_dir` is checked against


@dataclass(frozen=True)
class RuleModuleRef:
    name: str  # the dotted module name
    path: str  # absolute .star path


@dataclass(frozen=True)
class ToolchainInfo:
    """What `mcpp.toolchain()` answers."""

    cc: str = ""
    cxx: str = ""
    ar: str = ""
    kind: str = ""  # gcc | clang
    version: str = ""
    target: str = ""


@dataclass(frozen=True)
class CompileContext:
    """What `mcpp.cxx_flags()` is made of, before the program's own additions."""

    flags: tuple[str, ...] = ()  # -std, profile and manifest flags
    defines: tuple[str, ...] = ()
    include_dirs: tuple[str, ...] = ()  # the package's own, absolute
    dependency_include_dirs: tuple[str, ...] = ()
    c_flags: tuple[str, ...] = ()  # what C compiles get in place of `flags`: profile and manifest C flags


@dataclass(frozen=True)
class BinRef:
    package: str
    target: str  # the bin target's name
    path: str  # absolute, once linked


@dataclass(frozen=True)
class RulePackageRef:
    root: str  # absolute package root
    name: str
    version: str
    features: tuple[str, ...]


@dataclass(frozen=True)
class ProgramContext:
    package: str
    version: str
    namespace: str
    manifest_dir: str  # absolute
    out_dir: str  # absolute: target/<profile>/.mcpp/gen/<package>
    profile: str
    target: str  # triple
    host: str  # triple
    features: tuple[str, ...]
    accel: tuple[AccelEntry, ...]
    device_sources: tuple[PkgPath, ...]
    tools: tuple[ToolRef, ...]
    payloads: tuple[PayloadRef, ...]
    rule_modules: tuple[RuleModuleRef, ...]  # those this package may load
    # What api_context.py answers from (`toolchain()`, `cxx_flags()`, `bin()`, `rule_package()`):
    toolchain: ToolchainInfo = ToolchainInfo()
    compile_flags: CompileContext = CompileContext()
    bins: tuple[BinRef, ...] = ()
    rule_packages: tuple[RulePackageRef, ...] = ()
    dep_infos: str = ""  # JSON {dependency name: fields it provide()d}: a change re-evaluates this program

    def fingerprint(self) -> str:
        data = json.dumps([API_VERSION, asdict(self)], sort_keys=True, separators=(",", ":"))
        return blake3.blake3(data.encode()).hexdigest()
