"""`mcpp pack`: the package's library, built once per variant, laid out as a prebuilt package.

`target/pack/<name>-<version>/` holds `lib/<variant>/lib<name>.a` for each variant and an
`mcpp.toml` whose `[[runtime.artifacts]]` list them, the CPU-only variant first (a client older
than `accel` takes the first artifact its tag accepts, and that one runs everywhere):

- `cpu`: built with `--no-accel`;
- `accel`: built with the package's own `[build] accel`, when it names one.

Each artifact's fields are measured from the build that produced it, never copied from what the
manifest declares: `abi` is that build's tag (`triple-compilerN-libstdcxxN-standard`,
engine/build/prebuilt.py `toolchain_tag`), and `accel` is that build's accelerator set, written
only when the build compiled device sources (a set no rule compiled anything for carries no
device code, and an artifact without `accel` says exactly that), each backend's version being the
toolkit's its rule stated as a fact named after the backend (`mcpp.fact("cuda", "13.0")`) where it
stated one: a `cuda12.9` request compiled by a 13.x toolkit makes code that needs a 13.x driver.

A variant's archive carries what its build program linked from its own search directories (the
static CUDA runtime the CUDA rule links, say): a consumer links a prebuilt artifact alone, so a
runtime left out would be an undefined symbol in every consumer. Libraries the program named and
no search directory of its holds (`dl`, `pthread`) are the platform's, and stay the consumer's.

The directory is a package a consumer takes as a path dependency, or `mcpp publish --pack`
publishes (engine/cli/publish.py).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from mcpp.cas.atomic import write_atomic

from ..build.compose import BuildOptions, build
from ..build.prebuilt import toolchain_tag
from ..core.errors import McppError, display_path
from ..core.settings import Settings
from ..package.model import Package, PackageGraph, Selection
from ..core.accel import AccelSet
from ..core.conventions import Role
from ..package.sources import package_sources
from ..report.reporter import Reporter
from .files import MANIFEST_NAME

PROVENANCE = "mcpp-pack/1"
PROFILE = "release"


@dataclass(frozen=True)
class Variant:
    name: str  # the directory under lib/
    library: str  # lib/<variant>/lib<name>.a, relative to the pack directory
    abi: str
    accel: str  # "" when the build compiled no device code


def pack_dir(graph: PackageGraph, name: str, version: str) -> str:
    return os.path.join(graph.target_dir, "pack", f"{name}-{version}")


def make_pack(pkg: Package, graph: PackageGraph, settings: Settings, reporter: Reporter, jobs: int = 0,
              toolchain: str | None = None) -> str:
    """Build `pkg`'s library per variant and write the pack directory; returns its path."""
    m = pkg.manifest
    if m.name is None or m.version is None:
        raise McppError(f"{display_path(m.path)}: a package needs `[package] name` and `version` to be packed")
    name, version = m.name, m.version
    out = pack_dir(graph, name, version)
    reporter.status("Packing", f"{name} v{version} ({display_path(m.root)})")
    staging = tempfile.mkdtemp(prefix=f".{name}-{version}-", dir=_ensure(os.path.dirname(out)))
    try:
        selections = [("cpu", Selection(packages=(name,), no_accel=True, archive_members=True))]
        if graph.context is not None and graph.context.accel.entries:
            selections.append(("accel", Selection(packages=(name,), accel=str(graph.context.accel),
                                                  archive_members=True)))
        variants = [_variant(variant, sel, pkg, settings, reporter, jobs, toolchain, staging)
                    for variant, sel in selections]
        write_atomic(os.path.join(staging, MANIFEST_NAME), pack_manifest(pkg, variants).encode())
        for d, _dirs, files in os.walk(staging):  # readable like any package directory
            os.chmod(d, 0o755)
            for f in files:
                os.chmod(os.path.join(d, f), 0o644)
        if os.path.isdir(out):
            shutil.rmtree(out)
        os.replace(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    reporter.status("Packed", f"{len(variants)} variants ({display_path(out)})")
    return out


def _ensure(path: str) -> str:
    os.makedirs(path, exist_ok=True)
    return path


def _variant(variant: str, selection: Selection, pkg: Package, settings: Settings, reporter: Reporter, jobs: int,
             toolchain: str | None, staging: str) -> Variant:
    m = pkg.manifest
    name = m.name or ""
    opts = BuildOptions(cwd=m.root, manifest_path=m.path, profile=PROFILE, selection=selection, jobs=jobs,
                        toolchain=toolchain, settings=settings)
    outcome = build(opts, reporter)
    if not outcome.result.ok:
        raise McppError(f"packing {m.name} v{m.version}: the `{variant}` build failed")
    built = next(p for p in outcome.graph.order if p.root == pkg.root)
    archive = outcome.layout.archive(name, built.root)
    if not os.path.isfile(archive):
        raise McppError(f"packing {m.name} v{m.version}: the package has no library to pack (no source besides "
                        f"its binaries' and tests' own)")
    ctx = outcome.graph.context
    assert ctx is not None  # a loaded graph is folded for its context
    device = [s for s in package_sources(built) if s.role == Role.DEVICE]
    facts = built.program.facts if built.program is not None else {}
    accel = measured_accel(ctx.accel, facts) if ctx.accel.entries and device else ""
    tc = outcome.toolchain
    abi = toolchain_tag(ctx.target.text, tc.family, tc.cxx.version, outcome.graph.root_manifest.standard)
    rel = os.path.join("lib", variant, f"lib{name}.a")
    dest = os.path.join(staging, rel)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    _bundle(tc.ar, dest, [archive] + _linked_archives(built))
    return Variant(variant, rel, abi, accel)


def measured_accel(accel: AccelSet, facts: dict[str, str]) -> str:
    """`accel` as written, each backend's version replaced by the one a fact named after the
    backend states (the toolkit that compiled its device code)."""
    out = []
    for e in accel.entries:
        text, have = str(e), facts.get(e.name)
        prefix = e.name + e.version
        if have and text.startswith(prefix):
            text = e.name + have + text[len(prefix):]
        out.append(text)
    return ", ".join(out)


def _linked_archives(pkg: Package) -> list[str]:
    """The static libraries the package's build program linked from its own search directories."""
    program = pkg.program
    if program is None:
        return []
    found = []
    for lib in program.link_libs:
        for d in program.link_search:
            path = os.path.join(d, f"lib{lib}.a")
            if os.path.isfile(path):
                found.append(path)
                break
    return found


def _bundle(ar: str, dest: str, archives: list[str]) -> None:
    """One archive holding the members of `archives` (ar's MRI script: `addlib` keeps members
    whose names repeat across archives apart)."""
    if len(archives) == 1:
        shutil.copyfile(archives[0], dest)
        return
    script = "".join([f"create {dest}\n"] + [f"addlib {a}\n" for a in archives] + ["save\nend\n"])
    if any(c in a for a in archives + [dest] for c in "\n+*,;"):
        raise McppError(f"cannot bundle {', '.join(archives)}: a path holds a character ar's MRI script cannot name")
    res = subprocess.run([ar, "-M"], input=script, capture_output=True, text=True)
    if res.returncode != 0:
        raise McppError(f"bundling {display_path(dest)} failed: {res.stderr.strip() or res.stdout.strip()}")


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def pack_manifest(pkg: Package, variants: list[Variant]) -> str:
    """The packed package's manifest: its identity, no sources, and one artifact per variant."""
    m = pkg.manifest
    lines = ["# Written by `mcpp pack`: prebuilt libraries, one per variant, the CPU-only one first.",
             "[package]", f"name = {_quote(m.name or '')}", f"version = {_quote(m.version or '')}"]
    if m.namespace:
        lines.append(f"namespace = {_quote(m.namespace)}")
    lines += ["", "[build]", "sources = []"]
    for v in variants:
        lines += ["", "[[runtime.artifacts]]", 'role = "static-library"', f"path = {_quote(v.library)}",
                  f"provenance = {_quote(PROVENANCE)}", f"abi = {_quote(v.abi)}"]
        if v.accel:
            lines.append(f"accel = {_quote(v.accel)}")
    return "\n".join(lines) + "\n"
