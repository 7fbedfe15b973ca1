"""Typed, positioned access to one parsed manifest: every failure is a `ManifestError` at the
offending key or value, every unknown key a positioned warning (an error under `--strict`).

`tomllib` keeps no positions, so `toml_positions.SourceMap` maps key paths to line and column.
The folded manifest is read through the same reader with a `Provenance`: an entry that came from
`[target.<selector>.build]` is reported where it is written, not where it was folded to.
"""
from __future__ import annotations

import os
import re
from typing import Any

from ..core.errors import ManifestError, Position, display_path  # noqa: F401 (display_path: imported from here too)
from . import schema
from .toml_positions import SourceMap, too_deep_at

_BARE = re.compile(r"[A-Za-z0-9_-]+$")
# No manifest needs more than a handful of levels (`target.'cfg(...)'.dependencies.x.features`);
# the limit keeps every recursive walk of the document far from Python's recursion limit.
MAX_NESTING = 32
# Names that become file names (`target/<profile>/`, `lib<name>.a`, `obj/<package>/`) stay well
# under the 255 bytes a file system allows in one name.
MAX_NAME = 128
TYPE_NAMES = {str: "a string", bool: "a boolean", int: "an integer", float: "a float",
              list: "an array", dict: "a table"}




def type_name(value: Any) -> str:
    for t, name in TYPE_NAMES.items():
        if type(value) is t:
            return name
    return type(value).__name__


def toml_key(key: str | int) -> str:
    """One key path segment as TOML would spell it: bare when it can be, else quoted."""
    if isinstance(key, int):
        return str(key)
    if _BARE.match(key):
        return key
    if ('"' in key or key.startswith("cfg(")) and "'" not in key and "\n" not in key:
        return f"'{key}'"  # a literal string: how selectors are written ([target.'cfg(unix)'])
    return '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


def header(keypath: tuple) -> str:
    """`[target.'cfg(unix)'.build]`; the top level is `[top level]`."""
    return "[" + (".".join(toml_key(k) for k in keypath) or "top level") + "]"


def dotted(keypath: tuple) -> str:
    return ".".join(toml_key(k) for k in keypath)


def check_limits(path: str, text: str, doc: dict | None) -> None:
    """Refuse what no later step can handle: nesting deeper than MAX_NESTING (`doc` is None when
    tomllib itself gave up with a RecursionError), at the first key or value past the limit, and
    a NUL byte in any key or string (it would reach an argv or a path), at its escape."""
    depth, nul = _walk(doc) if doc is not None else (MAX_NESTING + 1, False)
    if depth > MAX_NESTING:
        line, col = too_deep_at(text, MAX_NESTING) or (1, 1)
        raise ManifestError(f"tables, arrays or dotted keys nest deeper than {MAX_NESTING} levels",
                            Position(display_path(path), line, col))
    if nul:
        m = re.search(r"\\u0000|\\U00000000", text)
        at = m.start() if m else 0
        line = text.count("\n", 0, at) + 1
        raise ManifestError("a string contains a NUL byte (`\\u0000`); no flag, path or name can hold one",
                            Position(display_path(path), line, at - (text.rfind("\n", 0, at) + 1) + 1))


def _walk(doc) -> tuple[int, bool]:
    """How deeply tables and arrays nest, and whether a key or string holds a NUL byte; walked
    without recursion."""
    deepest, nul, stack = 0, False, [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_NESTING:
            break
        items = list(value.items()) if isinstance(value, dict) else [(None, v) for v in value]
        for key, child in items:
            nul = nul or (key is not None and "\0" in key) or (isinstance(child, str) and "\0" in child)
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return deepest, nul


class Provenance:
    """Where each entry of a folded document is written in the source document."""

    def __init__(self, mapping: dict[tuple, tuple] | None = None):
        self.mapping = mapping or {}

    def source_of(self, path: tuple) -> tuple:
        for n in range(len(path), 0, -1):
            src = self.mapping.get(path[:n])
            if src is not None:
                return src + tuple(path[n:])
        return tuple(path)


class Reader:
    def __init__(self, path: str, text: str, smap: SourceMap, *, strict: bool = False,
                 provenance: Provenance | None = None, warnings: list[str] | None = None):
        self.path = path
        self.shown = display_path(path)
        self.lines = text.splitlines()
        self.smap = smap
        self.strict = strict
        self.provenance = provenance or Provenance()
        self.warnings = warnings if warnings is not None else []

    # -- positions ----------------------------------------------------------------------------
    def source_path(self, keypath: tuple) -> tuple:
        return self.provenance.source_of(tuple(keypath))

    def pos(self, keypath: tuple, prefer: str = "value") -> Position:
        line, col = self.smap.nearest(self.source_path(keypath), prefer=prefer)
        return Position(self.shown, line, col)

    def pos_inside(self, keypath: tuple, offset: int, prefer: str = "value") -> Position:
        """The position of character `offset` inside the string (key or value) at `keypath`,
        when the string is written without escapes; else the string's own position."""
        pos = self.pos(keypath, prefer)
        line = self.lines[pos.line - 1] if pos.line and pos.line <= len(self.lines) else ""
        at = pos.col - 1
        quote = line[at:at + 1]
        if quote in ("'", '"'):
            end = line.find(quote, at + 1)
            if end < 0 or (quote == '"' and "\\" in line[at:end]) or line.startswith(quote * 3, at):
                return pos
            return Position(pos.path, pos.line, pos.col + 1 + offset)
        return Position(pos.path, pos.line, pos.col + offset)

    def fail(self, keypath: tuple, message: str, prefer: str = "value", notes=None) -> ManifestError:
        return ManifestError(message, self.pos(keypath, prefer), notes)

    def fail_at(self, pos: Position, message: str) -> ManifestError:
        return ManifestError(message, pos)

    def warn(self, keypath: tuple, message: str, prefer: str = "key") -> None:
        line = f"{self.pos(keypath, prefer)}: warning: {message}"
        if line not in self.warnings:
            self.warnings.append(line)

    # -- keys ---------------------------------------------------------------------------------
    def check_keys(self, table: dict, keypath: tuple, known: tuple[str, ...], case: str,
                   where: str | None = None) -> None:
        """A known key in the wrong case is an error naming the right one; any other unknown
        key warns (an error under --strict)."""
        where = where or header(keypath)
        for key in table:
            if key in known:
                continue
            right = schema.did_you_mean(key, known)
            if right is not None:
                raise self.fail(keypath + (key,), f"unknown key `{key}` in {where}; did you mean `{right}`? "
                                                  f"({schema.CASE_RULE[case]})", prefer="key")
            self.unknown(keypath + (key,), f"unknown key `{key}` in {where}", known)

    def unknown(self, keypath: tuple, message: str, known: tuple[str, ...]) -> None:
        # A typo silently drops a flag, the standard or a dependency: name the key it resembles.
        near = schema.close_key(str(keypath[-1]), known) if keypath else None
        hint = f"help: did you mean `{near}`?" if near else None
        if self.strict:
            raise self.fail(keypath, f"{message} (--strict); known keys: {', '.join(known)}", prefer="key",
                            notes=[hint] if hint else None)
        self.warn(keypath, f"{message} (ignored)" + (f"\n{hint}" if hint else ""))

    # -- typed values -------------------------------------------------------------------------
    def expect(self, value: Any, kind: type, keypath: tuple) -> Any:
        if type(value) is not kind:
            raise self.fail(keypath, f"`{dotted(self.source_path(keypath))}` must be {TYPE_NAMES[kind]}, "
                                     f"found {type_name(value)}")
        return value

    def opt(self, table: dict, key: str, kind: type, keypath: tuple, default=None):
        if key not in table:
            return default
        return self.expect(table[key], kind, keypath + (key,))

    def file_name(self, name: str, keypath: tuple, what: str, prefer: str = "value") -> str:
        """A name the engine turns into a file or directory name: short enough, and one name."""
        if len(name.encode()) > MAX_NAME:
            raise self.fail(keypath, f"{what} `{name[:40]}...` is {len(name.encode())} bytes long; "
                                     f"names are at most {MAX_NAME}", prefer=prefer)
        if not name or name in (".", "..") or "/" in name or "\0" in name:
            raise self.fail(keypath, f"{what} `{name}` cannot be a file name (empty, `.`, `..`, or "
                                     f"containing `/` or a NUL byte)", prefer=prefer)
        return name

    def str_list(self, table: dict, key: str, keypath: tuple) -> tuple[str, ...] | None:
        if key not in table:
            return None
        items = self.expect(table[key], list, keypath + (key,))
        for i, item in enumerate(items):
            self.expect(item, str, keypath + (key, i))
        return tuple(items)
