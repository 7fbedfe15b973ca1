"""Human sizes and ages for `mcpp cache gc --max-size 2G --older-than 7d`.

Sizes follow ccache: `k`, `M`, `G`, `T` are decimal (powers of 1000), `Ki`, `Mi`, `Gi`, `Ti` are
binary (powers of 1024); an optional trailing `B` is allowed and a bare number is bytes. Ages are
a number with `s`, `m`, `h`, `d` or `w`; a bare number is seconds. Errors name what is accepted,
so the CLI can print them as they are.
"""
from __future__ import annotations

import re

_SIZE_UNITS = {
    "": 1,
    "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12,
    "ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40,
}
_AGE_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_NUMBER = r"\s*(\d+(?:\.\d+)?)\s*"


def parse_size(text: str) -> int:
    """`"500M"` -> 500_000_000, `"2Gi"` -> 2_147_483_648, `"10k"` -> 10_000, `"123"` -> 123."""
    m = re.fullmatch(_NUMBER + r"([kKmMgGtT]i?)?[bB]?\s*", text)
    if not m:
        raise ValueError(
            f"invalid size {text!r}: expected a number with an optional unit "
            "k, M, G, T (powers of 1000) or Ki, Mi, Gi, Ti (powers of 1024), e.g. 500M or 2G"
        )
    return int(float(m.group(1)) * _SIZE_UNITS[(m.group(2) or "").lower()])


def parse_age(text: str) -> float:
    """`"7d"` -> 604800.0, `"12h"` -> 43200.0, `"30m"` -> 1800.0, `"45"` -> 45.0 seconds."""
    m = re.fullmatch(_NUMBER + r"([smhdw]?)\s*", text)
    if not m:
        raise ValueError(
            f"invalid age {text!r}: expected a number with an optional unit "
            "s, m, h, d or w (seconds, minutes, hours, days, weeks), e.g. 7d or 12h"
        )
    return float(m.group(1)) * _AGE_UNITS[m.group(2)]


def format_size(n: int) -> str:
    """Bytes for people, binary units: `1536` -> `"1.5 KiB"`."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")
