"""Cargo-spelled version requirements (engine/manifest/version_req.py)."""
from __future__ import annotations

import pytest

from mcpp.engine.manifest.version_req import parse, satisfies


@pytest.mark.parametrize("requirement, yes, no", [
    ("0.3", ["0.3.0", "0.3.9"], ["0.2.9", "0.4.0", "1.0.0"]),
    ("^1.2", ["1.2.0", "1.9.9"], ["1.1.9", "2.0.0"]),
    ("^0.0.3", ["0.0.3"], ["0.0.4", "0.0.2"]),
    ("~1.2.3", ["1.2.3", "1.2.9"], ["1.3.0", "1.2.2"]),
    ("~1", ["1.0.0", "1.9.0"], ["2.0.0"]),
    (">=0.3", ["0.3.0", "2.0.0"], ["0.2.9"]),
    (">0.3", ["0.4.0"], ["0.3.5"]),
    ("<=0.3", ["0.3.7", "0.1.0"], ["0.4.0"]),
    ("<1", ["0.9.9"], ["1.0.0"]),
    ("=1.2", ["1.2.0", "1.2.7"], ["1.3.0"]),
    (">=0.1, <0.2", ["0.1.5"], ["0.2.0", "0.0.9"]),
    ("*", ["0.0.1", "9.9.9"], []),
    ("1.0", ["1.0.0-rc1"], ["abc"]),
])
def test_requirements(requirement, yes, no):
    for v in yes:
        assert satisfies(v, requirement), (v, requirement)
    for v in no:
        assert not satisfies(v, requirement), (v, requirement)


@pytest.mark.parametrize("bad", ["about 1", ">= ", "1.2.3.4", "", "1.x"])
def test_malformed_requirements_say_why(bad):
    assert isinstance(parse(bad), str)
