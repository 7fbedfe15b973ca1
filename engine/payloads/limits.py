"""How much one payload archive may unpack to.

A small archive can unpack to an arbitrary amount (a member of zeros compresses a thousandfold
and more), so the bytes and members an archive yields are bounded while it is unpacked:

- bytes: the descriptor's `unpacked-size` when it states one, else `DEFAULT_MAX_BYTES`;
  `MCPP_PAYLOAD_MAX_UNPACKED` (a size: `8G`, `512Mi`, bytes), when set, is the user's ceiling
  over both, and replaces the default for descriptors that state none;
- members (files, directories, links): `DEFAULT_MAX_MEMBERS`, or `MCPP_PAYLOAD_MAX_MEMBERS`.

Each bound carries the words that name where it came from, for the error that reports it.
"""
from __future__ import annotations

from typing import Mapping

from mcpp.cas.units import parse_size

from .descriptor import Source
from .errors import PayloadError
from .tree import Limits

DEFAULT_MAX_BYTES = 4 * 2**30
DEFAULT_MAX_MEMBERS = 250_000
ENV_BYTES = "MCPP_PAYLOAD_MAX_UNPACKED"
ENV_MEMBERS = "MCPP_PAYLOAD_MAX_MEMBERS"


def _env(environ: Mapping[str, str], key: str) -> int | None:
    text = environ.get(key, "").strip()
    if not text:
        return None
    try:
        return parse_size(text)
    except ValueError as e:
        raise PayloadError(f"{key}: {e}") from None


def limits_for(source: Source, environ: Mapping[str, str]) -> Limits:
    """The limits of unpacking `source` (an archive) under `environ`."""
    ceiling = _env(environ, ENV_BYTES)
    stated = source.unpacked_size
    if ceiling is not None and (stated is None or ceiling < stated):
        max_bytes, origin = ceiling, f"the limit set by {ENV_BYTES}"
    elif stated is not None:
        max_bytes, origin = stated, "the descriptor's `unpacked-size`"
    else:
        max_bytes = DEFAULT_MAX_BYTES
        origin = (f"the default limit for a payload whose descriptor states no `unpacked-size` "
                  f"(set one, or raise {ENV_BYTES})")
    members = _env(environ, ENV_MEMBERS)
    if members is None:
        return Limits(max_bytes, origin, DEFAULT_MAX_MEMBERS, f"the default limit (raise it with {ENV_MEMBERS})")
    return Limits(max_bytes, origin, members, f"the limit set by {ENV_MEMBERS}")
