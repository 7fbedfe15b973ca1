"""Source positions for TOML documents.

``tomllib`` turns TOML text into plain dicts and lists and keeps no record of
where each key or value came from. Manifest diagnostics must read
``path:line:col: error: ...`` and point at the offending key or value, so this
module scans the text once more and records, for every key path, where its key
and its value start.

The text is assumed to have been accepted by ``tomllib.loads`` already: the
scanner only finds where things are and does not validate. On text that is not
valid TOML it may raise ``ValueError`` or produce a partial map.

Paths use the same shape as the ``tomllib`` result: strings for table keys,
ints for array indices (both inline array elements and ``[[x]]`` entries,
counted from 0). Positions are 1-based ``(line, col)``; columns count Unicode
code points, and a CRLF ends a line like a LF does.

Where positions point:

* ``key = value``: the key's first character and the value's first character.
  For a dotted key ``a.b = 1`` the full path's key is the last segment ``b``;
  each prefix gets its own segment as both key and value (if not yet known).
* ``[a.b.c]``: key and value of ``("a", "b", "c")`` are the segment ``c``; the
  implicit tables ``("a",)`` and ``("a", "b")`` get their segments in the first
  header or dotted key mentioning them, until a header defines them explicitly.
* ``[[a]]``: ``("a", n)`` is the segment ``a`` of the n-th header; ``("a",)``
  is the segment ``a`` of the first one.
* array elements: key and value are both the element's first character.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import NoReturn

from ..core.lazy_re import lazy_compile

PathElem = str | int
KeyPath = tuple[PathElem, ...]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
# Numbers, booleans, inf/nan and date-times. The first alternative admits the
# space that may separate a date from its time (`1979-05-27 07:32:00Z`).
_SCALAR = lazy_compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:[0-9:.]*(?:[Zz]|[+-]\d{2}:\d{2})?"
    r"|[0-9A-Za-z_+\-.:]+"
)
_ESCAPE = lazy_compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|x([0-9A-Fa-f]{2})|(.))", re.S)
_SIMPLE_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", "e": "\x1b"}


@dataclass(frozen=True)
class Span:
    """1-based positions of a path's key and of its value."""

    key_line: int
    key_col: int
    value_line: int
    value_col: int


def _unescape(raw: str) -> str:
    """Decode the escapes of a single-line basic string's body."""

    def sub(m: re.Match[str]) -> str:
        digits = m.group(1) or m.group(2) or m.group(3)
        if digits:
            return chr(int(digits, 16))
        return _SIMPLE_ESCAPES.get(m.group(4), m.group(4))

    return _ESCAPE.sub(sub, raw)


class TooDeep(ValueError):
    """A key path longer than the scanner's limit; ``line``/``col`` is where it first is."""

    def __init__(self, line: int, col: int):
        super().__init__(f"{line}:{col}: nested too deeply")
        self.line, self.col = line, col


class _TomlKeyScanner:
    """One pass over the text; fills ``spans`` in source order."""

    def __init__(self, text: str, max_depth: int | None = None):
        self.text = text
        self.max_depth = max_depth
        self.i = 0
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.spans: dict[KeyPath, Span] = {}
        self.implicit: set[KeyPath] = set()  # recorded from a mention, not a definition
        self.aot_len: dict[KeyPath, int] = {}  # array-of-tables path -> entries so far

    # -- helpers -----------------------------------------------------------

    def where(self, i: int) -> tuple[int, int]:
        line = bisect_right(self.line_starts, i)
        return line, i - self.line_starts[line - 1] + 1

    def fail(self, what: str) -> NoReturn:
        line, col = self.where(self.i)
        raise ValueError(f"{line}:{col}: {what} (is this valid TOML?)")

    def peek(self) -> str:
        return self.text[self.i : self.i + 1]

    def skip_ws(self) -> None:
        while self.peek() in (" ", "\t"):
            self.i += 1

    def skip_trivia(self) -> None:
        """Skip whitespace, comments and newlines."""
        while True:
            self.skip_ws()
            c = self.peek()
            if c == "#":
                end = self.text.find("\n", self.i)
                self.i = len(self.text) if end < 0 else end
            elif c in ("\n", "\r"):
                self.i += 1
            else:
                return

    def record(self, path: KeyPath, key_at: int, value_at: int, implicit: bool = False) -> None:
        if self.max_depth is not None and len(path) > self.max_depth:
            raise TooDeep(*self.where(key_at))
        if implicit:
            if path in self.spans:
                return
            self.implicit.add(path)
        else:
            self.implicit.discard(path)
        self.spans[path] = Span(*self.where(key_at), *self.where(value_at))

    # -- strings and keys --------------------------------------------------

    def string_end(self, i: int) -> int:
        """Index just past the string literal starting at ``i``."""
        text = self.text
        quote = text[i]
        basic = quote == '"'
        if text.startswith(quote * 3, i):
            j = i + 3
            while j < len(text):
                if basic and text[j] == "\\":
                    j += 2
                elif text.startswith(quote * 3, j):
                    end = j + 3
                    # Up to two quotes right before the delimiter belong to the body.
                    while end < len(text) and end - j < 5 and text[end] == quote:
                        end += 1
                    return end
                else:
                    j += 1
            self.fail("unterminated multi-line string")
        j = i + 1
        while j < len(text) and text[j] != quote:
            j += 2 if basic and text[j] == "\\" else 1
        if j >= len(text):
            self.fail("unterminated string")
        return j + 1

    def key(self) -> list[tuple[str, int]]:
        """Parse a (possibly dotted) key: ``[(segment, start index), ...]``."""
        parts = []
        while True:
            self.skip_ws()
            at = self.i
            c = self.peek()
            if c in ('"', "'"):
                self.i = self.string_end(at)
                body = self.text[at + 1 : self.i - 1]
                name = _unescape(body) if c == '"' else body
            else:
                m = _BARE_KEY.match(self.text, at)
                if not m:
                    self.fail("expected a key")
                name, self.i = m.group(), m.end()
            parts.append((name, at))
            self.skip_ws()
            if self.peek() != ".":
                return parts
            self.i += 1

    # -- document structure ------------------------------------------------

    def run(self) -> dict[KeyPath, Span]:
        table: KeyPath = ()
        while True:
            self.skip_trivia()
            if self.i >= len(self.text):
                return self.spans
            if self.peek() == "[":
                table = self.header()
            else:
                self.keyval(table)

    def header(self) -> KeyPath:
        """``[a.b]`` or ``[[a.b]]``; returns the path of the table it opens."""
        is_aot = self.text.startswith("[[", self.i)
        self.i += 2 if is_aot else 1
        parts = self.key()
        close = "]]" if is_aot else "]"
        if not self.text.startswith(close, self.i):
            self.fail(f"expected {close!r}")
        self.i += len(close)
        path: KeyPath = ()
        for n, (name, at) in enumerate(parts):
            path += (name,)
            last = n == len(parts) - 1
            if last and not is_aot:
                self.record(path, at, at)
                continue
            self.record(path, at, at, implicit=True)
            if last:  # a new [[...]] entry
                index = self.aot_len.get(path, 0)
                self.aot_len[path] = index + 1
                path += (index,)
                self.record(path, at, at)
            elif path in self.aot_len:  # [a.b] under [[a]]: the last entry of a
                path += (self.aot_len[path] - 1,)
        return path

    def keyval(self, table: KeyPath) -> None:
        parts = self.key()
        if self.peek() != "=":
            self.fail("expected '='")
        self.i += 1
        self.skip_ws()
        path = table
        for name, at in parts[:-1]:
            path += (name,)
            self.record(path, at, at, implicit=True)
        name, at = parts[-1]
        path += (name,)
        self.record(path, at, self.i)
        self.value(path)

    def value(self, path: KeyPath) -> None:
        c = self.peek()
        if c in ('"', "'"):
            self.i = self.string_end(self.i)
        elif c == "[":
            self.array(path)
        elif c == "{":
            self.inline_table(path)
        else:
            m = _SCALAR.match(self.text, self.i)
            if not m:
                self.fail("expected a value")
            self.i = m.end()

    def array(self, path: KeyPath) -> None:
        self.i += 1
        index = 0
        while True:
            self.skip_trivia()
            if self.peek() == "]":
                self.i += 1
                return
            elem = path + (index,)
            self.record(elem, self.i, self.i)
            self.value(elem)
            index += 1
            self.skip_trivia()
            if self.peek() == ",":
                self.i += 1
            elif self.peek() != "]":
                self.fail("expected ',' or ']'")

    def inline_table(self, path: KeyPath) -> None:
        self.i += 1
        while True:
            self.skip_trivia()  # lenient: TOML 1.1 allows newlines in inline tables
            if self.peek() == "}":
                self.i += 1
                return
            self.keyval(path)
            self.skip_trivia()
            if self.peek() == ",":
                self.i += 1
            elif self.peek() != "}":
                self.fail("expected ',' or '}'")


def too_deep_at(text: str, max_depth: int) -> tuple[int, int] | None:
    """Where the first key path longer than ``max_depth`` starts (tables, dotted keys, inline
    tables and arrays all add to a path), or None. Bounded, so it never recurses deeply itself."""
    try:
        _TomlKeyScanner(text, max_depth).run()
    except TooDeep as e:
        return e.line, e.col
    except ValueError:
        return None
    return None


class SourceMap:
    """Key paths of a TOML document mapped to the positions of their keys and values."""

    def __init__(self, text: str):
        self._spans = _TomlKeyScanner(text).run()

    def key(self, path: tuple[PathElem, ...]) -> tuple[int, int] | None:
        span = self._spans.get(tuple(path))
        return None if span is None else (span.key_line, span.key_col)

    def value(self, path: tuple[PathElem, ...]) -> tuple[int, int] | None:
        span = self._spans.get(tuple(path))
        return None if span is None else (span.value_line, span.value_col)

    def nearest(self, path: tuple[PathElem, ...], prefer: str = "value") -> tuple[int, int]:
        """Position of ``path``, else of its longest known ancestor, else ``(1, 1)``."""
        if prefer not in ("value", "key"):
            raise ValueError(f"prefer must be 'value' or 'key', not {prefer!r}")
        path = tuple(path)
        for n in range(len(path), 0, -1):
            span = self._spans.get(path[:n])
            if span is not None:
                if prefer == "value":
                    return span.value_line, span.value_col
                return span.key_line, span.key_col
        return 1, 1

    def paths(self) -> list[KeyPath]:
        """Every known path, in source order of their key positions."""
        return sorted(self._spans, key=lambda p: (self._spans[p].key_line, self._spans[p].key_col))
