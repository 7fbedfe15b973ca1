"""The build's accelerator set: `[build] accel`, `--accel` and `--no-accel`
(docs/manifest.md, `[build]`).

`accel = "cuda12.9+{sm_89} ptx>=89, vulkan1.2"` names a *set* of backend entries: a comma
separates entries, a space separates modifiers inside one entry (commas inside `{...}` belong to
the architecture set). The engine holds the shape and the comparison, never a list of who
exists: `cuda`, `hip`, `sycl`, `vulkan` are an open vocabulary, so a sixth backend is a package,
not an engine change. `cfg(accelerator = "x")` is membership by backend name, and
`accelerator = "none"` holds exactly when the set is empty.
"""
from __future__ import annotations

from dataclasses import dataclass

from .lazy_re import lazy_compile

# The one word of the accelerator vocabulary that is not a backend name: the empty set.
NONE = "none"
# Modifier spellings of the portable-form floor: `floor>=` is backend-neutral, `ptx>=` CUDA's.
FLOOR_SPELLINGS = ("floor", "ptx")

_HEAD = lazy_compile(r"(?P<name>[A-Za-z][A-Za-z_]*)(?P<version>\d[0-9A-Za-z.]*)?(?:\+\{(?P<archs>[^{}]*)\})?$")
_MODIFIER = lazy_compile(r"(?P<kind>[A-Za-z]+)>=(?P<value>\S+)$")
BACKEND_NAME = lazy_compile(r"[a-z][a-z_]*$")


@dataclass(frozen=True)
class AccelEntry:
    """One accelerator backend of an `accel` list, with its version constraint."""
    name: str  # the backend, compared by `cfg(accelerator = ...)`
    version: str = ""
    archs: tuple[str, ...] = ()
    floor: str = ""  # portable-form floor (ptx>= / floor>=)
    text: str = ""  # as written

    def __str__(self) -> str:
        return self.text or self.name


@dataclass(frozen=True)
class AccelSet:
    """The accelerator backends a build targets (`accel`), in order."""
    entries: tuple[AccelEntry, ...] = ()

    @property
    def names(self) -> frozenset[str]:
        return frozenset(e.name for e in self.entries)

    def has(self, backend: str) -> bool:
        """`cfg(accelerator = backend)`: membership; `none` is the empty set."""
        return not self.entries if backend == NONE else backend in self.names

    def __str__(self) -> str:
        return ", ".join(str(e) for e in self.entries) if self.entries else NONE


class AccelSyntaxError(ValueError):
    def __init__(self, message: str, offset: int = 0):
        super().__init__(message)
        self.offset = offset


_SHAPE = "`<backend><version>[+{arch,...}] [floor>=<v>]`, entries separated by commas"


def _split_entries(text: str) -> list[tuple[str, int]]:
    """Split at commas outside braces; each piece with its offset in `text`."""
    pieces, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "," and depth == 0:
            pieces.append((text[start:i], start))
            start = i + 1
    pieces.append((text[start:], start))
    return pieces


def parse_accel(text: str) -> AccelSet:
    """Parse an accel spec; an empty string is the empty set."""
    if not text.strip():
        return AccelSet()
    entries: list[AccelEntry] = []
    for piece, at in _split_entries(text):
        stripped = piece.strip()
        at += len(piece) - len(piece.lstrip())
        if not stripped:
            raise AccelSyntaxError(f"empty accelerator entry; expected {_SHAPE}", at)
        words = stripped.split()
        m = _HEAD.match(words[0])
        if not m:
            raise AccelSyntaxError(f"malformed accelerator entry `{words[0]}`; expected {_SHAPE}", at)
        floor = ""
        offset = at + len(words[0])
        for word in words[1:]:
            offset = text.index(word, offset)
            mod = _MODIFIER.match(word)
            if not mod or mod["kind"] not in FLOOR_SPELLINGS:
                raise AccelSyntaxError(f"unknown accelerator modifier `{word}`; accepted: "
                                       + ", ".join(f"{k}>=<version>" for k in FLOOR_SPELLINGS), offset)
            floor = mod["value"]
        archs = tuple(a.strip() for a in m["archs"].split(",")) if m["archs"] is not None else ()
        if any(not a for a in archs):
            raise AccelSyntaxError(f"empty architecture in `{words[0]}`", at)
        name = m["name"].lower()
        if name == NONE:
            raise AccelSyntaxError("`none` is not a backend: it is the empty set (write no accel, or --no-accel)", at)
        if name in {e.name for e in entries}:
            raise AccelSyntaxError(f"backend `{name}` is named twice; one entry per backend", at)
        entries.append(AccelEntry(name, m["version"] or "", archs, floor, stripped))
    return AccelSet(tuple(entries))
