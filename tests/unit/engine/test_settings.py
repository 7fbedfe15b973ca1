"""One settings object per command (engine/core/settings.py): flag > environment > config.toml >
default, config.toml parsed once, the home resolved once; the remote settings it makes, with
clear errors."""
from __future__ import annotations

import pytest

from mcpp.cas.remote.config import RemoteConfigError, parse_remote_url
from mcpp.engine.core.config_file import ConfigError
from mcpp.engine.core.errors import McppError
from mcpp.engine.core.settings import RemoteFlags, Settings
from tests.unit.engine.settings_support import remote_of


def settings_of(home, environ=None, flags=RemoteFlags()) -> Settings:
    return Settings.read({"MCPP_HOME": str(home), **(environ or {})}, flags)


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
    s = remote_of(None, None, {}, home)
    assert (s.target, s.upload, s.instance_name, s.timeout) == ("config:1", True, "ci", 5.0)
    s = remote_of(None, None, {"MCPP_REMOTE": "grpc://env:2", "MCPP_REMOTE_UPLOAD": "0"}, home)
    assert (s.target, s.upload) == ("env:2", False)
    s = remote_of("grpc://flag:3", True, {"MCPP_REMOTE": "grpc://env:2", "MCPP_REMOTE_UPLOAD": "0"}, home)
    assert (s.target, s.upload) == ("flag:3", True)
    assert remote_of("grpc://flag:3", False, {}, home).upload is False


def test_no_remote_configured_is_none(tmp_path):
    assert remote_of(None, None, {}, tmp_path / "nowhere") is None
    assert remote_of(None, False, {}, tmp_path / "nowhere") is None


def test_upload_without_a_url_says_how_to_give_one(tmp_path):
    with pytest.raises(McppError, match="--remote URL"):
        remote_of(None, True, {}, tmp_path)


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
    with pytest.raises(McppError, match=message.replace("(", r"\(")) as e:
        remote_of(None, None, {}, tmp_path)
    assert str(tmp_path / "config.toml") in str(e.value)


def test_bad_upload_env_value(tmp_path):
    with pytest.raises(McppError, match="MCPP_REMOTE_UPLOAD"):
        remote_of("grpc://x:1", None, {"MCPP_REMOTE_UPLOAD": "maybe"}, tmp_path)


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
    s = remote_of(None, None, {}, home)
    assert s.target == "cache:443" and s.security == ChannelSecurity(
        tls=True, ca=b"PEM ca.pem", cert=b"PEM me.pem", key=b"PEM me.key", token="s3cr3t-token")
    assert "s3cr3t" not in repr(s) and "me.key" not in repr(s)
    # Plain grpc:// to another host never carries the token; unix sockets and loopback may.
    with pytest.raises(McppError, match="a token is sent only over TLS"):
        remote_of("grpc://cache:80", None, {"MCPP_REMOTE_TOKEN_FILE": str(home / "token")}, tmp_path)
    for url in ("unix:/run/c.sock", "grpc://127.0.0.1:80", "grpc://localhost:80"):
        assert remote_of(url, None, {"MCPP_REMOTE_TOKEN_FILE": str(home / "token")}, tmp_path).security.token
    cfg.write_text('[remote]\nurl = "grpc://cache:80"\ntls-ca = "ca.pem"\n')
    with pytest.raises(McppError, match="`remote.tls-ca` needs a grpcs:// URL"):
        remote_of(None, None, {}, home)
    cfg.write_text('[remote]\nurl = "grpcs://cache:443"\ntls-cert = "me.pem"\n')
    with pytest.raises(McppError, match="both `remote.tls-cert` and `remote.tls-key`"):
        remote_of(None, None, {}, home)
    cfg.write_text('[remote]\nurl = "grpcs://cache:443"\ntls-ca = "missing.pem"\n')
    with pytest.raises(McppError, match="cannot read"):
        remote_of(None, None, {}, home)
    (home / "token").write_text("")
    with pytest.raises(McppError, match="one token on one line"):
        remote_of("unix:/x", None, {"MCPP_REMOTE_TOKEN_FILE": str(home / "token")}, tmp_path)


@pytest.mark.parametrize("key, flag, var", [("upload", "upload", "MCPP_REMOTE_UPLOAD"),
                                            ("execute", "execute", "MCPP_REMOTE_EXEC")])
def test_each_switch_is_the_flag_else_the_environment_else_config_toml_else_off(tmp_path, key, flag, var):
    url = RemoteFlags(url="grpc://localhost:1")
    assert getattr(settings_of(tmp_path, {}, url).remote(), key) is False  # the default
    write_config(tmp_path, f"[remote]\n{key} = true\n")
    assert getattr(settings_of(tmp_path, {}, url).remote(), key) is True  # config.toml
    assert getattr(settings_of(tmp_path, {var: "0"}, url).remote(), key) is False  # the environment over it
    flagged = RemoteFlags(url="grpc://localhost:1", **{flag: True})
    assert getattr(settings_of(tmp_path, {var: "0"}, flagged).remote(), key) is True  # the flag over both


def test_the_url_is_the_flag_else_the_environment_else_config_toml_else_no_remote(tmp_path):
    assert settings_of(tmp_path).remote() is None
    write_config(tmp_path, '[remote]\nurl = "grpc://config:1"\n')
    assert settings_of(tmp_path).remote().target == "config:1"
    assert settings_of(tmp_path, {"MCPP_REMOTE": "grpc://env:2"}).remote().target == "env:2"
    flags = RemoteFlags(url="grpc://flag:3")
    assert settings_of(tmp_path, {"MCPP_REMOTE": "grpc://env:2"}, flags).remote().target == "flag:3"


def test_config_toml_is_parsed_once_when_the_command_starts(tmp_path):
    write_config(tmp_path, '[remote]\nurl = "grpc://first:1"\n[payloads]\nindex = ["one"]\n')
    settings = settings_of(tmp_path)
    write_config(tmp_path, '[remote]\nurl = "grpc://second:2"\n[payloads]\nindex = ["two"]\n')
    assert settings.remote().target == "first:1"  # what the command started with
    assert settings.table("payloads") == {"index": ["one"]}


def test_an_unusable_config_toml_stops_only_a_part_that_reads_it(tmp_path):
    (tmp_path / "config.toml").write_bytes(b"\xff\xfe[remote]\n")
    settings = settings_of(tmp_path)  # `mcpp new`, `mcpp cache dir`: nothing reads a table
    assert settings.home.root == tmp_path
    with pytest.raises(ConfigError, match="config.toml: not UTF-8 text"):
        settings.remote()
    with pytest.raises(ConfigError, match="config.toml: not UTF-8 text"):
        settings.table("payloads")


def test_the_home_is_mcpp_home_else_dot_mcpp_in_home(tmp_path):
    assert Settings.read({"MCPP_HOME": str(tmp_path / "h")}).home.cas == tmp_path / "h" / "cas"
    assert Settings.read({"HOME": str(tmp_path)}).home.root == tmp_path / ".mcpp"


def test_the_settings_keep_the_mcpp_variables_as_they_were_when_the_command_started(tmp_path):
    environ = {"MCPP_HOME": str(tmp_path), "MCPP_REMOTE_EXEC_WAIT": "3", "PATH": "/bin"}
    settings = Settings.read(environ)
    environ["MCPP_REMOTE_EXEC_WAIT"] = "9"
    assert settings.remote_exec_wait() == 3.0 and "PATH" not in settings.env
    assert Settings.read({"MCPP_HOME": str(tmp_path)}).remote_exec_wait() is None
    with pytest.raises(McppError, match="MCPP_REMOTE_EXEC_WAIT"):
        Settings.read({"MCPP_HOME": str(tmp_path), "MCPP_REMOTE_EXEC_WAIT": "soon"}).remote_exec_wait()


def test_cas_reads_no_mcpp_variable_and_nothing_but_the_settings_reads_config_toml():
    """`cas/` takes explicit values; the one config.toml parser is engine/core/config_file.py."""
    from tests.unit.engine.test_build_env import PACKAGE, names_read

    cas = sorted(p for p in (PACKAGE / "cas").rglob("*.py"))
    assert {str(p.relative_to(PACKAGE)): names for p in cas
            if (names := {n for n in names_read(p.read_text()) if n.startswith("MCPP_")})} == {}
    parsers = sorted(str(p.relative_to(PACKAGE)) for d in ("engine", "cas") for p in (PACKAGE / d).rglob("*.py")
                     if '"config.toml"' in p.read_text())
    assert parsers == ["engine/core/build_env.py", "engine/core/config_file.py"]  # build_env: the no-op record stats it


def test_remote_download_is_the_flag_else_config_toml_else_toplevel(tmp_path):
    home = tmp_path / "home"
    write_config(home, '[remote]\nurl = "grpc://config:1"\n')
    assert settings_of(home).remote().download == "toplevel"
    write_config(home, '[remote]\nurl = "grpc://config:1"\ndownload = "minimal"\n')
    assert settings_of(home).remote().download == "minimal"
    assert settings_of(home, flags=RemoteFlags(download="all")).remote().download == "all"
    write_config(home, '[remote]\nurl = "grpc://config:1"\ndownload = "some"\n')
    with pytest.raises(McppError, match="`remote.download` must be one of all, toplevel, minimal") as e:
        settings_of(home).remote()
    assert str(home / "config.toml") in str(e.value)
