"""Which remote cache a build uses: flag > MCPP_REMOTE > config.toml, with clear errors."""
from __future__ import annotations

import pytest

from mcpp.cas.remote.config import RemoteConfigError, parse_remote_url, resolve_settings


def write_config(home, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)


def test_urls():
    assert parse_remote_url("grpc://localhost:50051") == "localhost:50051"
    assert parse_remote_url("grpc://[::1]:8980") == "[::1]:8980"
    assert parse_remote_url("unix:/run/bgd.sock") == "unix:/run/bgd.sock"
    assert parse_remote_url("unix:///run/bgd.sock") == "unix:/run/bgd.sock"
    assert parse_remote_url("unix:rel.sock").startswith("unix:/")
    for bad in ("http://x:1", "grpc://nohost", "grpc://x:99999", "unix:", "localhost:50051"):
        with pytest.raises(RemoteConfigError, match="grpc://HOST:PORT"):
            parse_remote_url(bad)
    assert parse_remote_url("grpcs://cache:443") == "cache:443"  # TLS: the scheme picks the credentials


def test_flag_beats_env_beats_config(tmp_path):
    home = tmp_path / "home"
    write_config(home, '[remote]\nurl = "grpc://config:1"\nupload = true\ninstance = "ci"\ntimeout = 5\n')
    s = resolve_settings(None, None, {}, home)
    assert (s.target, s.upload, s.instance_name, s.timeout) == ("config:1", True, "ci", 5.0)
    s = resolve_settings(None, None, {"MCPP_REMOTE": "grpc://env:2", "MCPP_REMOTE_UPLOAD": "0"}, home)
    assert (s.target, s.upload) == ("env:2", False)
    s = resolve_settings("grpc://flag:3", True, {"MCPP_REMOTE": "grpc://env:2", "MCPP_REMOTE_UPLOAD": "0"}, home)
    assert (s.target, s.upload) == ("flag:3", True)
    assert resolve_settings("grpc://flag:3", False, {}, home).upload is False


def test_no_remote_configured_is_none(tmp_path):
    assert resolve_settings(None, None, {}, tmp_path / "nowhere") is None
    assert resolve_settings(None, False, {}, tmp_path / "nowhere") is None


def test_upload_without_a_url_says_how_to_give_one(tmp_path):
    with pytest.raises(RemoteConfigError, match="--remote URL"):
        resolve_settings(None, True, {}, tmp_path)


@pytest.mark.parametrize("text, message", [
    ("[remote\nurl = 1", "config.toml"),
    ('[remote]\nurl = 5\n', "`remote.url` must be a string"),
    ('[remote]\nupload = "yes"\n', "`remote.upload` must be true or false"),
    ('[remote]\ntimeout = true\n', "`remote.timeout` must be a number"),
    ('[remote]\nurll = "grpc://x:1"\n', "unknown key `remote.urll`; accepted: url, upload, instance, timeout"),
    ('remote = "grpc://x:1"\n', "must be a table"),
])
def test_config_errors_name_the_file_and_what_is_accepted(tmp_path, text, message):
    write_config(tmp_path, text)
    with pytest.raises(RemoteConfigError, match=message.replace("(", r"\(")) as e:
        resolve_settings(None, None, {}, tmp_path)
    assert str(tmp_path / "config.toml") in str(e.value)


def test_bad_upload_env_value(tmp_path):
    with pytest.raises(RemoteConfigError, match="MCPP_REMOTE_UPLOAD"):
        resolve_settings("grpc://x:1", None, {"MCPP_REMOTE_UPLOAD": "maybe"}, tmp_path)


def test_tls_and_token_settings(tmp_path):
    from mcpp.cas.remote.config import ChannelSecurity

    home = tmp_path / "home"
    home.mkdir()
    for name in ("ca.pem", "me.pem", "me.key"):
        (home / name).write_bytes(b"PEM " + name.encode())
    (home / "token").write_text("s3cr3t-token\n")
    cfg = home / "config.toml"
    cfg.write_text('[remote]\nurl = "grpcs://cache:443"\ntls-ca = "ca.pem"\ntls-cert = "me.pem"\n'
                   'tls-key = "me.key"\ntoken-file = "token"\n')
    s = resolve_settings(None, None, {}, home)
    assert s.target == "cache:443" and s.security == ChannelSecurity(
        tls=True, ca=b"PEM ca.pem", cert=b"PEM me.pem", key=b"PEM me.key", token="s3cr3t-token")
    assert "s3cr3t" not in repr(s) and "me.key" not in repr(s)
    # Plain grpc:// to another host never carries the token; unix sockets and loopback may.
    with pytest.raises(RemoteConfigError, match="a token is sent only over TLS"):
        resolve_settings("grpc://cache:80", None, {"MCPP_REMOTE_TOKEN_FILE": str(home / "token")}, tmp_path)
    for url in ("unix:/run/c.sock", "grpc://127.0.0.1:80", "grpc://localhost:80"):
        assert resolve_settings(url, None, {"MCPP_REMOTE_TOKEN_FILE": str(home / "token")}, tmp_path).security.token
    cfg.write_text('[remote]\nurl = "grpc://cache:80"\ntls-ca = "ca.pem"\n')
    with pytest.raises(RemoteConfigError, match="`remote.tls-ca` needs a grpcs:// URL"):
        resolve_settings(None, None, {}, home)
    cfg.write_text('[remote]\nurl = "grpcs://cache:443"\ntls-cert = "me.pem"\n')
    with pytest.raises(RemoteConfigError, match="both `remote.tls-cert` and `remote.tls-key`"):
        resolve_settings(None, None, {}, home)
    cfg.write_text('[remote]\nurl = "grpcs://cache:443"\ntls-ca = "missing.pem"\n')
    with pytest.raises(RemoteConfigError, match="cannot read"):
        resolve_settings(None, None, {}, home)
    (home / "token").write_text("")
    with pytest.raises(RemoteConfigError, match="one token on one line"):
        resolve_settings("unix:/x", None, {"MCPP_REMOTE_TOKEN_FILE": str(home / "token")}, tmp_path)
