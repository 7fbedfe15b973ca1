"""Make-syntax dependency files as gcc/clang write them (``-MD -MF x.d``).

The grammar is the subset compilers emit, read the way make and ninja read it:

- ``targets: deps`` per logical line; ``\\`` + newline continues a line; several rules may
  follow each other (``-MP`` adds an empty ``header.h:`` rule per header);
- a space inside a name is written ``\\ `` (2N+1 backslashes before a space stand for N
  backslashes and a space; 2N backslashes are literal and end the name), ``\\#`` is ``#``,
  ``$$`` is ``$``; any other backslash is literal;
- the separator is the first ``:`` followed by whitespace or the end of the line (so a
  ``:`` inside a dependency name stays part of it).

The common case (no escapes at all) takes a fast path of ``str.split``; a typical compile's
depfile of a hundred headers parses in tens of microseconds.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterator

_SEPARATOR = re.compile(r":(?::)?(?=\s|$)")


def parse_rules(text: str) -> list[tuple[list[str], list[str]]]:
    """Return ``[(targets, dependencies), ...]`` in file order."""
    return list(_rules(text))


def _rules(text: str, deps_only: bool = False) -> Iterator[tuple[list[str], list[str]]]:
    """`parse_rules`' rules one by one; `deps_only`: without the rules that name no dependency,
    which the plain path passes over unsplit (``-MP`` writes one per dependency, ``header.h:``:
    half the lines of a link's depfile; its one colon is its separator)."""
    joined = text.replace("\\\r\n", " ").replace("\\\n", " ")
    if "\\" in joined or "$" in joined:  # an escape to undo: names are not what `str.split` finds
        yield from (rule for rule in _parse_escaped(text) if rule[1] or not deps_only)
        return
    for line in joined.splitlines():
        if not line or (deps_only and line[-1] == ":" and line.count(":") == 1):
            continue
        m = _SEPARATOR.search(line)
        if m is None:
            targets, deps = line.split(), []
        else:
            targets, deps = line[: m.start()].split(), line[m.end():].split()
        if targets or deps:
            yield targets, deps


def read_depfile(path: str, errors: str = "surrogateescape") -> str:
    """The text of the depfile at ``path`` (UTF-8; ``errors`` as for ``bytes.decode``). Read
    through the descriptor, without a file object: every compile's depfile is read twice, by
    the sandbox's check and by the engine, and a file object adds three system calls to each
    read (a ``fstat``, a terminal test and a seek). OSError as `open` raises it (a directory:
    ``IsADirectoryError``)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", errors)


def parse_depfile(text: str) -> list[str]:
    """Every file dependency named in ``text``, each once, in order of first appearance.

    gcc's module dependency output (``-fmodules-ts -MD``) adds rules that name modules rather
    than files: ``.PHONY: foo.c++m`` and ``obj.o: foo.c++m``, where ``foo.c++m`` stands for
    "the CMI of module foo" and is never a file; those are left out.
    """
    seen: dict[str, None] = {}
    for targets, deps in _rules(text, deps_only=True):
        if targets != [".PHONY"]:
            seen.update((dep, None) for dep in deps if not dep.endswith(".c++m"))
    return list(seen)


def _parse_escaped(text: str) -> list[tuple[list[str], list[str]]]:
    rules: list[tuple[list[str], list[str]]] = []
    targets: list[str] = []
    deps: list[str] = []
    tok: list[str] = []
    in_deps = False
    n = len(text)
    i = 0

    def flush() -> None:
        if tok:
            (deps if in_deps else targets).append("".join(tok))
            tok.clear()

    while i < n:
        c = text[i]
        if c == "\\":
            j = i
            while j < n and text[j] == "\\":
                j += 1
            count = j - i
            nxt = text[j] if j < n else ""
            if nxt == "\n" or (nxt == "\r" and text[j + 1: j + 2] == "\n"):
                tok.append("\\" * (count - 1))  # continuation
                flush()
                i = j + (2 if nxt == "\r" else 1)
                continue
            if nxt in (" ", "\t", "#", ":") and count % 2 == 1:
                tok.append("\\" * (count // 2) + nxt)  # escaped character
                i = j + 1
                continue
            tok.append("\\" * count)  # literal backslashes; what follows is read normally
            i = j
            continue
        if c == "$" and text[i + 1: i + 2] == "$":
            tok.append("$")
            i += 2
            continue
        if c in " \t\r":
            flush()
            i += 1
            continue
        if c == "\n":
            flush()
            if targets or deps:
                rules.append((targets, deps))
            targets, deps, in_deps = [], [], False
            i += 1
            continue
        if c == ":" and not in_deps:
            k = i + 1
            if text[k: k + 1] == ":":
                k += 1
            if k >= n or text[k] in " \t\r\n":
                flush()
                in_deps = True
                i = k
                continue
        tok.append(c)
        i += 1
    flush()
    if targets or deps:
        rules.append((targets, deps))
    return rules
