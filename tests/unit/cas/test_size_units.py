"""Size and age parsing for `mcpp cache gc` options."""
from __future__ import annotations

import pytest

from mcpp.cas.units import format_size, parse_age, parse_size


@pytest.mark.parametrize(
    "text, value",
    [("123", 123), ("10k", 10_000), ("500M", 500_000_000), ("2G", 2_000_000_000),
     ("2Gi", 2 << 30), ("1.5MiB", 3 << 19), ("64KB", 64_000), ("1T", 10**12), (" 7 M ", 7_000_000)],
)
def test_parse_size(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize(
    "text, value",
    [("7d", 7 * 86400), ("12h", 43200), ("30m", 1800), ("45s", 45), ("90", 90), ("2w", 14 * 86400),
     ("1.5h", 5400)],
)
def test_parse_age(text, value):
    assert parse_age(text) == value


@pytest.mark.parametrize("text", ["", "M", "-1G", "5X", "1.2.3"])
def test_bad_size_names_the_accepted_units(text):
    with pytest.raises(ValueError, match="k, M, G, T"):
        parse_size(text)


@pytest.mark.parametrize("text", ["", "d", "5y", "-3h"])
def test_bad_age_names_the_accepted_units(text):
    with pytest.raises(ValueError, match="s, m, h, d or w"):
        parse_age(text)


def test_format_size():
    assert format_size(512) == "512 B"
    assert format_size(1536) == "1.5 KiB"
    assert format_size(3 << 30) == "3.0 GiB"
