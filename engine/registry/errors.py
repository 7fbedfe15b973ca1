"""The error of the library plane: a user error (exit 2), rendered by the CLI."""
from __future__ import annotations

from ..core.errors import McppError


class RegistryError(McppError):
    """An index, a lockfile, a cache entry or a vendor directory that cannot be used, or a
    requirement no release meets: each names what was read and the way out."""
