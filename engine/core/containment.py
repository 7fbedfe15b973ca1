"""Paths the engine reads on a build's behalf stay inside the build.

The engine reads sources, headers and a build program's files outside any sandbox (to hash
them, stage them, list them), following symlinks as `open` and `stat` do. An in-package symlink
to `/etc/shadow` or `/` would therefore make the engine read a host file into the store and
`target/`, or list host directories into a build program (`glob("rootlink/etc/*")`). So every
such path is resolved (`realpath`) and refused when it leaves its boundary (the package, or the
build's root for a rule action's inputs); the error names the symlink that leads out, which is
the thing the user has to change. Symlinks that stay inside are followed.
"""
from __future__ import annotations

import os

from .errors import ManifestError


class SymlinkEscape(ManifestError):
    """A path the build would read leads, through `symlink`, outside `boundary`."""

    def __init__(self, shown: str, symlink: str, target: str, boundary: str, what: str = "the package"):
        self.symlink, self.target, self.boundary = symlink, target, boundary
        super().__init__(
            f"{shown} leads outside {what} (`{boundary}`): `{symlink}` is a symlink to `{target}`",
            notes=["note: the engine reads only files inside the build; copy the file in, or point the "
                   "symlink at a file of the package"])


def inside(path: str, root: str) -> bool:
    """Lexically: `path` is `root` or below it (both absolute and normalized)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def check(path: str, boundary: str, shown: str | None = None, what: str = "the package") -> str:
    """`path` (absolute) with its symlinks resolved; raises `SymlinkEscape` naming the symlink
    through which it leaves `boundary`. A missing path resolves as far as it exists. `shown`
    says what the path is in the message (default: the path in backticks)."""
    real_boundary = os.path.realpath(boundary)
    real = os.path.realpath(path)
    if inside(real, real_boundary):
        return real
    link, target = first_escape(path, boundary, real_boundary)
    raise SymlinkEscape(shown or f"`{path}`", link, target, boundary, what)


def first_escape(path: str, boundary: str, real_boundary: str) -> tuple[str, str]:
    """The first component of `path` below `boundary` that is a symlink resolving outside
    `real_boundary`, and what it points to (as written); `(path, its real path)` when no single
    link is to blame. (Links at or above the boundary are where the build lives, not a way out.)"""
    path, boundary = os.path.normpath(path), os.path.normpath(boundary)
    prefix, rest = (boundary, os.path.relpath(path, boundary)) if inside(path, boundary) else (os.sep, path)
    for part in rest.split(os.sep):
        if part in ("", "."):
            continue
        prefix = os.path.join(prefix, part)
        if os.path.islink(prefix) and not inside(os.path.realpath(prefix), real_boundary):
            try:
                return prefix, os.readlink(prefix)
            except OSError:
                break
    return path, os.path.realpath(path)
