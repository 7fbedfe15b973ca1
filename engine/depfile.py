"""Make-style depfiles (`-MD -MF`): which headers a compile actually read."""
from __future__ import annotations

import os


def parse_depfile(text: str) -> list[str]:
    """Prerequisites of every rule in `text`, in order, without duplicates.

    Handles `\\` line continuations, `\\ ` escaped spaces, `$$`, several rules per file, and the
    `CXX_IMPORTS += ...` style variable lines gcc writes for modules (which are not rules).
    """
    text = text.replace("\\\r\n", " ").replace("\\\n", " ")
    deps: dict[str, None] = {}
    for line in text.splitlines():
        if not line.strip() or "+=" in line.split(":", 1)[0] or line.lstrip().startswith("#"):
            continue
        colon = _rule_colon(line)
        if colon < 0:
            continue
        for word in _words(line[colon + 1:]):
            deps.setdefault(word)
    return list(deps)


def _rule_colon(line: str) -> int:
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\":
            i += 2
            continue
        # `C:\path` style drive letters never occur here; the first `: ` or trailing `:` ends targets.
        if c == ":" and (i + 1 == len(line) or line[i + 1] in " \t"):
            return i
        i += 1
    return -1


def _words(s: str) -> list[str]:
    words, cur, i = [], [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s) and s[i + 1] in " #":
            cur.append(s[i + 1])
            i += 2
            continue
        if c == "$" and i + 1 < len(s) and s[i + 1] == "$":
            cur.append("$")
            i += 2
            continue
        if c in " \t":
            if cur:
                words.append("".join(cur))
                cur = []
        else:
            cur.append(c)
        i += 1
    if cur:
        words.append("".join(cur))
    return words


def discovered_inputs(depfile_text: str, execroot: str, declared: set[str]) -> tuple[str, ...]:
    """Execroot-relative files the compile read beyond its declared inputs.

    Files outside the execroot (system headers) belong to the toolchain, whose identity is
    already in the key; module BMIs are declared inputs already.
    """
    out: dict[str, None] = {}
    for dep in parse_depfile(depfile_text):
        path = os.path.normpath(os.path.join(execroot, dep))
        rel = os.path.relpath(path, execroot)
        if rel.startswith("..") and not os.path.isabs(dep):
            pass  # a relative path that leaves the execroot still names a file we can key
        elif rel.startswith(".."):
            continue
        if rel in declared or rel.endswith((".gcm", ".pcm")) or not os.path.isfile(path):
            continue
        out.setdefault(rel)
    return tuple(sorted(out))
