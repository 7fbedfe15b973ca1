"""`version` on a path dependency is checked against the `[package] version` found at the path."""
from __future__ import annotations

import pytest


def _projects(project, requirement: str, have: str = "0.1.0"):
    return project({
        "app/mcpp.toml": ('[package]\nname = "app"\nversion = "0.1.0"\n[dependencies]\n'
                          f'foo = {{ path = "../foo", version = "{requirement}" }}\n'),
        "app/src/main.cpp": "int main() { return 0; }\n",
        "foo/mcpp.toml": f'[package]\nname = "foo"\nversion = "{have}"\n',
        "foo/src/foo.cpp": "int foo() { return 1; }\n",
    })


def test_an_unmet_requirement_names_both_sides(project, mcpp):
    root = _projects(project, ">=0.3")
    res = mcpp("build", cwd=root / "app")
    assert res.code == 2, res.err
    assert "Traceback" not in res.err
    assert ("mcpp.toml:5:36: error: dependency `foo` requires version `>=0.3`, but `../foo` has version 0.1.0"
            in res.err), res.err
    assert 'foo/mcpp.toml` declares version = "0.1.0"' in res.err


@pytest.mark.parametrize("requirement", ["0.1", "^0.1.0", ">=0.1, <0.2", "~0.1", "=0.1.0", "*"])
def test_a_met_requirement_builds(project, mcpp, requirement):
    root = _projects(project, requirement)
    res = mcpp("build", cwd=root / "app")
    assert res.code == 0, res.err


def test_a_malformed_requirement_is_positioned(project, mcpp):
    root = _projects(project, "about 1")
    res = mcpp("build", cwd=root / "app")
    assert res.code == 2, res.err
    assert "mcpp.toml:5:36: error: dependency `foo`: `about 1` is not a version requirement" in res.err, res.err
