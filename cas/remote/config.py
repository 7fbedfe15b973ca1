"""Which remote cache a build talks to: `--remote` > `MCPP_REMOTE` > `[remote]` in config.toml.

```toml
# $MCPP_HOME/config.toml
[remote]
url = "grpcs://cache.example.com:8980"  # TLS; "grpc://HOST:PORT" is plain text; or "unix:/run/buildgrid.sock"
upload = true          # like --remote-upload (CI writes; laptops read)
execute = true         # like --remote-exec: run actions on the server's workers (docs/remote.md)
instance = ""          # REAPI instance_name, when the server hosts several
timeout = 60           # seconds per request before the server counts as unavailable
sign-key = "keys/ci.secret"                 # sign what this machine uploads (relative: to $MCPP_HOME)
trusted-keys = ["ci:Vf3x...=", "ci-old:..."]  # accept only results one of these keys signed
tls-ca = "ca.pem"      # grpcs:// only: the CA that signed the server's certificate (default: system roots)
tls-cert = "me.pem"    # mutual TLS: this client's certificate chain ...
tls-key = "me.key"     # ... and its private key
token-file = "token"   # sent as `authorization: Bearer <token>` (grpcs://, unix: or loopback only)
```

Paths are relative to $MCPP_HOME. `MCPP_REMOTE_TOKEN_FILE` overrides `token-file`.

`MCPP_REMOTE_SIGN_KEY` (a path) and `MCPP_REMOTE_TRUSTED_KEYS` (comma-separated) override the two
key settings. Without trusted keys every remote result is accepted unverified (see
docs/remote.md for the trust model).

The same precedence holds for uploading: `--remote-upload`/`--no-remote-upload` >
`MCPP_REMOTE_UPLOAD` (1/0, true/false, yes/no, on/off) > `upload`, and for remote execution:
`--remote-exec` > `MCPP_REMOTE_EXEC` > `execute`. This module imports no gRPC,
so a build without a remote pays nothing for it.
"""
from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from ..switch import SPELLINGS, parse_switch

if TYPE_CHECKING:  # the key code is imported by a build that has a remote (see `_keys`)
    from .signing import PublicKey, SecretKey

CONFIG_FILE = "config.toml"
# key -> what `isinstance` accepts for its value (a type, or a tuple of types)
_KEYS: dict[str, Any] = {"url": str, "upload": bool, "instance": str, "timeout": (int, float), "sign-key": str,
         "trusted-keys": list, "tls-ca": str, "tls-cert": str, "tls-key": str, "token-file": str,
         "execute": bool}


class RemoteConfigError(ValueError):
    """A remote setting that cannot be used; the message says what is accepted."""


@dataclass(frozen=True, slots=True)
class ChannelSecurity:
    """How the channel is protected. The key and the token never appear in a repr or message."""

    tls: bool = False  # grpcs://
    ca: bytes | None = None  # PEM roots; None: the system's
    cert: bytes | None = None  # PEM client certificate chain (mutual TLS)
    key: bytes | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class RemoteSettings:
    url: str  # as the user wrote it (shown in messages)
    target: str  # as gRPC wants it: "host:port" or "unix:/path"
    upload: bool = False
    instance_name: str = ""
    timeout: float = 60.0
    sign_key: SecretKey | None = None  # signs every uploaded result
    trusted_keys: tuple[PublicKey, ...] | None = None  # None: remote results are accepted unverified
    security: ChannelSecurity = ChannelSecurity()
    execute: bool = False  # run actions remotely (REAPI Execute), not only look them up


def parse_remote_url(url: str) -> str:
    """`grpc://HOST:PORT` or `grpcs://HOST:PORT` -> `HOST:PORT`; `unix:PATH` (or `unix://PATH`)
    -> `unix:/abs/PATH`."""
    text = url.strip()
    m = re.fullmatch(r"grpcs?://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})/?", text)
    if m and 0 < int(m.group(2)) < 65536:
        return f"{m.group(1)}:{m.group(2)}"
    if text.startswith("unix:"):
        path = text[len("unix:"):]
        if path.startswith("//"):
            path = path[2:]
        if path:
            return "unix:" + os.path.abspath(path)
    raise RemoteConfigError(f"invalid remote cache URL `{url}`: expected grpc://HOST:PORT "
                            "(e.g. grpc://localhost:50051), grpcs://HOST:PORT (TLS) "
                            "or unix:PATH (e.g. unix:/run/buildgrid.sock)")


def load_config(home_root: str | os.PathLike[str]) -> dict[str, Any]:
    """The `[remote]` table of `$MCPP_HOME/config.toml` ({} when there is none), checked."""
    path = os.path.join(home_root, CONFIG_FILE)
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as e:
        raise RemoteConfigError(f"{path}: {e}") from None
    except UnicodeDecodeError as e:
        raise RemoteConfigError(f"{path}: not UTF-8 text (byte {e.start})") from None
    except RecursionError:
        raise RemoteConfigError(f"{path}: tables or arrays nest too deeply") from None
    except OSError as e:
        raise RemoteConfigError(f"{path}: cannot read: {e.strerror}") from None
    table = data.get("remote", {})
    if not isinstance(table, dict):
        raise RemoteConfigError(f"{path}: `remote` must be a table ([remote])")
    for key, value in table.items():
        want = _KEYS.get(key)
        if want is None:
            raise RemoteConfigError(f"{path}: unknown key `remote.{key}`; accepted: {', '.join(_KEYS)}")
        if not isinstance(value, want) or (want is not bool and isinstance(value, bool)):
            kind = {str: "a string", bool: "true or false", list: "a list of strings"}.get(
                want, "a number of seconds")
            raise RemoteConfigError(f"{path}: `remote.{key}` must be {kind}")
        if want is list and not all(isinstance(v, str) for v in value):
            raise RemoteConfigError(f"{path}: `remote.{key}` must be a list of strings")
    return table


def resolve_settings(flag_url: str | None, flag_upload: bool | None, environ: Mapping[str, str],
                     home_root: str | os.PathLike[str], flag_execute: bool | None = None) -> RemoteSettings | None:
    """The remote settings of one build, or None when no remote cache is configured."""
    table = load_config(home_root)
    url = flag_url or environ.get("MCPP_REMOTE") or table.get("url") or None
    upload = _switch(flag_upload, environ, "MCPP_REMOTE_UPLOAD", table, "upload")
    execute = _switch(flag_execute, environ, "MCPP_REMOTE_EXEC", table, "execute")
    if url is None:
        for flag, name in ((flag_upload, "--remote-upload"), (flag_execute, "--remote-exec")):
            if flag:
                raise RemoteConfigError(f"{name} needs a remote server: pass --remote URL, set MCPP_REMOTE, "
                                        f"or set `url` under [remote] in {os.path.join(home_root, CONFIG_FILE)}")
        return None
    timeout = float(table.get("timeout", 60.0))
    if timeout <= 0:
        raise RemoteConfigError("`remote.timeout` must be a positive number of seconds")
    sign_key, trusted = _keys(table, environ, home_root)
    target = parse_remote_url(url)
    return RemoteSettings(url=url, target=target, upload=upload,
                          instance_name=table.get("instance", ""), timeout=timeout,
                          sign_key=sign_key, trusted_keys=trusted,
                          security=_security(url, target, table, environ, home_root), execute=execute)


def _switch(flag: bool | None, environ: Mapping[str, str], var: str, table: dict[str, Any], key: str) -> bool:
    """A yes/no setting: the flag, else the environment variable, else the config key."""
    if flag is not None:
        return flag
    if environ.get(var) is not None:
        value = parse_switch(environ[var])
        if value is None:
            raise RemoteConfigError(f"{var}={environ[var]!r}: expected {SPELLINGS}")
        return value
    return bool(table.get(key, False))


_LOOPBACK = re.compile(r"(localhost|127(\.\d{1,3}){3}|\[::1\]):\d+")


def _security(url: str, target: str, table: dict[str, Any], environ: Mapping[str, str],
              home_root: str | os.PathLike[str]) -> ChannelSecurity:
    """TLS material and the bearer token, read now so that a bad path is a usage error."""
    where = os.path.join(home_root, CONFIG_FILE)
    tls = url.strip().startswith("grpcs://")

    def read(key: str) -> bytes | None:
        if not table.get(key):
            return None
        if not tls:
            raise RemoteConfigError(f"{where}: `remote.{key}` needs a grpcs:// URL (TLS), not `{url}`")
        path = os.path.join(home_root, os.path.expanduser(table[key]))
        try:
            with open(path, "rb") as f:
                return f.read()
        except OSError as e:
            raise RemoteConfigError(f"{where}: `remote.{key}`: cannot read {path}: {e.strerror}") from None

    ca, cert, key = read("tls-ca"), read("tls-cert"), read("tls-key")
    if (cert is None) != (key is None):
        raise RemoteConfigError(f"{where}: mutual TLS needs both `remote.tls-cert` and `remote.tls-key`")
    token_path = environ.get("MCPP_REMOTE_TOKEN_FILE") or (
        os.path.join(home_root, os.path.expanduser(table["token-file"])) if table.get("token-file") else None)
    token = None
    if token_path:
        origin = "MCPP_REMOTE_TOKEN_FILE" if environ.get("MCPP_REMOTE_TOKEN_FILE") else f"{where}: `remote.token-file`"
        try:
            with open(token_path, encoding="utf-8") as f:
                token = f.read().strip()
        except (OSError, UnicodeDecodeError) as e:
            raise RemoteConfigError(f"{origin}: cannot read {token_path}: "
                                    f"{getattr(e, 'strerror', None) or 'not text'}") from None
        if not token or any(c.isspace() for c in token):
            raise RemoteConfigError(f"{origin}: {token_path} must hold one token on one line")
        if not tls and not target.startswith("unix:") and not _LOOPBACK.fullmatch(target):
            raise RemoteConfigError(f"{origin}: a token is sent only over TLS (grpcs://), a unix socket or "
                                    f"to this machine (127.0.0.1, localhost), not in plain text to `{url}`")
    return ChannelSecurity(tls=tls, ca=ca, cert=cert, key=key, token=token)


def _keys(table: dict[str, Any], environ: Mapping[str, str], home_root: str | os.PathLike[str]
          ) -> tuple[SecretKey | None, tuple[PublicKey, ...] | None]:
    """The signing key (a path in MCPP_REMOTE_SIGN_KEY, relative to the working directory, or in
    `sign-key`, relative to $MCPP_HOME) and the trusted public keys."""
    from .signing import SigningKeyError, load_secret_key, parse_public_key

    where = os.path.join(home_root, CONFIG_FILE)
    try:
        sign_key = None
        if environ.get("MCPP_REMOTE_SIGN_KEY"):
            sign_key = load_secret_key(environ["MCPP_REMOTE_SIGN_KEY"])
        elif table.get("sign-key"):
            sign_key = load_secret_key(os.path.join(home_root, os.path.expanduser(table["sign-key"])))
    except SigningKeyError as e:
        raise RemoteConfigError(str(e)) from None
    if environ.get("MCPP_REMOTE_TRUSTED_KEYS", "").strip():
        texts, origin = [t for t in environ["MCPP_REMOTE_TRUSTED_KEYS"].split(",") if t.strip()], "MCPP_REMOTE_TRUSTED_KEYS"
    elif "trusted-keys" in table:
        texts, origin = table["trusted-keys"], f"{where}: `remote.trusted-keys`"
    else:
        return sign_key, None
    try:
        return sign_key, tuple(parse_public_key(t) for t in texts)
    except SigningKeyError as e:
        raise RemoteConfigError(f"{origin}: {e}") from None
