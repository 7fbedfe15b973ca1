"""Payload versions: bare versions are pins, operator forms requirements, any length of numbers."""
from __future__ import annotations

import pytest

from mcpp.engine.payloads import version as v


@pytest.mark.parametrize("req, yes, no", [
    ("", ["0.1", "2099.1"], []),
    ("2.0.0", ["2.0.0", "2.0"], ["2.0.1", "1.9"]),
    (">=2026.1", ["2026.1", "2026.9.6.4"], ["2025.12.31"]),
    ("^1.2", ["1.2.0", "1.9"], ["2.0", "1.1.9"]),
    ("^0.3", ["0.3.5"], ["0.4.0"]),
    ("~1.2.3", ["1.2.3", "1.2.9"], ["1.3.0", "1.2.2"]),
    (">=1.0, <2", ["1.0", "1.99"], ["2.0", "0.9"]),
])
def test_requirements(req, yes, no):
    r = v.parse(req)
    assert not isinstance(r, str)
    assert all(r.allows(x) for x in yes) and not any(r.allows(x) for x in no)


def test_kinds_and_a_malformed_requirement():
    assert v.parse("").kind == "any" and v.parse("13.0.88").kind == "pin" and v.parse(">=1").kind == "range"
    assert "is not a payload version" in v.parse("about 1")


def test_highest_compares_numbers_not_text():
    assert v.highest(["1.9", "1.10", "1.2"], v.parse(">=1.0")) == "1.10"
    assert v.highest(["1.0"], v.parse(">=2099.1")) is None
