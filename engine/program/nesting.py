"""How deeply a Starlark file nests, bounded before starlark-rust sees it, and the stack it runs on.

starlark-rust parses, compiles, evaluates and frees a program by recursion over its syntax tree,
on the native stack of the thread that calls it. A file nested deeply enough (`[1][0][0]...`,
`-(-(-...`, `1 + 1 + ... + 1`, `lambda: lambda: ...`, a long `elif` chain) overflows that stack,
and the process dies with SIGSEGV: there is no exception to catch, in the engine or in a
server's build child. Two measures make that impossible:

- `check(text, shown)` scans the file once (linear, no parse) for an upper bound of its syntax
  tree's depth and refuses it past `MAX_DEPTH` levels with `file:line:col` of the first token
  past the limit. Every level of the tree takes a token of its own that is not a name, number
  or string (an operator, a bracket, a dot, `:`, a keyword such as `not`, `lambda`, `if`), or an
  indented block, or an `elif` of a chain (whose `if`s nest). So the bound adds, over the open
  brackets, such tokens since the last `,` at each bracket level (a sibling starts a subtree of
  its own), plus the open indented blocks and the `elif`s of each open chain. A real program
  stays far below it (a few dozen); a machine-made one that does not fit is refused, not run.
- `on_big_stack(fn)` runs the parser and the evaluator on a thread with a `STACK_BYTES` stack,
  which holds `MAX_DEPTH` levels of the costliest construct many times over, so the bound
  holds whatever stack the host gives its main thread (`ulimit -s`).
"""
from __future__ import annotations

import threading
from typing import Callable, TypeVar

from ..core.errors import McppError, Position

# Far above any program written by hand; far below what STACK_BYTES can hold (a level of the
# costliest construct takes a few KiB of native stack).
MAX_DEPTH = 1000
STACK_BYTES = 256 * 1024 * 1024

# Keywords that make a node of their own; other names are leaves.
_KEYWORDS = frozenset(("and", "or", "not", "in", "if", "else", "for", "lambda"))
_OPEN, _CLOSE = "([{", ")]}"
_NAME_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_NAME_CHAR = _NAME_START | frozenset("0123456789")
_NUMBER_CHAR = _NAME_CHAR | frozenset(".")
_STRING_PREFIX = frozenset(("r", "b", "rb", "br", "R", "B", "Rb", "bR", "RB", "BR", "rB", "Br"))

T = TypeVar("T")


def check(text: str, shown: str) -> None:
    """Refuse `text` (the file `shown`) when its syntax tree may nest deeper than MAX_DEPTH."""
    n = len(text)
    i = 0
    line, line_start = 1, 0
    brackets: list[int] = [0]  # per open bracket (and the statement level): counted tokens since `,`
    depth = 0  # sum(brackets)
    indents = [0]  # widths of the open indented blocks
    elifs = [0]  # per open block: the `elif`s of the chain at that level
    blocks = 0  # len(indents) - 1 + sum(elifs)
    at_line_start = True

    def refuse(col_at: int):
        raise McppError(f"the program nests deeper than {MAX_DEPTH} levels (brackets, operators and indented "
                        f"blocks together); split the expression or the data into named parts",
                        Position(shown, line, col_at - line_start + 1))

    def count(at: int) -> None:
        nonlocal depth
        brackets[-1] += 1
        depth += 1
        if depth + blocks > MAX_DEPTH:
            refuse(at)

    while i < n:
        c = text[i]
        if at_line_start and len(brackets) == 1:
            # The indentation of a logical line (blank and comment lines have none).
            j = i
            while j < n and text[j] in " \t\f":
                j += 1
            if j >= n or text[j] in "#\r\n":
                i = j
                at_line_start = False
                continue
            width = j - i
            while width < indents[-1]:
                indents.pop()
                blocks -= 1 + elifs.pop()
            if width > indents[-1]:
                indents.append(width)
                elifs.append(0)
                blocks += 1
            word_end = j
            while word_end < n and text[word_end] in _NAME_CHAR:
                word_end += 1
            word = text[j:word_end]
            if word == "elif":
                elifs[-1] += 1
                blocks += 1
            elif word != "else":
                blocks -= elifs[-1]
                elifs[-1] = 0
            if blocks + depth > MAX_DEPTH:
                refuse(j)
            i = j
            at_line_start = False
            continue
        if c == "\n":
            line += 1
            line_start = i + 1
            i += 1
            if len(brackets) == 1:  # a logical line ends: the next statement starts afresh
                depth -= brackets[0]
                brackets[0] = 0
                at_line_start = True
            continue
        if c in " \t\f\r":
            i += 1
            continue
        if c == "#":
            while i < n and text[i] != "\n":
                i += 1
            continue
        if c == "\\" and i + 1 < n and text[i + 1] == "\n":  # a continued line
            i += 2
            line += 1
            line_start = i
            continue
        if c in "'\"":
            i, line, line_start = _skip_string(text, i, line, line_start)
            continue
        if c in _NAME_START:
            j = i
            while j < n and text[j] in _NAME_CHAR:
                j += 1
            word = text[i:j]
            if j < n and text[j] in "'\"" and word in _STRING_PREFIX:
                i, line, line_start = _skip_string(text, j, line, line_start)
                continue
            if word in _KEYWORDS:
                count(i)
            i = j
            continue
        if c.isdigit():
            while i < n and text[i] in _NUMBER_CHAR:
                i += 1
            continue
        if c == ",":
            depth -= brackets[-1]
            brackets[-1] = 0
        elif c == ";" and len(brackets) == 1:
            depth -= brackets[0]
            brackets[0] = 0
        elif c in _OPEN:
            count(i)
            brackets.append(0)
        elif c in _CLOSE:
            if len(brackets) > 1:
                depth -= brackets.pop()
        else:
            count(i)
        i += 1


def _skip_string(text: str, i: int, line: int, line_start: int) -> tuple[int, int, int]:
    """Past the string literal whose quote is at `i` (a backslash escapes the next character,
    raw or not); an unterminated one ends at its line (the parser reports it)."""
    n = len(text)
    quote = text[i]
    triple = text.startswith(quote * 3, i)
    i += 3 if triple else 1
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n:
            if text[i + 1] == "\n":
                line += 1
                line_start = i + 2
            i += 2
            continue
        if c == "\n":
            if not triple:
                return i, line, line_start
            line += 1
            line_start = i + 1
        elif c == quote and (not triple or text.startswith(quote * 3, i)):
            return i + (3 if triple else 1), line, line_start
        i += 1
    return i, line, line_start


_THREAD_NAME = "mcpp-starlark"


def on_big_stack(fn: Callable[[], T]) -> T:
    """`fn()` on a thread with a STACK_BYTES stack (reserved address space, touched only as deep as
    it recurses), or right here when this is such a thread already; its exception, BaseException
    included, is raised here."""
    if threading.current_thread().name == _THREAD_NAME:
        return fn()
    result: list = []

    def run() -> None:
        try:
            result.append((True, fn()))
        except BaseException as e:  # noqa: BLE001 - handed to the caller as it is
            result.append((False, e))

    previous = threading.stack_size(STACK_BYTES)
    try:
        # A daemon: Ctrl-C during `join` ends the engine without waiting for the parser.
        thread = threading.Thread(target=run, name=_THREAD_NAME, daemon=True)
        thread.start()
    finally:
        threading.stack_size(previous)
    thread.join()
    ok, value = result[0]
    if ok:
        return value
    raise value
