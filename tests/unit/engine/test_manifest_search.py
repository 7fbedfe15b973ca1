"""One upward search for `mcpp.toml` (engine/core/manifest_search.py), which the package locator and
the server's client share: they agree on the package and on the workspace above it."""
from __future__ import annotations

from mcpp.engine.core.manifest_search import manifests_above
from mcpp.engine.package.locate import find_manifest
from mcpp.engine.server.paths import workspace_root


def test_manifests_above_are_the_nearest_first(tmp_path):
    (tmp_path / "ws" / "app" / "src").mkdir(parents=True)
    (tmp_path / "ws" / "mcpp.toml").write_text('[workspace]\nmembers = ["app"]\n')
    (tmp_path / "ws" / "app" / "mcpp.toml").write_text('[package]\nname = "app"\n')
    start = tmp_path / "ws" / "app" / "src"
    found = list(manifests_above(str(start)))
    assert found[:2] == [str(tmp_path / "ws" / "app" / "mcpp.toml"), str(tmp_path / "ws" / "mcpp.toml")]
    assert find_manifest(str(start), None) == found[0]  # the package: the nearest
    assert workspace_root(str(start)) == str(tmp_path / "ws")  # the server: the workspace above it
