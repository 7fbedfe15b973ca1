"""The one error type of the payload environment: a user error (exit 2), rendered by the CLI."""
from __future__ import annotations

from ..core.errors import McppError


class PayloadError(McppError):
    """An index that cannot be read, a descriptor or archive that is refused, a version that
    cannot be chosen: each names what was read (URL, file, declaration) and the way out."""
