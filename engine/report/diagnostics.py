"""Compiler diagnostics as the user reads them: paths they can open, and structured records.

Compilers run with the execroot (the common parent of the build's packages) as their working
directory, so they name files relative to it: `mylib/src/mylib.cppm:4:40` while the user stands
in `app/`. Neither the user's shell nor an editor's "jump to error" can resolve that, so each
path a diagnostic names is rewritten relative to the directory mcpp was started from, as Cargo
shows `../mylib/src/lib.rs` for a path dependency (absolute when the file is not inside the
build's tree, or the user stands outside it).
"""
from __future__ import annotations

import os
import re
from dataclasses import replace

from mcpp.cas.action import Action, ActionKind

from ..core.errors import display_path
from ..core.lazy_re import lazy_compile
from .reporter import SGR as _SGR

# A path a compiler or linker names: at the start of a line (`a/b.cpp:4:2: error:`,
# `a/b.cpp: In function`), after "from " (include chains), after `ld: ` and the like. It runs
# until a character that ends a path in a diagnostic.
_PATH_TOKEN = lazy_compile(r"(?:^|(?<=[\s'\"`(])|(?<=\x1b\[K)|(?<=\x1b\[1m)|(?<=\x1b\[m))((?:\.\./)*[\w.+-]+(?:/[\w.+-]+)*)(?=[:,)'\"`]|$)",
                         re.MULTILINE)
# `file:line:col: severity: message` (gcc, clang) and `file:line: severity: message` (tools).
_DIAGNOSTIC = lazy_compile(
    r"^(?:\x1b\[[0-9;]*[mK])*(?P<file>[^\s:][^:\n]*?):(?P<line>\d+):(?:(?P<column>\d+):)?(?:\x1b\[[0-9;]*[mK])* "
    r"(?:\x1b\[[0-9;]*[mK])*(?P<severity>fatal error|error|warning|note)(?:\x1b\[[0-9;]*[mK])*: (?P<message>.*)$")


_COMPILER = lazy_compile(r"(?:.*-)?(?:g\+\+|gcc|c\+\+|cc|clang|clang\+\+)(?:-\d+(?:\.\d+)*)?")
COLOUR_FLAG = "-fdiagnostics-color=always"


def coloured(a: Action) -> Action:
    """`a` with its compiler told to colour its diagnostics (their output is piped, so it would
    not on its own). Only the run gets the flag, never the key: the object is the same bytes
    either way, so a build with colours and one without share their cache entries, and the
    output stored with the entry is replayed with its colours, or without them (`plain`)."""
    if a.kind not in (ActionKind.COMPILE, ActionKind.LINK) or not a.argv or COLOUR_FLAG in a.argv:
        return a
    if not _COMPILER.fullmatch(os.path.basename(a.argv[0])):
        return a
    return replace(a, argv=(a.argv[0], COLOUR_FLAG) + tuple(a.argv[1:]))


def plain(text: str) -> str:
    """`text` without colour sequences: for a terminal that gets none and for JSON."""
    return _SGR.sub("", text) if "\x1b" in text else text


def relative_paths_shown(text: str, execroot: str) -> str:
    """`text` with each execroot-relative path of an existing file as the user's path of it."""
    if not execroot or not text:
        return text
    seen: dict[str, str] = {}

    def replace(m: re.Match) -> str:
        token = m.group(1)
        if "/" not in token and "." not in token:
            return token  # `error`, `note`, `In function`: not a file
        if token not in seen:
            full = os.path.join(execroot, token)
            # shown as mcpp shows every path: relative below the cwd, absolute elsewhere
            seen[token] = display_path(os.path.normpath(full)) if os.path.isfile(full) else token
        return seen[token]

    return _PATH_TOKEN.sub(replace, text)


def parse(rendered: str) -> list[dict]:
    """The diagnostics of a tool's output, one record per `file:line[:col]: error|warning:` line,
    with `file`, `line`, `column`, `severity`, `message` and the `rendered` text that belongs to it
    (the context lines before it, such as `In function ...`, and the notes and caret lines after
    it). Output with no such line is one record with only `rendered` (and severity `unknown`)."""
    records: list[dict] = []
    pending: list[str] = []  # context lines waiting for the diagnostic they introduce
    for line in rendered.splitlines():
        m = _DIAGNOSTIC.match(line)
        if m and m.group("severity") != "note":
            records.append({
                "file": m.group("file"),
                "line": int(m.group("line")),
                "column": int(m.group("column")) if m.group("column") else None,
                "severity": "error" if m.group("severity") == "fatal error" else m.group("severity"),
                "message": _SGR.sub("", m.group("message")),
                "lines": pending + [line],
            })
            pending = []
        elif records and (m or line.startswith(" ") or line.startswith("\x1b")) and not _is_context(line):
            records[-1]["lines"].append(line)
        else:
            pending.append(line)
    if pending:
        if records:
            records[-1]["lines"] += pending
        else:
            return [{"file": None, "line": None, "column": None, "severity": "unknown",
                     "message": _SGR.sub("", rendered.strip()), "rendered": rendered}]
    for r in records:
        r["rendered"] = "\n".join(r.pop("lines")) + "\n"
    return records


def _is_context(line: str) -> bool:
    """A line that introduces the next diagnostic (`a.cpp: In function 'f':`, include chains)."""
    plain = _SGR.sub("", line)
    return (plain.startswith("In file included from") or plain.lstrip().startswith("from ")
            or ": In " in plain or plain.startswith("In module") or ": At global scope" in plain)
