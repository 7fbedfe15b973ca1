"""`mcpp install --prefix DIR`: put what a build made where a Make or CMake project finds it.

The layout is the GNU one every consumer expects: binaries in `bin/`, static and shared libraries
in `lib/` (a shared library with its symlink chain, `libz.so -> libz.so.1 -> libz.so.1.3.1`, so
the link editor finds it by `-lz` and the loader by its SONAME), the public headers in `include/`
(the contents of each include directory the library exposes to its dependents, headers only), and
`lib/pkgconfig/<name>.pc`, so `cc $(pkg-config --cflags --libs NAME)` compiles and links against
it. As `make install` does, `$DESTDIR` is put in front of every path written while the `.pc`
file names the prefix itself (a package manager stages into DESTDIR, then moves the tree).

Every file is written to a temporary name and renamed into place: a binary being installed over
one that is running is replaced, not rewritten under it. An installed file is never readable by
more people than its source: a header only its owner may read (0600) is installed 0600, not
0644. Headers are read only inside their package: one reached through a symlink that leads out
of it (an include directory linked to `/etc`, say) is an error naming the link, found before
anything is written (engine/core/containment.py).
"""
from __future__ import annotations

import os
import shutil
import struct

from mcpp.cas.atomic import commit, discard, temp_name

from ..build.compose import BuildOutcome
from ..core import containment
from . import install_cmake
from ..core.conventions import HEADER_EXTS, Role
from ..core.errors import McppError, ScanError
from ..modules.scanner import scan_source
from ..package.model import Package
from ..package.features import feature_define
from ..package.sources import include_dirs, package_sources
from ..package.targets import targets_of
from ..plan.context import transitive_deps
from ..plan.model import Artifact, ArtifactKind
from ..report.reporter import Reporter


class Installer:
    def __init__(self, prefix: str, reporter: Reporter, destdir: str = ""):
        self.prefix = os.path.abspath(prefix)
        self.root = os.path.join(destdir, self.prefix.lstrip("/")) if destdir else self.prefix
        self.reporter = reporter
        self.count = 0

    def dest(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    def copy(self, src: str, dest: str, mode: int) -> None:
        """`src` at `dest` with `mode`, less every class (group, others) that may not read `src`."""
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        tmp = temp_name(os.path.dirname(dest))
        try:
            shutil.copyfile(src, tmp)
            os.chmod(tmp, narrowed(mode, os.stat(src).st_mode))
            commit(tmp, dest)
        except BaseException:
            discard(tmp)
            raise
        self._installed(dest)

    def write(self, dest: str, text: str) -> None:
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        tmp = temp_name(os.path.dirname(dest))
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(text)
            os.chmod(tmp, 0o644)
            commit(tmp, dest)
        except BaseException:
            discard(tmp)
            raise
        self._installed(dest)

    def symlink(self, target: str, dest: str) -> None:
        tmp = temp_name(os.path.dirname(dest))
        os.symlink(target, tmp)
        commit(tmp, dest)
        self._installed(f"{dest} -> {target}")

    def _installed(self, what: str) -> None:
        self.count += 1
        self.reporter.status("Installing", what)


def narrowed(mode: int, source_mode: int) -> int:
    """`mode` without the bits of each class (owner, group, others) that cannot read the
    source: an installed copy never widens who may read what it copies."""
    for shift in (6, 3, 0):
        if not source_mode & (0o4 << shift):
            mode &= ~(0o7 << shift)
    return mode


def install(outcome: BuildOutcome, prefix: str, reporter: Reporter) -> None:
    """Install the artifacts of the build's member packages (and the archives of the libraries
    they link, which a static consumer needs too) under `prefix`."""
    if not prefix:
        raise McppError("`--prefix` must name a directory")
    inst = Installer(prefix, reporter, os.environ.get("DESTDIR", ""))
    execroot = outcome.plan.execroot
    members = outcome.graph.members
    # Every header that may be installed, found (and its path checked) before anything is written.
    headers: dict[str, list[tuple[str, str]]] = {}
    for pkg in members:
        for p in [pkg] + transitive_deps(pkg, dev=False):
            if p.name not in headers:
                headers[p.name] = _headers_of(p)
    for name, found in headers.items():
        _check_one_source_per_path(name, found)
    member_names = {p.name for p in members}
    not_installed = {(p.name, t.name) for p in members for t in targets_of(p) if not t.install}
    done: set[str] = set()
    libs_of: dict[str, list[Artifact]] = {}
    for a in outcome.plan.artifacts:
        if a.kind == ArtifactKind.TEST or a.package not in member_names:
            continue
        if a.kind == ArtifactKind.BIN:
            if (a.package, a.name) not in not_installed:
                inst.copy(os.path.join(execroot, a.path), inst.dest("bin", a.name), 0o755)
        elif a.path not in done:
            _install_library(inst, execroot, a)
            libs_of.setdefault(a.package, []).append(a)
        done.add(a.path)
    for pkg in members:
        if pkg.name not in libs_of:
            if include_dirs(pkg) and not any(a.package == pkg.name for a in outcome.plan.artifacts
                                             if a.kind == ArtifactKind.BIN):
                libs_of[pkg.name] = []  # header-only: headers and a `.pc` with only Cflags
            else:
                continue
        deps = transitive_deps(pkg, dev=False)
        for dep in deps:  # a static library is linked with the archives of what it uses
            for a in outcome.plan.artifacts:
                if a.package == dep.name and a.kind == ArtifactKind.LIB and a.path not in done:
                    _install_library(inst, execroot, a)
                    done.add(a.path)
        for p in [pkg] + deps:
            for src, rel in headers[p.name]:
                inst.copy(src, inst.dest("include", rel), 0o644)
        libs = libs_of[pkg.name]
        name = pc_name(pkg, libs)
        inst.write(inst.dest("lib", "pkgconfig", f"{name}.pc"),
                   pkg_config_text(inst.prefix, pkg, libs, deps, outcome.plan.artifacts))
        _install_cmake(inst, pkg, libs, deps, outcome.plan.artifacts,
                       any(headers[p.name] for p in [pkg] + deps))
    reporter.status("Installed", f"{inst.count} files to {inst.root}", important=True)


def _install_cmake(inst: Installer, pkg: Package, libs: list[Artifact], deps: list[Package],
                   artifacts: list[Artifact], has_headers: bool) -> None:
    """`lib/cmake/<package>/`: the config and version files `find_package(<package>)` reads
    (engine/cli/install_cmake.py), and the package's module interfaces under `modules/`."""
    base = ("lib", "cmake", pkg.name)
    modules = []
    for src in package_sources(pkg):
        if src.role == Role.MODULE:
            rel = os.path.join(*base, "modules", os.path.basename(src.path))
            inst.copy(os.path.join(pkg.root, src.path), inst.dest(rel), 0o644)
            modules.append((_module_name(os.path.join(pkg.root, src.path)), rel))
    installed = [(a.name, "SHARED" if a.kind == ArtifactKind.SHARED else "STATIC",
                  os.path.join("lib", os.path.basename(a.path))) for a in libs]
    links = []
    for d in deps:
        links += [os.path.join("lib", os.path.basename(a.path)) for a in artifacts
                  if a.package == d.name and a.kind == ArtifactKind.LIB and a.name == d.name]
    links += [f for f in _static_link_flags(pkg, deps) if f not in links]
    inst.write(inst.dest(*base, f"{pkg.name}-config.cmake"),
               install_cmake.config_text(pkg.name, installed, public_defines(pkg), links, modules,
                                         pkg.manifest.standard, has_headers))
    inst.write(inst.dest(*base, f"{pkg.name}-config-version.cmake"), install_cmake.version_text(pkg.version))


def _module_name(path: str) -> str:
    """The module an interface file declares (`export module greet;`), as the build scanned it."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            unit = scan_source(f.read(), path)
    except ScanError:
        unit = None
    return unit.module if unit is not None and unit.module else os.path.splitext(os.path.basename(path))[0]


def _check_one_source_per_path(package: str, found: list[tuple[str, str]]) -> None:
    """Two headers that would be installed at one path (a shipped `zconf.h` and the one the
    build generates, named by two `[package] include` entries) are refused, naming both."""
    seen: dict[str, str] = {}
    for src, rel in found:
        other = seen.setdefault(rel, src)
        if other != src:
            raise McppError(f"package `{package}` installs two headers at `include/{rel}`: `{other}` and `{src}`",
                            notes=["help: name one of them in `[package] include` (a generated header is found in "
                                   "the include directory its build program exposes)"])


def _install_library(inst: Installer, execroot: str, a: Artifact) -> None:
    """An archive as it is; a shared library as its real file plus the links a consumer needs:
    the chain the build made (`libz.so -> libz.so.1 -> libz.so.1.3.1`, relative, so the prefix
    can move), else links under its SONAME (what the loader opens) and as `lib<name>.so` (what
    `-l` finds) when the file has another name."""
    path = os.path.join(execroot, a.path)
    if a.kind != ArtifactKind.SHARED:
        inst.copy(path, inst.dest("lib", os.path.basename(path)), 0o644)
        return
    real_name = os.path.basename(path)
    inst.copy(path, inst.dest("lib", real_name), 0o755)
    chain = {os.path.basename(link): points_to for link, points_to in a.aliases}
    if not chain:  # a SONAME set without the `soname` key (a build program's flags) still needs its link
        for name in (elf_soname(path), real_name.split(".so", 1)[0] + ".so"):
            if name and name != real_name:
                chain[name] = real_name
    for name in sorted(chain):
        inst.symlink(chain[name], inst.dest("lib", name))


def _headers_of(pkg: Package) -> list[tuple[str, str]]:
    """(header, its path below `include/`) for each public header of `pkg`: those `[package]
    include` names, else every header under each include directory the package exposes (an
    include directory at the package's root, `include_dirs = ["."]`, gives only its own headers,
    not those of `target/` or `tests/`). A header keeps its path below the include directory it
    is found in, so `#include <zed/api.h>` works against the installed tree as against the
    package. A header whose real path leaves its boundary (the package, or an include
    directory outside it or generated under `target/`, as the build's header pool) is an error."""
    dirs = include_dirs(pkg)
    found: list[tuple[str, str]] = []
    if pkg.manifest.public_headers is not None:
        for i, entry in enumerate(pkg.manifest.public_headers):
            found += [(src, os.path.relpath(src, base)) for src, base in _public_entry(pkg, dirs, entry, i)]
    else:
        skip = {os.path.join(pkg.root, "target"), os.path.join(pkg.root, "tests")}
        for d in dirs:
            found += [(src, os.path.relpath(src, d)) for src in _headers_under(d, skip)]
    for src, _rel in found:
        boundary = _boundary(pkg, src)
        containment.check(src, boundary, f"installed header `{src}`",
                          "the package" if boundary == pkg.root else "its include directory")
    return found


def _boundary(pkg: Package, path: str) -> str:
    """What a header of `pkg` may resolve into: the package, for one lexically inside it (not
    under `target/`); else the include directory that holds it (engine/package/sources.py:
    `header_pool` draws the same line)."""
    root = pkg.root
    if containment.inside(path, root) and not containment.inside(path, os.path.join(root, "target")):
        return root
    holders = [d for d in include_dirs(pkg) if containment.inside(path, d)]
    return max(holders, key=len) if holders else os.path.dirname(path)


def _headers_under(d: str, skip: set[str]) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(d):
        dirnames[:] = sorted(n for n in dirnames if os.path.join(dirpath, n) not in skip and not n.startswith("."))
        out += [os.path.join(dirpath, n) for n in sorted(filenames) if os.path.splitext(n)[1] in HEADER_EXTS]
    return out


def _public_entry(pkg: Package, dirs: list[str], entry: str, index: int) -> list[tuple[str, str]]:
    """(header, the directory its installed path is relative to) for one `[package] include`
    entry: a path from the package root, else a name inside one of its include directories (a
    header the build program generates lives there). A header inside an include directory is
    installed relative to it; one outside all of them (or a directory's contents) relative to
    the entry's own directory."""
    candidates = [p for p in [os.path.join(pkg.root, entry)] + [os.path.join(d, entry) for d in dirs]
                  if os.path.exists(p)]
    # A header the build generates (in an include directory under `target/`) is the one the
    # package's own compiles read: it wins over a shipped template of the same name.
    generated = [p for p in candidates if containment.inside(p, os.path.join(pkg.root, "target"))
                 or not containment.inside(p, pkg.root)]
    if not candidates:
        raise McppError(f"[package] include names `{entry}`, which is neither in the package nor in one of its include "
                        f"directories (generated headers are looked up after the build)",
                        pkg.manifest.position("package", "include", index))
    found = os.path.normpath((generated or candidates)[0])

    def base_of(path: str, fallback: str) -> str:
        holders = [d for d in dirs if path.startswith(d.rstrip("/") + "/")]
        return max(holders, key=len) if holders else fallback

    if os.path.isdir(found):
        skip = {os.path.join(pkg.root, "target"), os.path.join(pkg.root, "tests")}
        return [(h, base_of(h, found)) for h in _headers_under(found, skip)]
    return [(found, base_of(found, os.path.dirname(found)))]


def pkg_config_text(prefix: str, pkg: Package, libs: list[Artifact], deps: list[Package],
                    artifacts: list[Artifact]) -> str:
    """A `.pc` file: `-l` for the package's library (its shared library when it builds one, which
    is what `-l` picks too), then the archives of its library dependencies and the package's own
    link flags, which a static link needs."""
    shared = [a for a in libs if a.kind == ArtifactKind.SHARED]
    own = shared[:1] or libs[:1]
    flags = [f"-l{link_name(a)}" for a in own]
    if not shared:
        for d in deps:
            flags += [f"-l{link_name(a)}" for a in artifacts
                      if a.package == d.name and a.kind == ArtifactKind.LIB and a.name == d.name]
    flags += [f for f in _static_link_flags(pkg, deps) if f not in flags]
    libs_line = "-L${libdir} " + " ".join(flags) if flags else ""
    cflags = " ".join(["-I${includedir}"] + [f"-D{d}" for d in public_defines(pkg)])
    return "\n".join([
        f"prefix={prefix}",
        "exec_prefix=${prefix}",
        "libdir=${exec_prefix}/lib",
        "includedir=${prefix}/include",
        "",
        f"Name: {pkg.name}",
        f"Description: {pkg.manifest.description or pkg.name + ', built by mcpp'}",
        f"Version: {pkg.version}",
        f"Libs: {libs_line}".rstrip(),
        f"Cflags: {cflags}",
        "",
    ])


def pc_name(pkg: Package, libs: list[Artifact]) -> str:
    """What `pkg-config` is asked for: the library's link name (package `zlib` whose library is
    `libz` installs `z.pc`, as `-lz` finds it), the package's name for a header-only one."""
    shared = [a for a in libs if a.kind == ArtifactKind.SHARED]
    named = [a for a in libs if a.name == pkg.name]
    own = (named or shared or libs)[:1]
    return link_name(own[0]) if own else pkg.name


def public_defines(pkg: Package) -> list[str]:
    """The defines the package's headers are compiled with (`[build] defines`, its active
    features'): a consumer compiling against the installed headers sees the same configuration."""
    out = [feature_define(f) for f in sorted(pkg.features)]
    for f in sorted(pkg.features):
        out += list(pkg.manifest.features[f].defines)
    out += list(pkg.manifest.build.defines)
    return list(dict.fromkeys(out))


def _static_link_flags(pkg: Package, deps: list[Package]) -> list[str]:
    """The `-l`/`-pthread` flags of the package's and its dependencies' `ldflags` and system
    libraries (`{ pkg-config = ... }`, `{ system = ... }`): what a static link needs after it."""
    flags: list[str] = []
    for p in [pkg] + deps:
        flags += [f for f in p.manifest.build.ldflags if f.startswith(("-l", "-pthread")) and f not in flags]
        flags += [f for f in p.system.libs if f not in flags]
    return flags


def link_name(a: Artifact) -> str:
    """What `-l` names to find the library: its file name without `lib` and `.a`/`.so...`
    (a target `zlike-shared` whose file is `libzlike.so.1.3.1` is `-lzlike`)."""
    name = os.path.basename(a.path)
    stem = name.split(".so", 1)[0] if a.kind == ArtifactKind.SHARED else os.path.splitext(name)[0]
    return stem[3:] if stem.startswith("lib") else stem


def elf_soname(path: str) -> str | None:
    """The DT_SONAME of an ELF shared object, or None (not ELF, or none recorded). Read here
    rather than by `readelf`, which a machine that installs need not have."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if data[:4] != b"\x7fELF" or len(data) < 0x40 or data[4] not in (1, 2) or data[5] not in (1, 2):
        return None
    try:
        return _soname(data)
    except (struct.error, IndexError, ValueError):
        return None  # a truncated or odd file: installed without the link, as if it had none


def _soname(data: bytes) -> str | None:
    is64, end = data[4] == 2, "<" if data[5] == 1 else ">"
    if is64:
        shoff, = struct.unpack_from(end + "Q", data, 0x28)
        shentsize, shnum = struct.unpack_from(end + "HH", data, 0x3A)
    else:
        shoff, = struct.unpack_from(end + "I", data, 0x20)
        shentsize, shnum = struct.unpack_from(end + "HH", data, 0x2E)
    sections = []
    for i in range(shnum):
        base = shoff + i * shentsize
        if is64:
            _, sh_type, _, _, off, size, link, _, _, _ = struct.unpack_from(end + "IIQQQQIIQQ", data, base)
        else:
            _, sh_type, _, _, off, size, link, _, _, _ = struct.unpack_from(end + "IIIIIIIIII", data, base)
        sections.append((sh_type, off, size, link))
    entry = struct.Struct(end + ("qQ" if is64 else "iI"))
    for sh_type, off, size, link in sections:
        if sh_type != 6:  # SHT_DYNAMIC
            continue
        strtab_off = sections[link][1]
        for pos in range(off, off + size, entry.size):
            tag, val = entry.unpack_from(data, pos)
            if tag == 0:
                break
            if tag == 14:  # DT_SONAME
                name_end = data.index(b"\0", strtab_off + val)
                return data[strtab_off + val:name_end].decode("utf-8", "replace")
    return None
