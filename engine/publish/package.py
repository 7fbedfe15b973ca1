"""`mcpp package`: the archive of one package, then proof that it builds on its own.

The archive (`target/package/<name>-<version>.tar.zst`) holds the files files.py selects, the
manifest as manifest_text.py publishes it, written by tarball.py. It is then verified the way a
consumer will use it: unpacked by the payload unpacker (engine/payloads/archive.py, every
hostile member refused) into a new temporary directory, and built there, in this process, from
an empty `target/`, with this command's settings and toolchain. A package that needs a file
the archive does not hold (a header behind a link out of the package, a file under a dot
directory) fails here, not in its consumers' builds.

What a package may hold is bounded by what a consumer unpacks (engine/payloads/limits.py): an
archive past those limits would be refused by every consumer, so it is refused here.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import tomllib
from dataclasses import dataclass

from ..build.compose import BuildOptions, build
from ..core.errors import McppError, display_path
from ..core.settings import Settings
from ..package.model import Package, PackageGraph, Selection
from ..payloads.archive import extract
from ..payloads.descriptor import Source
from ..payloads.errors import PayloadError
from ..payloads.limits import limits_for
from ..report.reporter import Reporter
from .files import MANIFEST_NAME, Listing, package_files
from .manifest_text import published_manifest
from .tarball import write_package

ARCHIVE_SUFFIX = ".tar.zst"


@dataclass(frozen=True)
class Packaged:
    name: str
    namespace: str
    version: str
    description: str
    path: str  # the archive
    blake3: str
    size: int
    unpacked_size: int  # what its files add up to: the release's `unpacked-size`
    listing: Listing

    @property
    def file_name(self) -> str:
        return os.path.basename(self.path)


def archive_path(graph: PackageGraph, name: str, version: str) -> str:
    return os.path.join(graph.target_dir, "package", f"{name}-{version}{ARCHIVE_SUFFIX}")


def make_package(pkg: Package, graph: PackageGraph, settings: Settings, reporter: Reporter,
                 verify: bool = True, jobs: int = 0, toolchain: str | None = None) -> Packaged:
    """Write the archive of `pkg` (a package of `graph`) and, with `verify`, build it unpacked
    with `toolchain` (None: the one a plain `mcpp build` of it would take)."""
    m = pkg.manifest
    if m.name is None or m.version is None:
        raise McppError(f"{display_path(m.path)}: a package needs `[package] name` and `version` to be packaged",
                        notes=["note: a virtual workspace is not a package; choose a member with `-p NAME`"])
    name, version = m.name, m.version
    reporter.status("Packaging", f"{name} v{version} ({display_path(m.root)})")
    listing = package_files(m.root)
    for why in listing.skipped:
        reporter.warning(why)
    with open(m.path, encoding="utf-8") as f:
        text = f.read()
    manifest = published_manifest(text, display_path(m.path)).encode()
    limits = limits_for(Source("archive"), settings.env)
    unpacked = listing.total_bytes - _size_of(listing, MANIFEST_NAME) + len(manifest)
    _check_limits(listing, unpacked, limits, name)
    out = archive_path(graph, name, version)
    digest, size = write_package(m.root, listing.entries, f"{name}-{version}", out, {MANIFEST_NAME: manifest})
    packaged = Packaged(name, m.namespace or "mcpplibs", version, _description(text), out, digest, size,
                        unpacked, listing)
    reporter.status("Packaged", f"{len(listing.entries)} files, {size} bytes ({display_path(out)}, "
                                f"blake3 {digest[:16]})")
    if verify:
        verify_package(packaged, settings, reporter, jobs, toolchain)
    return packaged


def _size_of(listing: Listing, rel: str) -> int:
    return next((e.size for e in listing.entries if e.rel == rel), 0)


def _description(text: str) -> str:
    try:
        value = tomllib.loads(text).get("package", {}).get("description", "")
    except tomllib.TOMLDecodeError:
        return ""
    return value if isinstance(value, str) else ""


def _check_limits(listing: Listing, unpacked: int, limits, name: str) -> None:
    largest = sorted((e for e in listing.entries if e.kind == "file"), key=lambda e: (-e.size, e.rel))[:3]
    shown = ", ".join(f"`{e.rel}` ({e.size} bytes)" for e in largest)
    if unpacked > limits.max_bytes:
        raise McppError(f"package `{name}` holds {unpacked} bytes, more than a consumer unpacks "
                        f"({limits.max_bytes} bytes, {limits.bytes_origin}); its largest files: {shown}",
                        notes=["help: move generated or bulky files out of the package directory (or under "
                               "a directory whose name starts with `.`), which is not packaged"])
    if len(listing.entries) > limits.max_members:
        raise McppError(f"package `{name}` holds {len(listing.entries)} files, more than a consumer unpacks "
                        f"({limits.max_members}, {limits.members_origin})")


def verify_package(packaged: Packaged, settings: Settings, reporter: Reporter, jobs: int = 0,
                   toolchain: str | None = None) -> None:
    """Unpack the archive into a new directory and build it there from an empty `target/`."""
    label = f"{packaged.name} v{packaged.version}"
    reporter.status("Verifying", label)
    scratch = tempfile.mkdtemp(prefix="mcpp-package-")
    try:
        src = os.path.join(scratch, f"{packaged.name}-{packaged.version}")
        source = Source("archive", url=packaged.path, blake3=packaged.blake3, size=packaged.size, strip=1,
                        unpacked_size=packaged.unpacked_size)
        try:
            extract(packaged.path, display_path(packaged.path), src, strip=1, limits=limits_for(source, settings.env))
        except PayloadError as e:
            raise McppError(f"verifying {label}: its archive does not unpack: {e.message}") from None
        opts = BuildOptions(cwd=src, manifest_path=os.path.join(src, MANIFEST_NAME), profile="dev",
                            selection=Selection(), jobs=jobs, toolchain=toolchain, settings=settings)
        try:
            build(opts, reporter)
        except McppError as e:
            e.message = f"verifying {label}: the package does not build from its archive: {e.message}"
            e.notes.append("note: the archive holds the package directory without `target/`, names starting "
                           "with `.`, nested packages and links leading out of the package "
                           "(docs/dependencies.md, \"Packaging\")")
            if packaged.listing.skipped:
                e.notes.append("note: not packaged: " + "; ".join(packaged.listing.skipped))
            raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
