"""Finding undeclared inputs from what the compiler says it read (its depfile).

Under ``dir`` there are no namespaces, so an ``#include`` through an absolute ``-I`` path (or
a relative one that climbs out with ``..``) silently reads the real tree and the cache key
misses it. The compiler's depfile lists every file it opened; each one must be

- inside the action's root and declared (an input, an output, or under a declared directory
  input), or
- under a system root (``/usr``, ``/lib*``, ``/bin``, ``/sbin``, ``/etc/alternatives``), or under the
  root of a declared tool (``/opt/gcc-13/bin/gcc`` -> ``/opt/gcc-13``), or
- a temporary the action wrote and removed itself: a path under ``/tmp`` that no longer exists
  once it ended (a link with ``-flto`` reads the objects ``lto-wrapper`` wrote there; under
  bwrap that ``/tmp`` was the action's own and is gone).

Under ``bwrap`` the same check runs on the same rules (with ``/execroot`` as the root), though
an undeclared file there does not exist and the compiler fails first.

A depfile names what the preprocessor read, not what the driver read before it: a response file
(``@flags.rsp``, also passed on as ``-Wl,@link.rsp`` or ``-Xlinker @link.rsp``, and clang's
``--config``) holds arguments that change the result. For an action whose reads its depfile
proves, ``response_files`` finds them in the argv (and in the response files themselves, which
may name more) and the same rules apply to each, before the action runs.
"""
from __future__ import annotations

import functools
import os
import posixpath
from typing import Callable, Collection, Iterable, Sequence

from .inputs import at_or_below

# Exactly what a bwrap action sees of the host (bwrap.py binds these read-only), so that ``dir``
# refuses what bwrap refuses: ``#include "/etc/hostname"`` does not exist under bwrap.
SYSTEM_ROOTS: tuple[str, ...] = (
    "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin",
    "/etc/alternatives", "/etc/ld.so.cache",
)

TEMP_ROOT = "/tmp/"


def tool_root(tool: str) -> str:
    """The directory a tool's installation lives in: ``<prefix>`` for ``<prefix>/bin/x``."""
    d = posixpath.dirname(posixpath.normpath(tool))
    if posixpath.basename(d) in ("bin", "sbin") and posixpath.dirname(d) != "/":
        return posixpath.dirname(d)
    return d


@functools.lru_cache(maxsize=256)
def tool_roots(tools: tuple[str, ...]) -> tuple[str, ...]:
    """Roots of ``tools`` (and of their symlink targets) outside the system roots."""
    roots: dict[str, None] = {}
    for tool in tools:
        for path in (tool, os.path.realpath(tool)):
            root = tool_root(path)
            if root and root != "/" and not _under(root, SYSTEM_ROOTS):
                roots.setdefault(root, None)
    return tuple(roots)


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r + "/") for r in roots)


def find_undeclared(
    deps: Iterable[str],
    *,
    root: str,
    cwd: str,
    declared: Collection[str],
    allowed_roots: tuple[str, ...],
) -> list[str]:
    """Dependencies that are neither declared nor system files.

    ``root`` is the action's root as the compiler saw it, ``cwd`` the compiler's working
    directory (absolute, as it saw it), ``declared`` the action-relative inputs and outputs.
    Inside ``root`` a dependency is reported action-relative; outside, absolute.
    """
    prefix = root.rstrip("/") + "/"
    # A dependency named as it was declared, from the action's root (a link's thousand
    # objects): staged under that very name, so no normalising is needed to accept it.
    at_root = cwd.rstrip("/") == root.rstrip("/")
    bad: list[str] = []
    for dep in deps:
        if at_root and dep in declared:
            continue
        path = posixpath.normpath(dep if dep.startswith("/") else f"{cwd}/{dep}")
        if path.startswith(prefix):
            rel = path[len(prefix):]
            if not at_or_below(rel, declared):
                bad.append(rel)
        elif path == root.rstrip("/"):
            continue
        elif not _under(path, allowed_roots) and not _temporary(path):
            bad.append(path)
    return bad


# options whose next argument a tool passes on to another (which reads `@file` in it)
_PASS_ON = frozenset({"-Xlinker", "-Xassembler", "-Xpreprocessor", "-Xclang"})
_NESTED_MAX = 16  # response files read while following the ones response files name


def response_files(argv: Sequence[str]) -> list[str]:
    """The files ``argv``'s tool, or one it passes arguments to, reads as arguments: ``@file``
    (gcc, clang, ld, as), ``-Wl,@file`` (and ``-Wa,``, ``-Wp,``), the argument after
    ``-Xlinker`` and the like, and clang's ``--config``, as written (relative to the cwd)."""
    found: list[str] = []
    args = iter(argv[1:])
    for arg in args:
        if arg in _PASS_ON:
            arg = next(args, "")
        elif arg == "--config":
            found.append(next(args, ""))
            continue
        elif arg.startswith("--config="):
            found.append(arg[len("--config="):])
            continue
        if arg.startswith("@") and len(arg) > 1:
            found.append(arg[1:])
        elif arg.startswith("-W") and "," in arg:
            found += [part[1:] for part in arg.split(",")[1:] if part.startswith("@") and len(part) > 1]
    return [f for f in found if f]


def undeclared_response_files(
    argv: Sequence[str],
    *,
    root: str,
    cwd: str,
    declared: Collection[str],
    allowed_roots: tuple[str, ...],
    read: Callable[[str], str | None],
) -> list[str]:
    """The response files ``argv`` names (and those they name) that are neither declared nor
    system files, reported as ``find_undeclared`` does. ``read(path)`` answers a declared
    response file's text (an absolute path as the action sees it), None when it cannot."""
    bad: list[str] = []
    todo, seen = [list(argv)], 0
    prefix = root.rstrip("/") + "/"
    while todo and seen < _NESTED_MAX:
        names = response_files(todo.pop())
        seen += 1
        wrong = find_undeclared(names, root=root, cwd=cwd, declared=declared, allowed_roots=allowed_roots)
        bad += [w for w in wrong if w not in bad]
        for name in names:
            path = posixpath.normpath(name if name.startswith("/") else f"{cwd}/{name}")
            shown = path[len(prefix):] if path.startswith(prefix) else path
            if shown in wrong:
                continue
            text = read(path)
            if text is not None:
                import shlex  # only an action with a response file: not on a build's import path

                try:
                    todo.append(["-", *shlex.split(text)])
                except ValueError:  # unbalanced quotes: the tool reads it as it can; nothing more to follow
                    pass
    return bad


def _temporary(path: str) -> bool:
    """A file the action made under ``/tmp`` and removed before it ended (nothing is there now)."""
    return path.startswith(TEMP_ROOT) and not os.path.lexists(path)


def undeclared_message(label: str, paths: Iterable[str]) -> bytes:
    lines = [f"error: action {label} read undeclared input {p}" for p in paths]
    lines.append(
        "note: declare every file the action reads as an input; files under /usr, /lib*, /bin "
        "and under the installation root of a declared tool need no declaration"
    )
    return ("\n".join(lines) + "\n").encode()
