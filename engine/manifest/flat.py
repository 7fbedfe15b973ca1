"""The flat, source-ordered table of a (folded) manifest document (what `mcpp metadata`
prints, docs/manifest.md).

One line per leaf: `str  build.cxxflags[0] = "-O2"`, in the order the document holds its keys
(source order, folded entries after the unconditional ones). A tree printed as a table answers
"what does this build see" with `grep`, and diffs line by line between two targets. Empty arrays
and tables get a line of their own, because `sources = []` (build nothing) is not the same
manifest as no `sources` at all (the convention glob). A folded entry carries its origin as a
trailing `# ...` note.
"""
from __future__ import annotations

import datetime
import json

from .reader import toml_key

_TAGS = ((bool, "bool"), (int, "int"), (float, "flt"), (str, "str"), (datetime.date, "date"),
         (datetime.time, "time"))


def _tag(value) -> str:
    for kind, tag in _TAGS:
        if isinstance(value, kind):
            return tag
    return type(value).__name__


def render_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return repr(value)


def flat_lines(doc: dict, notes: dict | None = None) -> list[str]:
    notes = notes or {}
    out: list[str] = []

    def note_of(keypath: tuple) -> str:
        for n in range(len(keypath), 0, -1):
            if keypath[:n] in notes:
                return f"  # {notes[keypath[:n]]}"
        return ""

    def walk(value, shown: str, keypath: tuple) -> None:
        if isinstance(value, dict):
            if not value and keypath:
                out.append(f"tbl  {shown} = {{}}{note_of(keypath)}")
            for k, v in value.items():
                walk(v, f"{shown}.{toml_key(k)}" if shown else toml_key(k), keypath + (k,))
        elif isinstance(value, list):
            if not value:
                out.append(f"arr  {shown} = []{note_of(keypath)}")
            for i, v in enumerate(value):
                walk(v, f"{shown}[{i}]", keypath + (i,))
        else:
            out.append(f"{_tag(value):<4} {shown} = {render_value(value)}{note_of(keypath)}")

    walk(doc, "", ())
    return out


def jsonable(value):
    """The document as JSON can hold it (TOML dates become ISO strings)."""
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return value
