"""A payload index served over plain http (a loopback server is no exception) is believed only
for descriptors a trusted key signed, with the keys and `mcpp cache keygen` of the remote cache;
`MCPP_PAYLOAD_INDEX_INSECURE=1` accepts it unverified, with a warning each time
(docs/payloads.md, "Signed indexes")."""
from __future__ import annotations

import pytest

from tests.e2e.payload_index_support import IndexServer, make_index

PROJECT = {"mcpp.toml": '[package]\nname = "app"\nversion = "0.1.0"\n[xlings.workspace]\n"xim:gen" = "2.0.0"\n',
           "src/main.cpp": "int main() { return 0; }\n"}


@pytest.fixture
def keys(mcpp, tmp_path):
    """Two key pairs written by `mcpp cache keygen`: {name: (secret path, public key text)}."""
    out = {}
    for name in ("publisher", "stranger"):
        res = mcpp("cache", "keygen", str(tmp_path / name), cwd=tmp_path)
        assert res.code == 0, res.err
        out[name] = (tmp_path / f"{name}.secret", res.out.strip())
    return out


def signed_index(mcpp, tmp_path, secret, edit=None):
    index = make_index(tmp_path / "index", signer=None)
    if edit is not None:
        edit(index / "pkgs" / "xim" / "gen.toml")
    res = mcpp("payload", "sign", "--key", str(secret), str(index), cwd=tmp_path)
    assert res.code == 0 and "signed 1 descriptor" in res.err, res.err
    assert (index / "pkgs" / "xim" / "gen.toml.sig").is_file()
    return index


def installed(mcpp) -> bool:
    return (mcpp.home / "payloads" / "xim" / "gen" / "2.0.0").is_dir()


def test_an_unsigned_plain_http_index_is_refused_before_anything_is_installed(mcpp, project, tmp_path):
    app = project(PROJECT)
    with IndexServer(make_index(tmp_path / "index", signer=None)) as s:
        for args in (("build",), ("payload", "list"), ("payload", "fetch")):
            res = mcpp(*args, cwd=app, env={"MCPP_PAYLOAD_INDEX": s.url})
            assert res.code == 2 and "Traceback" not in res.err, res.err
            assert f"error: payload index {s.url} is plain http, which is refused" in res.err, res.err
            assert "MCPP_PAYLOAD_INDEX_INSECURE=1" in res.err and "mcpp payload sign" in res.err, res.err
        assert not [r for r in s.requests if r.startswith("/archives/")]
    assert not installed(mcpp)


def test_a_signed_index_is_accepted_when_its_key_is_trusted(mcpp, project, tmp_path, keys):
    secret, public = keys["publisher"]
    app = project(PROJECT)
    with IndexServer(signed_index(mcpp, tmp_path, secret)) as s:
        res = mcpp("build", cwd=app, env={"MCPP_PAYLOAD_INDEX": s.url, "MCPP_PAYLOAD_TRUSTED_KEYS": public})
        assert res.code == 0, res.err
        assert "warning" not in res.err, res.err
    assert installed(mcpp)


def test_trusted_keys_in_config_toml(mcpp, project, tmp_path, keys):
    secret, public = keys["publisher"]
    (mcpp.home / "config.toml").write_text(f'[payloads]\ntrusted-keys = ["{public}"]\n')
    app = project(PROJECT)
    with IndexServer(signed_index(mcpp, tmp_path, secret)) as s:
        res = mcpp("payload", "fetch", cwd=app, env={"MCPP_PAYLOAD_INDEX": s.url})
        assert res.code == 0, res.err
    assert installed(mcpp)


def test_a_signature_by_an_untrusted_key_is_refused(mcpp, project, tmp_path, keys):
    app = project(PROJECT)
    with IndexServer(signed_index(mcpp, tmp_path, keys["stranger"][0])) as s:
        res = mcpp("build", cwd=app, env={"MCPP_PAYLOAD_INDEX": s.url, "MCPP_PAYLOAD_TRUSTED_KEYS": keys["publisher"][1]})
        assert res.code == 2 and "Traceback" not in res.err, res.err
        assert f"payload descriptor {s.url}/pkgs/xim/gen.toml is refused: signed by an untrusted key" in res.err, res.err
    assert not installed(mcpp)


def test_a_descriptor_altered_after_signing_is_refused(mcpp, project, tmp_path, keys):
    secret, public = keys["publisher"]
    index = signed_index(mcpp, tmp_path, secret)
    descriptor = index / "pkgs" / "xim" / "gen.toml"
    # What a man in the middle would do: point the release at an archive of their own.
    descriptor.write_text(descriptor.read_text().replace("archives/gen-2.0.0", "archives/gen-1.0.0", 1))
    app = project(PROJECT)
    with IndexServer(index) as s:
        res = mcpp("build", cwd=app, env={"MCPP_PAYLOAD_INDEX": s.url, "MCPP_PAYLOAD_TRUSTED_KEYS": public})
        assert res.code == 2 and "Traceback" not in res.err, res.err
        assert f"payload descriptor {s.url}/pkgs/xim/gen.toml is refused: signature does not match" in res.err, res.err
        assert not [r for r in s.requests if r.startswith("/archives/")]
    assert not installed(mcpp)


def test_a_signed_descriptor_served_under_another_package_path_is_refused(mcpp, project, tmp_path, keys):
    secret, public = keys["publisher"]
    unnamed = lambda p: p.write_text(p.read_text().replace('name = "gen"\n', ""))  # noqa: E731 (the path names it)
    index = signed_index(mcpp, tmp_path, secret, unnamed)
    pkgs = index / "pkgs" / "xim"
    for suffix in ("", ".sig"):  # gen's signed descriptor and signature, byte for byte, offered as `xim:tool`
        (pkgs / f"tool.toml{suffix}").write_bytes((pkgs / f"gen.toml{suffix}").read_bytes())
    app = project({**PROJECT, "mcpp.toml": PROJECT["mcpp.toml"].replace('"xim:gen"', '"xim:tool"')})
    with IndexServer(index) as s:
        res = mcpp("build", cwd=app, env={"MCPP_PAYLOAD_INDEX": s.url, "MCPP_PAYLOAD_TRUSTED_KEYS": public})
        assert res.code == 2 and "refused: signature does not match" in res.err, res.err


def test_insecure_opt_in_accepts_an_unsigned_index_and_warns_every_time(mcpp, project, tmp_path):
    app = project(PROJECT)
    env_of = lambda s: {"MCPP_PAYLOAD_INDEX": s.url, "MCPP_PAYLOAD_INDEX_INSECURE": "1"}  # noqa: E731
    with IndexServer(make_index(tmp_path / "index", signer=None)) as s:
        for args in (("build",), ("payload", "list"), ("metadata",)):
            res = mcpp(*args, cwd=app, env=env_of(s))
            assert res.code == 0, res.err
            assert (f"warning: payload index {s.url} is plain http and MCPP_PAYLOAD_INDEX_INSECURE=1 accepts it "
                    f"unverified") in res.err, (args, res.err)
    assert installed(mcpp)
