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

# Bump when the API's behaviour changes so that old cached evaluations are not reused.
API_VERSION = "mcpp-starlark-2"


@dataclass(frozen=True)
class ProgramContext:
    package: str
    version: str
    namespace: str
    manifest_dir: str  # absolute
    out_dir: str  # absolute: target/<profile>/gen/<package>
    profile: str
    target: str  # triple
    host: str  # triple
    features: tuple[str, ...]
    accel: tuple[tuple[str, str, tuple[str, ...], str], ...]  # (name, version, archs, floor)
    device_sources: tuple[str, ...]  # package-relative
    tools: tuple[tuple[str, str, str], ...]  # (declaring entry's name, tool, absolute path)
    payloads: tuple[tuple[str, str, str], ...]  # (namespace, name, directory or "")
    rule_modules: tuple[tuple[str, str], ...]  # (dotted name, absolute .star path) this package may load
    # What api_context.py answers from (`toolchain()`, `cxx_flags()`, `bin()`, `rule_package()`):
    toolchain: tuple[str, ...] = ()  # (cc, cxx, ar, kind, version, target)
    compile_flags: tuple[tuple[str, ...], ...] = ((), (), (), ())  # (flags, defines, own -I dirs, dependencies' -I dirs)
    bins: tuple[tuple[str, str, str], ...] = ()  # (package, bin target, absolute path once linked)
    rule_packages: tuple[tuple[str, str, str, tuple[str, ...]], ...] = ()  # (root, name, version, features)
    dep_infos: str = ""  # JSON {dependency name: fields it provide()d}: a change re-evaluates this program

    def fingerprint(self) -> str:
        data = json.dumps([API_VERSION, asdict(self)], sort_keys=True, separators=(",", ":"))
        return blake3.blake3(data.encode()).hexdigest()
