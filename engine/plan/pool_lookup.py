"""The header pool asked one path at a time, for the first compile a first build hands on.

A compile's headers are the pool headers its include scan reaches (include_scan.py), and the
pool is every header of the package and its dependencies (package/sources.py `header_pool`):
a walk of `src/` and of the include directories. At 10,000 units that walk is ~20 ms, which the
first compile of a first build (engine/exec/head_start.py) waited for, though its scan names a
handful of headers. `PoolLookup.get` answers, for one path the scan tries, whether the walk
would have listed it, from the path alone and one `lstat`, as `reachable` asks a pool index.

Where the answer is not plain (a symbolic link on the way: the walk's rules for links depend on
what it walked before; a name that is not a regular file: the walk reports it as an error), it
raises `Unsure` and the caller walks the pool as before. A wrong answer could only make the
compile handed on differ from the plan's, which then runs it again (`HeadStart.settle`).
"""
from __future__ import annotations

import os
import stat

from ..core.containment import inside
from ..manifest import globs
from ..package.model import Package
from ..package.sources import HEADER_GLOBS, include_dirs
from .context import PlanContext, transitive_deps


class Unsure(Exception):
    """A path only the walk itself can place."""


class PoolLookup:
    """Membership in the pool of `pkg` (and its library dependencies) for a non-test compile:
    `get(absolute path)` -> its execroot-relative path where the walk would list it, else None."""

    def __init__(self, ctx: PlanContext, pkg: Package) -> None:
        self.ctx = ctx
        # The packages' roots, whose `src/` headers are pooled, and their include directories,
        # pooled whole: those inside the execroot (what is elsewhere is mounted, not staged)
        self.roots: list[str] = []
        self.dirs: list[str] = []
        for p in [pkg] + transitive_deps(pkg, dev=False):
            if p.program is not None:  # a build program's include directories are made as it runs
                raise Unsure(p.name)
            self.roots.append(p.manifest.root)
            self.dirs += include_dirs(p)
        self.roots = [r for r in self.roots if inside(r, ctx.execroot)]
        self.dirs = [d for d in self.dirs if inside(d, ctx.execroot)]

    @property
    def empty(self) -> bool:
        """Nothing of the pool can be staged: the compile reads no pool header (the walk's
        answer, without scanning the source)."""
        return not self.roots and not self.dirs

    def get(self, path: str) -> str | None:
        if not inside(path, self.ctx.execroot):  # mounted, not staged: never in the pool
            return None
        if not self._pooled(path):
            return None
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError:  # unreadable: the walk says so
            raise Unsure(path) from None
        if stat.S_ISDIR(st.st_mode):  # walked, never selected
            return None
        if not stat.S_ISREG(st.st_mode) or os.path.realpath(os.path.dirname(path)) != os.path.dirname(path):
            raise Unsure(path)
        return self.ctx.rel(path)

    def _pooled(self, path: str) -> bool:
        """Whether the walk's patterns select `path`, were it a plain file: under an include
        directory (`**/*`, `target` directly under it left out), or a header under a root's
        `src/`; never through a directory or name starting with `.`, which no walk enters."""
        for d in self.dirs:
            if inside(path, d) and path != d:
                parts = path[len(d.rstrip("/")) + 1:].split("/")
                if parts[0] != "target" and not any(p.startswith(".") for p in parts):
                    return True
        for root in self.roots:
            if inside(path, root) and path != root:
                rel = path[len(root.rstrip("/")) + 1:]
                if not any(p.startswith(".") for p in rel.split("/")) \
                        and any(globs.match(g, rel) for g in HEADER_GLOBS):
                    return True
        return False
