"""Reading one `mcpp.toml`: parse and validate every section (conditional ones included), before
it is folded for a build context (fold.py) into the `Manifest` the rest of the engine reads.

`parse_manifest` validates the whole file once, whatever the build context: the unconditional
sections through `Builder`, every `[target.<selector>]` block through `conditions`. `fold`
(fold.py, which also has `read_manifest`: parse and fold in one call) then builds the effective document for one context and reads it with the same
`Builder`, so the planner, `mcpp run`, `mcpp test` and `mcpp metadata` all see one manifest.
Paths in a manifest are relative to the manifest's directory, never to the working directory.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field

from . import conditions, schema
from ..core.errors import ManifestError, Position
from .builder import Builder
from .context import host_context
from .deps import MANIFEST_NAME, check_dependency_path
from .model import Manifest
from .reader import Reader, check_limits, display_path
from .toml_positions import SourceMap

__all__ = ["MANIFEST_NAME", "ManifestSource", "check_dependency_path", "display_path", "parse_manifest"]


@dataclass
class ManifestSource:
    """One validated manifest file before folding."""

    path: str
    text: str
    doc: dict
    smap: SourceMap
    strict: bool
    base: Manifest  # the unconditional sections alone
    blocks: list[conditions.Block] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def root(self) -> str:
        return self.base.root


def read_toml(path: str) -> tuple[str, dict]:
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise ManifestError(f"cannot read manifest: {e.strerror}", Position(display_path(path)))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ManifestError("manifest is not valid UTF-8", Position(display_path(path), 1, e.start + 1))
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise _toml_error(path, text, e) from None
    except RecursionError:
        doc = None
    check_limits(path, text, doc)
    return text, doc


def _toml_error(path: str, text: str, e: "tomllib.TOMLDecodeError") -> ManifestError:
    # tomllib reports "... (at line L, column C)"; move the position in front, compiler-style.
    msg = str(e)
    m = re.search(r"\s*\(at line (\d+), column (\d+)\)$", msg)
    if m:
        line, col = int(m.group(1)), int(m.group(2))
        return ManifestError(f"malformed TOML: {msg[:m.start()]}", Position(display_path(path), line, col),
                             _gate_note(msg) + _wrapped_table_note(path, text, line, col))
    m = re.search(r"\s*\(at end of document\)$", msg)
    return ManifestError(f"malformed TOML: {msg[:m.start()] if m else msg}", _end_of(path, text))


def _wrapped_table_note(path: str, text: str, line: int, col: int) -> list[str]:
    """An inline table (`z = { path = "..",` with its rest on the next line) must be on one line
    in TOML 1.0: when the error is a line break inside a `{` still open, say so and where."""
    rows = text.split("\n")
    row = rows[line - 1] if 0 < line <= len(rows) else ""
    opened = _open_brace(rows[:line - 1] + [row[:col - 1]])
    if opened is None or (opened[0] == line and col <= len(row.rstrip())):
        return []
    where = Position(display_path(path), opened[0], opened[1])
    return [f"{where}: note: this inline table `{{ ... }}` continues on another line; TOML keeps an inline table "
            f"on one line: join its lines, or write it as a [section.name] table"]


def _open_brace(rows: list[str]) -> tuple[int, int] | None:
    """(line, column) of the innermost `{` still open at the end of `rows` (strings and comments
    skipped), or None."""
    stack: list[tuple[int, int]] = []
    quote = ""
    for n, row in enumerate(rows, start=1):
        i = 0
        while i < len(row):
            c = row[i]
            if quote:
                if row.startswith(quote, i):
                    i += len(quote) - 1
                    quote = ""
                elif c == "\\" and quote[0] == '"':
                    i += 1
            elif row.startswith(('"""', "'''"), i):
                quote = row[i:i + 3]
                i += 2
            elif c in "\"'":
                quote = c
            elif c == "#":
                break
            elif c == "{":
                stack.append((n, i + 1))
            elif c == "}" and stack:
                stack.pop()
            i += 1
        if len(quote) == 1:  # a one-line string does not continue
            quote = ""
    return stack[-1] if stack else None


def _end_of(path: str, text: str) -> Position:
    lines = text.rstrip("\n").split("\n")
    return Position(display_path(path), len(lines), len(lines[-1]) + 1)


def _gate_note(msg: str) -> list[str]:
    """`[features.gpu.deps]` after `gpu = { ... }` is a TOML error; say why, and the spelling."""
    m = re.search(r"Cannot declare \('features', '([^']+)', '([^']+)'\)", msg)
    gate = schema.GATE_SPELLINGS.get(m.group(2)) if m else None
    if gate is None:
        return []
    return [f"note: TOML cannot extend an inline table, so a feature's {m.group(2)} cannot be a sub-table of "
            f"[features.{m.group(1)}]; write [{gate}.{m.group(1)}]"]


def parse_manifest(path: str, strict: bool = False) -> ManifestSource:
    """Parse and validate the manifest at `path` (absolute), every conditional block included."""
    text, doc = read_toml(path)
    smap = SourceMap(text)
    warnings: list[str] = []
    r = Reader(path, text, smap, strict=strict, warnings=warnings)
    unconditional = {k: v for k, v in doc.items() if k != "target"}
    try:
        builder = Builder(r, unconditional, host_os=host_context().host.os)
        base = builder.build()
        blocks = conditions.read_blocks(r, doc, base.features, builder.read_build, builder.read_runtime,
                                        host_os=host_context().host.os)
    except ManifestError as e:
        # A misspelled `versoin` is the cause of "missing `package.version`": keep its warning.
        e.warnings = [w for w in warnings if w not in e.warnings]
        raise
    if base.is_virtual and blocks:
        raise r.fail(("target",), "a virtual workspace builds nothing of its own, so it has no [target.<selector>] "
                                  "sections; put them in the members' manifests", prefer="key")
    return ManifestSource(path, text, doc, smap, strict, base, blocks, warnings)
