"""Target triples: what `x86_64-linux-gnu` says about os, arch, env and family.

A selector `[target.<triple>]` and `--target` both name a triple; `cfg(...)` predicates are
answered from the same four facts. The accepted words live in the tables below and every
message about a triple or a `cfg` value is built from them, so adding an architecture here is
the whole change: the message follows the value.

Two spellings of one target (`x86_64-linux-gnu`, `x86_64-unknown-linux-gnu`) compare equal:
a triple is compared by its facts, never by its text.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass

# The values each `cfg` predicate accepts (docs/manifest.md, "Selectors").
ARCHES = ("x86_64", "i686", "aarch64", "arm", "riscv64", "loongarch64")
OSES = ("linux", "macos", "windows")
ENVS = ("gnu", "musl", "msvc")
FAMILIES = ("unix", "windows")

# The os word of a triple -> (os, the env it implies when the triple names none).
_TRIPLE_OS = {"linux": ("linux", ""), "darwin": ("macos", ""), "macos": ("macos", ""),
              "windows": ("windows", ""), "mingw32": ("windows", "gnu")}
_VENDORS = ("unknown", "pc", "apple", "w64")
# ABI suffixes that name an env plus a calling convention (arm-linux-gnueabihf).
_ENV_SPELLINGS = {"gnu": "gnu", "gnueabi": "gnu", "gnueabihf": "gnu", "musl": "musl",
                  "musleabi": "musl", "musleabihf": "musl", "msvc": "msvc"}
_FAMILY = {"linux": "unix", "macos": "unix", "windows": "windows"}


@dataclass(frozen=True)
class Triple:
    """A parsed target triple; `text` is the spelling it was read from."""

    text: str
    arch: str
    os: str
    env: str  # "" when the triple names none (x86_64-apple-darwin)

    @property
    def family(self) -> str:
        return _FAMILY[self.os]

    def facts(self) -> dict[str, str]:
        """The answers `cfg(os/arch/env/family = ...)` read."""
        return {"os": self.os, "arch": self.arch, "env": self.env, "family": self.family}

    def same_target(self, other: "Triple") -> bool:
        return (self.arch, self.os, self.env) == (other.arch, other.os, other.env)


class TripleError(ValueError):
    """`offset` is where in the text the problem starts."""

    def __init__(self, message: str, offset: int = 0):
        super().__init__(message)
        self.offset = offset


def expected_triple() -> str:
    """What a triple looks like, from the tables above (used in every message about one)."""
    return (f"a target triple such as `x86_64-linux-gnu` (arch-[vendor-]os[-env]; "
            f"arch: {', '.join(ARCHES)}; os: {', '.join(_TRIPLE_OS)}; env: {', '.join(ENVS)})")


def parse_triple(text: str) -> Triple:
    parts = text.split("-")
    if len(parts) < 2 or any(not p for p in parts):
        raise TripleError(f"`{text}` is not {expected_triple()}")
    arch, rest = parts[0], parts[1:]
    if arch not in ARCHES:
        raise TripleError(f"unknown arch `{arch}` in `{text}`; accepted values: {', '.join(ARCHES)}")
    offset = len(arch) + 1
    if rest[0] in _VENDORS and len(rest) > 1:
        offset += len(rest[0]) + 1
        rest = rest[1:]
    os_word, env_words = rest[0], rest[1:]
    if os_word not in _TRIPLE_OS:
        raise TripleError(f"unknown os `{os_word}` in `{text}`; accepted values: {', '.join(_TRIPLE_OS)}", offset)
    os_name, env = _TRIPLE_OS[os_word]
    if env_words:
        offset += len(os_word) + 1
        if len(env_words) > 1 or env_words[0] not in _ENV_SPELLINGS:
            raise TripleError(f"unknown env `{'-'.join(env_words)}` in `{text}`; "
                              f"accepted values: {', '.join(ENVS)}", offset)
        env = _ENV_SPELLINGS[env_words[0]]
    return Triple(text, arch, os_name, env)


def host_triple() -> Triple:
    """The machine this engine runs on, as `gcc -dumpmachine` spells it on Debian. (From
    `os.uname`: the `platform` module costs a first build ~2 ms of import before its first compile.)"""
    if sys.platform == "win32":
        import platform

        machine = platform.machine().lower()
    else:
        machine = os.uname().machine.lower()
    arch = {"amd64": "x86_64", "arm64": "aarch64", "i386": "i686"}.get(machine, machine)
    if sys.platform == "darwin":
        return Triple(f"{arch}-apple-darwin", arch, "macos", "")
    if sys.platform == "win32":
        return Triple(f"{arch}-pc-windows-msvc", arch, "windows", "msvc")
    return Triple(f"{arch}-linux-gnu", arch, "linux", "gnu")
