"""User-facing errors. One type carries the position; the CLI renders it; nothing below prints.

Exit codes: 1 for a build, test or run failure, 2 for usage, manifest and build-program errors,
so a script can tell "the input is wrong" from "the build failed".
"""
from __future__ import annotations

from dataclasses import dataclass

EXIT_BUILD_FAILED = 1
EXIT_USER_ERROR = 2


@dataclass
class Position:
    path: str
    line: int | None = None  # 1-based
    col: int | None = None  # 1-based

    def __str__(self) -> str:
        if self.line is None:
            return self.path
        if self.col is None:
            return f"{self.path}:{self.line}"
        return f"{self.path}:{self.line}:{self.col}"


class McppError(Exception):
    """An error the user can act on. Rendered as `[pos: ]error: message` plus notes."""

    exit_code = EXIT_USER_ERROR

    def __init__(self, message: str, pos: Position | None = None, notes: list[str] | None = None):
        super().__init__(message)
        self.message = message
        self.pos = pos
        self.notes = notes or []

    def render(self) -> str:
        head = f"{self.pos}: error: {self.message}" if self.pos else f"error: {self.message}"
        return "\n".join([head, *self.notes])


class ManifestError(McppError):
    """A malformed or invalid mcpp.toml (exit 2)."""


class ScanError(McppError):
    """A source file the module scanner refuses (exit 2)."""


class BuildFailed(McppError):
    """An action failed; its diagnostics were already shown (exit 1)."""

    exit_code = EXIT_BUILD_FAILED
