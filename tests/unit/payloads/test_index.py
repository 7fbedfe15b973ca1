"""Where indexes come from, in which order, and reading one by path or file:// URL."""
from __future__ import annotations

import pytest

from mcpp.engine.payloads.errors import PayloadError
from mcpp.engine.payloads.index import SHIPPED, Index, IndexSet, configured


def test_the_environment_then_config_toml_then_the_shipped_index(tmp_path):
    (tmp_path / "config.toml").write_text('[payloads]\nindex = ["https://a.example/idx", "local"]\n')
    found = configured(str(tmp_path), {"MCPP_PAYLOAD_INDEX": "http://e.example/1, /srv/two"})
    assert found == ["http://e.example/1", "/srv/two", "https://a.example/idx", str(tmp_path / "local"), SHIPPED]
    assert configured(str(tmp_path / "none"), {}) == [SHIPPED]


def test_a_malformed_config_is_an_error_naming_the_file(tmp_path):
    (tmp_path / "config.toml").write_text('[payloads]\nindex = 3\n')
    with pytest.raises(PayloadError, match="config.toml: `\\[payloads\\] index` must be a list"):
        configured(str(tmp_path), {})


def index_at(root):
    (root / "pkgs" / "xim").mkdir(parents=True)
    (root / "index.toml").write_text('[index]\nname = "t"\nformat = 1\n')
    (root / "pkgs" / "xim" / "gen.toml").write_text(
        '[package]\nname = "gen"\n[[release]]\nversion = "1.0"\nlinux-x86_64 = { dir = "t" }\n')
    return root


def test_a_file_url_index_reads_like_a_directory_and_the_first_index_wins(tmp_path):
    first = index_at(tmp_path / "one")
    second = index_at(tmp_path / "two")
    indexes = IndexSet([f"file://{first}", str(second)])
    index, desc = indexes.find("xim", "gen")
    assert index.location == f"file://{first}" and desc.versions_for("linux-x86_64") == ["1.0"]
    assert index.local_path("trees/x") == f"{first}/trees/x"
    assert indexes.find("xim", "absent") is None


def test_an_index_without_index_toml_is_refused(tmp_path):
    (tmp_path / "pkgs").mkdir()
    with pytest.raises(PayloadError, match="no index.toml"):
        Index(str(tmp_path)).descriptor("xim", "gen")
