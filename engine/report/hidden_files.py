"""One line after a failed action whose tool says a file does not exist when it does exist on this
machine: the sandbox showed the action only its declared inputs, and the compiler's "No such file
or directory" names neither the sandbox nor the manifest key that would have declared the file.

Only a failed action's output is read (nothing here runs on a build that succeeds). The file is
looked for where the tool would have looked: an absolute name as written, a relative one beside
the file that includes it, in each include directory of the command line, in the action's working
directory and at its package's root. The hint names the file as the user sees it and the key that
declares it: `include_dirs` for a compile's headers, `inputs` of `mcpp.action(...)` for a build
program's action, and a payload for a file outside every package.
"""
from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass

from mcpp.cas.action import Action, ActionKind

from ..core.errors import display_path

# The tool's words for a file it could not open, with the name it was given:
#   gcc:    src/main.cpp:1:10: fatal error: ../config/app.h: No such file or directory
#   clang:  src/main.cpp:1:10: fatal error: '../config/app.h' file not found
#   others: cat: data.txt: No such file or directory, cp: cannot stat 'data.txt': No such file or
#           directory, ... No such file or directory: 'data.txt'
@functools.cache
def _missing_patterns() -> tuple[re.Pattern[str], ...]:
    """Compiled on the first failed action's output: a build that fails nothing never pays for them."""
    return (
        re.compile(r"^(?:(?P<file>[^:\n]+):\d+:(?:\d+:)? )?fatal error: '?(?P<name>[^'\n]+?)'?: "
                   r"No such file or directory$", re.M),
        re.compile(r"^(?:(?P<file>[^:\n]+):\d+:(?:\d+:)? )?fatal error: '(?P<name>[^'\n]+)' file not found$", re.M),
        re.compile(r"['\"`\u2018](?P<name>[^'\"`\u2019\n]+)['\"`\u2019]: No such file or directory$", re.M),
        re.compile(r"(?P<name>[^\s:'\"`\u2019]+): No such file or directory$", re.M),
        re.compile(r"No such file or directory: '(?P<name>[^'\n]+)'"),
    )


_INCLUDE_FLAGS = ("-I", "-iquote", "-isystem", "-idirafter")
_SANDBOX_ROOT = "/execroot"  # where a sandbox mounts the execroot (sandbox/bwrap.py)
_MAX_HINTS = 3


@dataclass(frozen=True)
class PackageDirs:
    """A package as the hint names it: its name and its root (absolute)."""
    name: str
    root: str


def hidden_file_hints(a: Action, output: str, execroot: str, package: str | None,
                      packages: dict[str, PackageDirs]) -> list[str]:
    """`help: ...` lines for the files `output` (the failed action's own text, its paths relative
    to the execroot) says are missing while they exist on this machine; `package` owns the action."""
    own = packages.get(package) if package else None
    hints: list[str] = []
    seen: set[str] = set()
    for name, includer in _missing(output):
        if name in seen or len(hints) == _MAX_HINTS:
            continue
        seen.add(name)
        found = _find(name, includer, a, execroot, own)
        hint = _hint(a, name, *found, own, packages) if found is not None else None
        if hint:
            hints.append(hint)
    return hints


def _missing(output: str) -> list[tuple[str, str | None]]:
    """(name, the file whose line names it, when the tool says) for each missing-file message."""
    out: list[tuple[tuple[int, int], str, str | None]] = []
    taken: list[tuple[int, int]] = []
    for pattern in _missing_patterns():
        for m in pattern.finditer(output):
            if any(s <= m.start() < e for s, e in taken):
                continue  # a compiler's line, already read by a more specific pattern
            taken.append(m.span())
            includer = m.groupdict().get("file")
            out.append((m.span(), m.group("name").strip(), includer.strip() if includer else None))
    return [(name, includer) for _span, name, includer in sorted(out)]


def _host(path: str, execroot: str) -> str:
    """A path as the action saw it, on this machine: the sandbox's root is the execroot."""
    if path == _SANDBOX_ROOT or path.startswith(_SANDBOX_ROOT + "/"):
        path = execroot + path[len(_SANDBOX_ROOT):]
    return os.path.normpath(os.path.join(execroot, path))


def _include_dirs(argv: tuple[str, ...]) -> list[str]:
    dirs: list[str] = []
    for i, word in enumerate(argv):
        for flag in _INCLUDE_FLAGS:
            if word == flag and i + 1 < len(argv):
                dirs.append(argv[i + 1])
            elif word.startswith(flag) and len(word) > len(flag) and not word.startswith(flag + "prefix"):
                dirs.append(word[len(flag):])
    return dirs


def _find(name: str, includer: str | None, a: Action, execroot: str,
          own: PackageDirs | None) -> tuple[str, str] | None:
    """(the file on this machine, the directory that would make `name` resolve as written), or
    None: beside the includer that is the file's own directory, else the base it resolved against."""
    if os.path.isabs(name) and not name.startswith(_SANDBOX_ROOT + "/"):
        return (name, os.path.dirname(name)) if os.path.isfile(name) else None
    if os.path.isabs(name):
        path = _host(name, execroot)
        return (path, os.path.dirname(path)) if os.path.isfile(path) else None
    if includer:
        path = os.path.normpath(os.path.join(os.path.dirname(_host(includer, execroot)), name))
        if os.path.isfile(path):
            return path, os.path.dirname(path)
    bases = [_host(d, execroot) for d in _include_dirs(a.argv)] + [_host(a.cwd, execroot)]
    if own is not None:
        bases.append(own.root)
    for base in bases:
        path = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(path):
            return path, base
    return None


def _manifest_dir_of(path: str) -> str | None:
    """The nearest directory above `path` holding an `mcpp.toml`, if any."""
    d = os.path.dirname(path)
    while True:
        if os.path.isfile(os.path.join(d, "mcpp.toml")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _hint(a: Action, name: str, path: str, directory: str, own: PackageDirs | None,
          packages: dict[str, PackageDirs]) -> str | None:
    shown = display_path(path)
    lead = (f"help: `{name}` exists here" + (f" as `{shown}`" if shown != name else "")
            + f", but it is not an input of `{a.id}`, and an action sees only its inputs")
    holder = next((p for p in sorted(packages.values(), key=lambda p: -len(p.root))
                   if _within(path, p.root) and not _within(path, os.path.join(p.root, "target"))), None)
    if holder is None and a.kind == ActionKind.COMPILE:
        manifest_dir = _manifest_dir_of(path)
        if manifest_dir is not None:
            return (f"{lead}: it lies in the package at `{display_path(manifest_dir)}`, which is not among this "
                    f"build's packages: a compile sees another package's headers under its include directories "
                    f"(`include_dirs` under [build]) once it is in [dependencies]")
    if a.kind == ActionKind.RULE:
        return f"{lead}: list it in `inputs` of the `mcpp.action(...)` that declares it (docs/rules.md)"
    if holder is None:
        return (f"{lead}: a file outside the packages reaches a build as a payload (`[xlings]`, "
                f"docs/payloads.md)") if a.kind in (ActionKind.COMPILE, ActionKind.LINK) else None
    if a.kind == ActionKind.LINK:
        return (f"{lead}: name it in `link_inputs` under the target's [targets.<name>] of `{holder.name}` "
                f"(docs/manifest.md)")
    if a.kind != ActionKind.COMPILE:
        return None
    if own is not None and holder.name != own.name:
        return (f"{lead}: it belongs to package `{holder.name}`, whose headers a compile of `{own.name}` sees "
                f"only under `{holder.name}`'s include directories (`include_dirs` under [build]), and only "
                f"when `{holder.name}` is in [dependencies]")
    directory = directory if _within(directory, holder.root) else os.path.dirname(path)
    rel = os.path.relpath(directory, holder.root)
    return (f"{lead}: a compile sees its package's headers under `src/` and its include directories; "
            f"add `include_dirs = [\"{rel}\"]` under [build] of `{holder.name}` (or of one target)")
