"""Which programs a link runs: the linker the compiler driver picks, found as the driver finds it.

A link's command names only the driver (`g++`); the driver runs a linker it looks up by name at
run time: gcc through `collect2`, which tries `real-ld`, `collect-ld` and `ld` (or `ld.gold`
for `-fuse-ld=gold`, ...) in the driver's program directories (`-B` prefixes first), then `ld`
on PATH; clang tries `-B` prefixes, then each name in its program directories and on PATH.
Another `ld` first on PATH, a `-B` directory or an alternatives switch changes the program
that produces the binary while the command stays the same, so these programs are tools of the
link action: their digests are in its key (read through the stat cache).

The lookup is repeated here, with the action's own PATH (the actions' fixed environment), at
plan time: the key must be known before the action runs (for a cache lookup), and a linker
that appears where none was (a new `/usr/local/bin/ld`) is no file any depfile could name. It
is a few dozen `stat` calls per distinct linker selection per build.
"""
from __future__ import annotations

import os
from typing import Iterable, Sequence

from .compilers import Compiler, Toolchain

# The linker names `-fuse-ld=X` selects (gcc and clang); an absolute `-fuse-ld=/x/ld` (clang)
# or `--ld-path=/x/ld` names the program itself.
_FUSE = {"bfd": "ld.bfd", "gold": "ld.gold", "lld": "ld.lld", "mold": "ld.mold"}


def action_path(env: Sequence[tuple[str, str]]) -> tuple[str, ...]:
    """The directories of PATH in an action's environment, in order."""
    value = dict(env).get("PATH", "")
    return tuple(d for d in value.split(":") if d)


def selection_flags(argv: Sequence[str]) -> tuple[str, ...]:
    """The flags of a link command that choose its linker (`-B`, `-fuse-ld=`, `--ld-path=`)."""
    return tuple(f for i, f in enumerate(argv) if f.startswith(("-B", "-fuse-ld=", "--ld-path="))
                 or (i and argv[i - 1] == "-B"))


def default_programs(tc: Toolchain, path: Sequence[str]) -> tuple[str, ...]:
    """The programs both drivers run for a link without a linker selection."""
    return tuple(dict.fromkeys(link_programs(tc, tc.cxx, (), path) + link_programs(tc, tc.cc, (), path)))


def watched_dirs(tc: Toolchain, links: Iterable[Sequence[str]], path: Sequence[str]) -> list[str]:
    """The directories the linker lookups of the link commands `links` read."""
    out: dict[str, None] = {}
    for program, selection in {(a[0], selection_flags(a)) for a in links}:
        driver = tc.cc if program == tc.cc.path else tc.cxx
        out.update(dict.fromkeys(search_dirs(tc, driver, selection, path)))
    return list(out)


def link_programs(tc: Toolchain, driver: Compiler, argv: Sequence[str], path: Sequence[str]) -> tuple[str, ...]:
    """The absolute paths of the programs `driver` runs for the link command `argv` under PATH
    `path`, beside the driver itself: for gcc `collect2` and the linker, for clang the linker.
    A program the lookup does not find is left out (the link then fails on its own)."""
    prefixes, fuse, ld_path = _selection(argv)
    if ld_path:
        return (ld_path,) if os.path.isabs(ld_path) else ()
    if fuse and os.path.isabs(fuse):
        return (fuse,)
    name = _FUSE.get(fuse, f"ld.{fuse}") if fuse else "ld"
    found: list[str] = []
    if tc.family == "gcc":
        cpath = _gcc_prefixes(driver, prefixes) + _dirs(driver.programs)
        collect2 = _first(cpath, "collect2")
        if collect2:
            found.append(collect2)
        # collect2: each name through the compiler directories, then the linker's name on PATH
        ld = (_first(cpath, "real-ld") or _first(cpath, "collect-ld") or _first(cpath, name)
              or _first(_dirs(path), name))
    else:
        ld = _clang_lookup(driver, prefixes, name, path)
    if ld:
        found.append(ld)
    return tuple(found)


def search_dirs(tc: Toolchain, driver: Compiler, argv: Sequence[str], path: Sequence[str]) -> tuple[str, ...]:
    """Every directory the lookup of `link_programs` reads: a file created in one of them may
    change the answer (the no-op record watches their mtimes)."""
    prefixes, _, _ = _selection(argv)
    dirs = _gcc_prefixes(driver, prefixes) if tc.family == "gcc" else _prefixes(prefixes)
    return tuple(dict.fromkeys(os.path.dirname(p) if not p.endswith("/") else p.rstrip("/") or "/"
                               for p in dirs + _dirs(driver.programs) + _dirs(path)))


def _selection(argv: Sequence[str]) -> tuple[list[str], str, str]:
    """(`-B` prefixes in order, the last `-fuse-ld=` value, the last `--ld-path=` value)."""
    prefixes: list[str] = []
    fuse = ld_path = ""
    for i, f in enumerate(argv):
        if f == "-B" and i + 1 < len(argv):
            prefixes.append(argv[i + 1])
        elif f.startswith("-B") and len(f) > 2:
            prefixes.append(f[2:])
        elif f.startswith("-fuse-ld="):
            fuse = f[len("-fuse-ld="):]
        elif f.startswith("--ld-path="):
            ld_path = f[len("--ld-path="):]
    return prefixes, fuse, ld_path


def _prefixes(prefixes: Sequence[str]) -> tuple[str, ...]:
    """`-B` values as both drivers use them: a directory gets its `/`, anything else is a
    prefix of a file name (`-B/opt/x/my-` finds `/opt/x/my-ld`). A relative prefix names
    nothing an action sees (its directory is not staged): left out."""
    return tuple(p + "/" if not p.endswith("/") and os.path.isdir(p) else p for p in prefixes if os.path.isabs(p))


def _dirs(dirs: Sequence[str]) -> tuple[str, ...]:
    return tuple(d if d.endswith("/") else d + "/" for d in dirs if d)


def _gcc_prefixes(driver: Compiler, prefixes: Sequence[str]) -> tuple[str, ...]:
    """What the `-B` options put before gcc's program directories: for each prefix `P`,
    `P<target>/<version>/` and `P<target>/` (where P is a directory), then `P`."""
    versions = dict.fromkeys((driver.version.split(".")[0], driver.version))
    out: list[str] = []
    for p in _prefixes(prefixes):
        if p.endswith("/"):
            out += [f"{p}{driver.target}/{v}/" for v in versions] + [f"{p}{driver.target}/"]
        out.append(p)
    return tuple(out)


def _clang_lookup(driver: Compiler, prefixes: Sequence[str], name: str, path: Sequence[str]) -> str | None:
    """clang's `GetProgramPath`: the `-B` prefixes for the name; then, name by name (the
    target-prefixed one first), its program directories, then PATH."""
    hit = _first(_prefixes(prefixes), name)
    for n in (f"{driver.target}-{name}", name):
        hit = hit or _first(_dirs(driver.programs), n) or _first(_dirs(path), n)
    return hit


def _first(prefixes: Sequence[str], name: str) -> str | None:
    """The first `prefix + name` that is an executable file, as an absolute, normalized path."""
    for p in prefixes:
        candidate = p + name
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return os.path.normpath(os.path.abspath(candidate))
    return None
