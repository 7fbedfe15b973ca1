"""The toolchain of a cross build (`--target TRIPLE` naming another machine than the host).

gcc: the cross drivers `TRIPLE-g++` / `TRIPLE-gcc` (Debian's `g++-aarch64-linux-gnu`), found on
PATH or named by `[target.TRIPLE] cxx` / `cc`; `--sysroot=` only where `[target.TRIPLE]
sysroot` names one (else the driver's own, which Debian's cross gcc keeps beside its prefix).

clang: the host's `clang++-NN` with `--target=TRIPLE`, `--sysroot=` (the written one, else the
cross gcc's own `-print-sysroot`), `--gcc-toolchain=` the cross gcc's prefix (where its crt
objects and libstdc++ live: clang finds `lib/gcc-cross/TRIPLE/NN` under it) and, for links,
`-fuse-ld=lld` (the host's `ld` reads no aarch64 objects). A cross gcc may come from a host-axis
payload (an index's `system` release adopting `/usr`, or an archive): its `bin/TRIPLE-g++` is
taken before PATH's.

Every one of these flags, the triple, and the drivers' digests are in the toolchain's identity,
which is in every action key: a target's results are never served to another target's build,
and two machines with the same cross toolchain share them. The files the drivers read from the
sysroot are keyed as the host's system headers are (each action's depfile); a sysroot outside
the system directories the sandbox shows is shown read-only to every action (`roots`).
"""
from __future__ import annotations

import os
import shutil

from mcpp.cas.home import Home

from ..core.errors import ManifestError, McppError
from ..manifest.context import BuildContext
from ..manifest.model import Manifest
from .compilers import Toolchain, driver_names, probe_compilers, resolve_toolchain, which_driver

# The Debian package of a triple's cross gcc, for the message about a missing one.
_DEBIAN_ARCH = {"aarch64": "aarch64-linux-gnu", "arm": "arm-linux-gnueabihf", "riscv64": "riscv64-linux-gnu",
                "i686": "i686-linux-gnu", "x86_64": "x86-64-linux-gnu", "loongarch64": "loongarch64-linux-gnu"}


def resolve_target_toolchain(name: str | None, home: Home, ctx: BuildContext | None, manifest: Manifest,
                             payload_dirs: tuple[str, ...] = ()) -> Toolchain:
    """The toolchain that compiles for `ctx.target`: the host's when it is the host, else the
    cross toolchain `name` (gcc or clang) names for it, configured by `manifest`'s (the root's)
    `[target.TRIPLE]` keys. `payload_dirs`: the installed host-axis payloads, searched for
    `bin/TRIPLE-g++` before PATH (a cross toolchain declared as a payload: docs/cross.md)."""
    if ctx is None or not ctx.cross:
        return resolve_toolchain(name, home)
    name = name or "gcc"
    triple = ctx.target.text
    _, cxx_name, family = driver_names(name)
    cxx = _driver(manifest, "cxx", f"{triple}-g++", triple, family == "gcc", payload_dirs)
    cc = _driver(manifest, "cc", f"{triple}-gcc", triple, family == "gcc", payload_dirs)
    if family == "gcc":
        assert cc is not None and cxx is not None
        sysroot_flag = (f"--sysroot={manifest.sysroot}",) if manifest.sysroot else ()
        c, cpp = probe_compilers(home, (cc, cxx), sysroot_flag)
        ar = shutil.which(f"{triple}-ar") or shutil.which("ar") or "/usr/bin/ar"
        return Toolchain(name=name, family=family, cc=c, cxx=cpp, ar=os.path.realpath(ar), flags=sysroot_flag,
                         triple=triple, sysroot=manifest.sysroot or cpp.sysroot or None)
    # clang: the host's driver pointed at the target, with the cross gcc's sysroot and runtime
    cc_name, cxx_name, _ = driver_names(name)
    if name == "clang":  # as the host's resolution picks it: Debian installs only clang-NN
        host = resolve_toolchain(name, home)
        cc_path, cxx_path = host.cc.path, host.cxx.path
    else:
        cc_path, cxx_path = which_driver(cc_name, name), which_driver(cxx_name, name)
    gcc_sysroot = probe_compilers(home, (cc, cc))[0].sysroot if cc else ""
    sysroot = manifest.sysroot or gcc_sysroot or None
    if sysroot is None:
        raise McppError(f"clang cannot cross-compile for `{triple}`: no sysroot; set [target.{triple}] sysroot, or "
                        f"install the cross gcc whose sysroot and runtime clang uses "
                        f"(apt-get install {_package(ctx)})")
    # `/` is where clang looks anyway; written out, lld names every file it read through it
    # `//usr/...`, a spelling no other path of the build has.
    flags: list[str] = [f"--target={triple}"] + ([f"--sysroot={sysroot}"] if os.path.normpath(sysroot) != "/" else [])
    if cc:
        flags.append(f"--gcc-toolchain={_prefix(cc)}")
    c, cpp = probe_compilers(home, (cc_path, cxx_path), tuple(flags))
    llvm_bin = os.path.dirname(os.path.realpath(cpp.path))
    lld = os.path.join(llvm_bin, "ld.lld")
    if not os.path.isfile(lld) and shutil.which("ld.lld") is None:
        raise McppError(f"clang links `{triple}` binaries with lld, and `ld.lld` was not found beside "
                        f"`{cpp.path}` or on PATH (apt-get install lld-{cpp.version.split('.')[0]})")
    ar = next((p for p in (os.path.join(llvm_bin, "llvm-ar"), shutil.which(f"{triple}-ar")) if p and
               os.path.isfile(p)), None) or shutil.which("ar") or "/usr/bin/ar"
    return Toolchain(name=name, family=family, cc=c, cxx=cpp, ar=os.path.realpath(ar), flags=tuple(flags),
                     link_flags=("-fuse-ld=lld",), triple=triple, sysroot=sysroot)


def toolchain_roots(tc: Toolchain) -> tuple[str, ...]:
    """The directories a cross toolchain's actions read beside their tools: the sysroot and the
    cross gcc's prefix (the sandbox shows those outside its system directories read-only)."""
    out: list[str] = []
    for f in tc.flags:
        for prefix in ("--sysroot=", "--gcc-toolchain="):
            if f.startswith(prefix):
                out.append(f[len(prefix):])
    if tc.sysroot:
        out.append(tc.sysroot)
    return tuple(dict.fromkeys(os.path.normpath(p) for p in out if p and os.path.normpath(p) != "/"))


def _driver(manifest: Manifest, key: str, default: str, triple: str, required: bool,
            payload_dirs: tuple[str, ...]) -> str | None:
    """The absolute path of `[target.TRIPLE] <key>`, else of `default` in a payload's `bin/`, else
    on PATH; a written one that is missing is an error at the key, a default one is an error only
    where `required`."""
    written = getattr(manifest, f"cross_{key}")
    if written is not None:
        found = written if os.path.isabs(written) and os.access(written, os.X_OK) else \
            (shutil.which(written) if os.sep not in written else None)
        if found is None:
            raise ManifestError(f"[target.{triple}] {key} `{written}` was not found"
                                f"{' on PATH' if os.sep not in written else ''} (or is not executable)",
                                manifest.position("target", key))
        return os.path.abspath(found)
    found = next((p for p in (os.path.join(d, "bin", default) for d in payload_dirs)
                  if os.path.isfile(p) and os.access(p, os.X_OK)), None) or shutil.which(default)
    if found is None and required:
        kind = "C++" if key == "cxx" else "C"
        raise McppError(
            f"no {kind} cross compiler for `{triple}`: `{default}` was not found on PATH",
            notes=[f"help: install it (Debian: apt-get install {'g++' if key == 'cxx' else 'gcc'}-"
                   f"{_DEBIAN_ARCH.get(triple.split('-')[0], triple)}), or name the driver in "
                   f"[target.{triple}] {key} = \"/path/to/{default}\""])
    return os.path.abspath(found) if found else None


def _prefix(driver: str) -> str:
    """`/usr` for `/usr/bin/aarch64-linux-gnu-gcc`: the installation prefix of a gcc driver."""
    return os.path.dirname(os.path.dirname(os.path.realpath(driver)))


def _package(ctx: BuildContext) -> str:
    return f"g++-{_DEBIAN_ARCH.get(ctx.target.arch, ctx.target.text)}"
