"""Where indexes come from, in which order, and reading one by path or file:// URL."""
from __future__ import annotations

import pytest

from mcpp.engine.payloads.errors import PayloadError
from mcpp.engine.core.config_file import ConfigFile
from mcpp.engine.payloads.index import SHIPPED, Index, IndexSet, configured


def test_the_environment_then_config_toml_then_the_shipped_index(tmp_path):
    (tmp_path / "config.toml").write_text('[payloads]\nindex = ["https://a.example/idx", "local"]\n')
    found = configured(str(tmp_path), {"MCPP_PAYLOAD_INDEX": "http://e.example/1, /srv/two"},
                       ConfigFile.read(tmp_path))
    assert found == ["http://e.example/1", "/srv/two", "https://a.example/idx", str(tmp_path / "local"), SHIPPED]
    assert configured(str(tmp_path / "none"), {}, ConfigFile.read(tmp_path / "none")) == [SHIPPED]


def test_a_malformed_config_is_an_error_naming_the_file(tmp_path):
    (tmp_path / "config.toml").write_text('[payloads]\nindex = 3\n')
    with pytest.raises(PayloadError, match="config.toml: `\\[payloads\\] index` must be a list"):
        configured(str(tmp_path), {}, ConfigFile.read(tmp_path))


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


def test_trusted_keys_come_from_the_environment_or_config_toml_and_a_bad_one_is_named(tmp_path):
    from mcpp.cas.remote.signing import generate
    from mcpp.engine.payloads.index import trust

    a, b = generate("a").public, generate("b").public
    (tmp_path / "config.toml").write_text(f'[payloads]\ntrusted-keys = ["{a}"]\n')
    assert trust({}, ConfigFile.read(tmp_path)).keys == (a,)
    assert trust({"MCPP_PAYLOAD_TRUSTED_KEYS": f"{b}"}, ConfigFile.read(tmp_path)).keys == (b,)
    assert trust({}, ConfigFile.read(tmp_path / "none")).keys is None
    assert trust({"MCPP_PAYLOAD_INDEX_INSECURE": "1"}, ConfigFile.read(tmp_path / "none")).insecure
    with pytest.raises(PayloadError, match="MCPP_PAYLOAD_TRUSTED_KEYS: invalid public key"):
        trust({"MCPP_PAYLOAD_TRUSTED_KEYS": "nope"}, ConfigFile.read(tmp_path))
    with pytest.raises(PayloadError, match="MCPP_PAYLOAD_INDEX_INSECURE='maybe'"):
        trust({"MCPP_PAYLOAD_INDEX_INSECURE": "maybe"}, ConfigFile.read(tmp_path))


def test_a_signature_covers_the_descriptor_bytes_and_its_path():
    from mcpp.cas.remote.signing import generate
    from mcpp.engine.payloads import signature

    key, other = generate("pub"), generate("other")
    data = b'[package]\nbins = []\n'
    line = signature.signature_line("pkgs/xim/gen.toml", data, key)
    assert signature.verify("pkgs/xim/gen.toml", data, line, [key.public])[0] == key.public
    assert signature.verify("pkgs/xim/gen.toml", data, None, [key.public]) == (None, signature.UNSIGNED)
    assert signature.verify("pkgs/xim/gen.toml", data, line, [other.public]) == (None, signature.UNTRUSTED)
    assert signature.verify("pkgs/xim/gen.toml", data + b"#", line, [key.public]) == (None, signature.MISMATCH)
    assert signature.verify("pkgs/xim/tool.toml", data, line, [key.public]) == (None, signature.MISMATCH)
    both = signature.signature_line("pkgs/xim/gen.toml", data, other) + line  # a rotation: two signers
    assert signature.verify("pkgs/xim/gen.toml", data, both, [key.public])[0] == key.public


def test_an_index_on_a_server_cannot_name_a_file_on_this_machine(tmp_path):
    """A descriptor from an http(s) index whose archive is `file:///...`: mcpp would read a local
    file (or device) as the archive; only a local index may name local files."""
    remote = Index("https://payloads.example.com/idx")
    assert remote.url("archives/a.tar.zst") == "https://payloads.example.com/idx/archives/a.tar.zst"
    assert remote.url("http://mirror.example.com/a.tar.zst") == "http://mirror.example.com/a.tar.zst"
    for rel in ("file:///dev/zero#.tar.zst", "file:///home/user/.ssh/id_ed25519#.tar.zst"):
        with pytest.raises(PayloadError, match="a file on this machine"):
            remote.url(rel)
    local = Index(str(tmp_path))
    assert local.url("file:///srv/a.tar.zst") == "file:///srv/a.tar.zst"
