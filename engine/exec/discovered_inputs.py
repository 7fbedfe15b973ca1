"""Which files a compile read, from its make-style depfile (`-MD -MF`)."""
from __future__ import annotations

import os
import sys
from typing import Iterable

from mcpp.sandbox import parse_depfile


def discovered_inputs(depfile_text: str, execroot: str, declared: set[str],
                      files_seen: dict[str, str] | None = None) -> tuple[str, ...]:
    """`discovered_from` the dependencies `depfile_text` names."""
    return discovered_from(parse_depfile(depfile_text), execroot, declared, files_seen)


def discovered_from(deps: Iterable[str], execroot: str, declared: set[str],
                    files_seen: dict[str, str] | None = None) -> tuple[str, ...]:
    """The files the compile read beyond its declared inputs: execroot-relative paths for files
    of the build, absolute ones for files outside it.

    Files outside the execroot (`/usr/include`, `/usr/local/include`, a `-I` elsewhere) are part
    of the key like any other: the toolchain's identity covers the compiler binary, not the
    headers a package manager or a user may change beside it, and a header that changes must
    rebuild (and must not let `rm -rf target` restore the old object). Their digests come from
    the stat cache, so a no-op build stats them and hashes nothing. Module BMIs are declared
    inputs already.

    `files_seen`: the files already seen in this build, as a depfile spells each one -> its
    normalized path (relative inside the build); filled here. Every compile names the same thirty
    to a hundred system headers, and the project's own headers again and again: each is
    normalized and `stat`ed once per build (a `stat` on the scheduler thread lets go of the GIL
    beside the lanes that want it). As a file's digest (`KeyComputer.settled`), its being a
    file is taken once per build.
    """
    # A prefix test on normalized absolute paths says what `os.path.relpath` would, at a tenth
    # of its cost: a compile names some thirty files, and a clean build parses every depfile.
    root = os.path.abspath(execroot)
    prefix = root if root.endswith("/") else root + "/"
    out: dict[str, None] = {}
    for dep in deps:
        if dep in declared:
            # Spelled as declared (a link's depfile names each of its objects so): the same file
            # as the input, already in the key, whatever normalizing would make of the spelling.
            continue
        if files_seen is not None:
            known = files_seen.get(dep)
            if known is not None:
                if known not in declared:  # as below: another action's discovery, this one's input
                    out.setdefault(known)
                continue
        path = os.path.normpath(dep if dep.startswith("/") else prefix + dep)
        inside = path.startswith(prefix)
        rel = path[len(prefix):] if inside else path  # outside the build: its absolute path
        if rel in declared or rel.endswith((".gcm", ".pcm")):
            continue
        if os.path.isfile(path):
            # Interned: hundreds of compiles name the same system headers, and the state file
            # (marshal) then stores each path once, not once per compile.
            rel = sys.intern(rel)
            out.setdefault(rel)
            if files_seen is not None:
                files_seen[dep] = rel
    return tuple(sorted(out))
