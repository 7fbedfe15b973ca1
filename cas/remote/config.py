"""Which remote cache a build talks to: the values the command chose over its `[remote]` table.

```toml
# $MCPP_HOME/config.toml
[remote]
url = "grpcs://cache.example.com:8980"  # TLS; "grpc://HOST:PORT" is plain text; or "unix:/run/buildgrid.sock"
upload = true          # like --remote-upload (CI writes; laptops read)
execute = true         # like --remote-exec: run actions on the server's workers (docs/remote.md)
instance = ""          # REAPI instance_name, when the server hosts several
timeout = 60           # seconds per request before the server counts as unavailable
connect-timeout = 5    # seconds the first request (GetCapabilities) may take: a server that never answers
download = "toplevel"  # like --remote-download: all, toplevel (target/'s artifacts) or minimal (what local actions need)
jobs = 32              # like --remote-jobs: remote lookups in flight at once, whatever -j is
retries = 5            # like --remote-retries: retries of one failed call (cas/remote/retry.py); 0: none
sign-key = "keys/ci.secret"                 # sign what this machine uploads (relative: to $MCPP_HOME)
trusted-keys = ["ci:Vf3x...=", "ci-old:..."]  # accept only results one of these keys signed
tls-ca = "ca.pem"      # grpcs:// only: the CA that signed the server's certificate (default: system roots)
tls-cert = "me.pem"    # mutual TLS: this client's certificate chain ...
tls-key = "me.key"     # ... and its private key
token-file = "token"   # sent as `authorization: Bearer <token>` (grpcs://, unix: or loopback only)
headers = { x-ci-run = "42" }  # like --remote-header KEY=VALUE: sent with every call
credential-helper = "gcloud-helper --scope cache"  # Bazel's protocol: `CMD get`, headers back (credential_helper.py)
```

Paths are relative to $MCPP_HOME. Without trusted keys every remote result is accepted
unverified (see docs/remote.md for the trust model).

This module reads no environment variable and no file but the key, certificate and token
files the settings name: the engine's settings (`engine/core/settings.py`) read the flags, the
environment and config.toml once and pass what they chose (`Chosen`) and the table. This
module imports no gRPC, so a build without a remote pays nothing for it.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .retry import DEFAULT_RETRIES

DEFAULT_JOBS = 32  # lookups mostly wait on the network: far more of them than cores

if TYPE_CHECKING:  # the key code is imported by a build that has a remote (see `_keys`)
    from .signing import PublicKey, SecretKey

# key -> what `isinstance` accepts for its value (a type, or a tuple of types)
_KEYS: dict[str, Any] = {"url": str, "upload": bool, "instance": str, "timeout": (int, float), "sign-key": str,
         "trusted-keys": list, "tls-ca": str, "tls-cert": str, "tls-key": str, "token-file": str,
         "execute": bool, "retries": int,
         "connect-timeout": (int, float), "headers": dict, "credential-helper": str, "jobs": int,
         "download": str}
# What a remote hit downloads (`--remote-download`): every output, the top-level artifacts of
# target/<profile>/ (and what local actions read), or only what local actions read.
DOWNLOAD_MODES = ("all", "toplevel", "minimal")


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
    # sent with every call (--remote-header, `headers`); values may be credentials: never shown
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    # the credential helper's argv (`credential-helper`), run when the channel opens
    credential_helper: tuple[str, ...] | None = None


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
    retries: int = DEFAULT_RETRIES  # per call, under a per-build budget (retry.py)
    connect_timeout: float = 5.0  # the first call's deadline (GetCapabilities)
    jobs: int = DEFAULT_JOBS  # remote lookups in flight at once (the build runs at least -j)
    download: str = "toplevel"  # one of DOWNLOAD_MODES


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


def check_table(table: dict[str, Any], where: str) -> dict[str, Any]:
    """The `[remote]` table of the configuration file `where` (named in messages), checked."""
    for key, value in table.items():
        want = _KEYS.get(key)
        if want is None:
            raise RemoteConfigError(f"{where}: unknown key `remote.{key}`; accepted: {', '.join(_KEYS)}")
        if not isinstance(value, want) or (want is not bool and isinstance(value, bool)):
            kind = {str: "a string", bool: "true or false", list: "a list of strings",
                    int: "a whole number", dict: "a table of strings"}.get(want, "a number of seconds")
            raise RemoteConfigError(f"{where}: `remote.{key}` must be {kind}")
        if want is list and not all(isinstance(v, str) for v in value):
            raise RemoteConfigError(f"{where}: `remote.{key}` must be a list of strings")
        if want is dict and not all(isinstance(v, str) for v in value.values()):
            raise RemoteConfigError(f"{where}: `remote.{key}` must be a table of strings")
    return table


@dataclass(frozen=True, slots=True)
class Override:
    """A value set outside the `[remote]` table (by a flag or an environment variable), which
    wins over the table's; `origin` names where it was set, for messages."""

    value: str
    origin: str


@dataclass(frozen=True, slots=True)
class Chosen:
    """What the command chose outside the `[remote]` table (the engine's settings: flags, then
    environment variables); None leaves a setting to the table."""

    url: str | None = None
    upload: bool | None = None
    execute: bool | None = None
    token_file: Override | None = None  # a path, relative to the working directory
    sign_key: str | None = None  # a path, relative to the working directory
    trusted_keys: Override | None = None  # comma-separated public keys
    retries: int | None = None  # --remote-retries
    instance_name: str | None = None  # --remote-instance-name
    jobs: int | None = None  # --remote-jobs
    headers: tuple[str, ...] = ()  # --remote-header KEY=VALUE, each as given
    download: str | None = None  # --remote-download


def resolve_settings(chosen: Chosen, table: dict[str, Any], home_root: str | os.PathLike[str],
                     where: str) -> RemoteSettings | None:
    """The remote settings of one build from `chosen` over the `[remote]` `table` of the
    configuration file `where` (paths in it are relative to `home_root`); None when no server
    is named."""
    table = check_table(table, where)
    url = chosen.url or table.get("url") or None
    if url is None:
        return None
    upload = chosen.upload if chosen.upload is not None else bool(table.get("upload", False))
    execute = chosen.execute if chosen.execute is not None else bool(table.get("execute", False))
    timeout = float(table.get("timeout", 60.0))
    if timeout <= 0:
        raise RemoteConfigError("`remote.timeout` must be a positive number of seconds")
    connect_timeout = float(table.get("connect-timeout", 5.0))
    if connect_timeout <= 0:
        raise RemoteConfigError("`remote.connect-timeout` must be a positive number of seconds")
    retries = chosen.retries if chosen.retries is not None else table.get("retries", DEFAULT_RETRIES)
    if retries < 0:
        raise RemoteConfigError("`remote.retries` must be 0 or more (0: no retries)")
    jobs = chosen.jobs if chosen.jobs is not None else table.get("jobs", DEFAULT_JOBS)
    if not 1 <= jobs <= 1024:
        raise RemoteConfigError("`remote.jobs` must be a number of lookups from 1 to 1024")
    download = chosen.download if chosen.download is not None else table.get("download", "toplevel")
    if download not in DOWNLOAD_MODES:
        raise RemoteConfigError(f"{where}: `remote.download` must be one of {', '.join(DOWNLOAD_MODES)}")
    sign_key, trusted = _keys(chosen, table, home_root, where)
    target = parse_remote_url(url)
    return RemoteSettings(url=url, target=target, upload=upload,
                          instance_name=chosen.instance_name if chosen.instance_name is not None
                          else table.get("instance", ""), timeout=timeout,
                          sign_key=sign_key, trusted_keys=trusted,
                          security=_security(url, target, table, chosen, home_root, where), execute=execute,
                          retries=retries, connect_timeout=connect_timeout, jobs=jobs, download=download)


_LOOPBACK = re.compile(r"(localhost|127(\.\d{1,3}){3}|\[::1\]):\d+")


def _security(url: str, target: str, table: dict[str, Any], chosen: Chosen,
              home_root: str | os.PathLike[str], where: str) -> ChannelSecurity:
    """TLS material and the bearer token, read now so that a bad path is a usage error."""
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
    if chosen.token_file is not None:
        token_path, origin = chosen.token_file.value, chosen.token_file.origin
    elif table.get("token-file"):
        token_path, origin = os.path.join(home_root, os.path.expanduser(table["token-file"])), \
            f"{where}: `remote.token-file`"
    else:
        token_path = origin = ""
    token = None
    if token_path:
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
    helper = _credential_helper(table, home_root, where)
    if helper is not None and not tls and not target.startswith("unix:") and not _LOOPBACK.fullmatch(target):
        raise RemoteConfigError(f"{where}: `remote.credential-helper`: credentials are sent only over TLS "
                                f"(grpcs://), a unix socket or to this machine, not in plain text to `{url}`")
    return ChannelSecurity(tls=tls, ca=ca, cert=cert, key=key, token=token,
                           headers=_headers(chosen, table, where), credential_helper=helper)


_HEADER_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]*")
_RESERVED = ("grpc-", ":")


def header(name: str, value: str, origin: str) -> tuple[str, str]:
    """A call header as gRPC metadata wants it: a lower-case name of `[a-z0-9_.-]` (not `grpc-*`,
    not a binary `*-bin` one) and a printable ASCII value. The value is never quoted in a message."""
    name = name.strip().lower()
    if not _HEADER_NAME.fullmatch(name) or name.startswith(_RESERVED) or name.endswith("-bin"):
        raise RemoteConfigError(f"{origin}: `{name}` is not a header name mcpp sends (letters, digits, "
                                "`-`, `_`, `.`; not grpc-*, not *-bin)")
    if not all(" " <= c <= "~" for c in value):
        raise RemoteConfigError(f"{origin}: the value of header `{name}` must be printable ASCII")
    return name, value


def _headers(chosen: Chosen, table: dict[str, Any], where: str) -> tuple[tuple[str, str], ...]:
    """`headers` of the table, then --remote-header (which wins for a name both set)."""
    out = dict(header(k, v, f"{where}: `remote.headers`") for k, v in table.get("headers", {}).items())
    for text in chosen.headers:
        name, eq, value = text.partition("=")
        if not eq:
            raise RemoteConfigError(f"--remote-header `{name}`: expected KEY=VALUE")
        k, v = header(name, value, "--remote-header")
        out[k] = v
    return tuple(out.items())


def _credential_helper(table: dict[str, Any], home_root: str | os.PathLike[str], where: str
                       ) -> tuple[str, ...] | None:
    """`credential-helper` as an argv: split as a shell would (no shell runs it); a relative
    program path with a `/` is relative to $MCPP_HOME, a bare name is looked up on PATH."""
    import shlex

    text = table.get("credential-helper")
    if not text:
        return None
    try:
        argv = shlex.split(text)
    except ValueError as e:
        raise RemoteConfigError(f"{where}: `remote.credential-helper`: {e}") from None
    if not argv:
        raise RemoteConfigError(f"{where}: `remote.credential-helper` names no program")
    program = os.path.expanduser(argv[0])
    if "/" in program and not os.path.isabs(program):
        program = os.path.join(home_root, program)
    return (program, *argv[1:])


def _keys(chosen: Chosen, table: dict[str, Any], home_root: str | os.PathLike[str], where: str
          ) -> tuple[SecretKey | None, tuple[PublicKey, ...] | None]:
    """The signing key (`chosen.sign_key`, relative to the working directory, or `sign-key`,
    relative to $MCPP_HOME) and the trusted public keys."""
    from .signing import SigningKeyError, load_secret_key, parse_public_key

    try:
        sign_key = None
        if chosen.sign_key:
            sign_key = load_secret_key(chosen.sign_key)
        elif table.get("sign-key"):
            sign_key = load_secret_key(os.path.join(home_root, os.path.expanduser(table["sign-key"])))
    except SigningKeyError as e:
        raise RemoteConfigError(str(e)) from None
    if chosen.trusted_keys is not None and chosen.trusted_keys.value.strip():
        texts, origin = [t for t in chosen.trusted_keys.value.split(",") if t.strip()], chosen.trusted_keys.origin
    elif "trusted-keys" in table:
        texts, origin = table["trusted-keys"], f"{where}: `remote.trusted-keys`"
    else:
        return sign_key, None
    try:
        return sign_key, tuple(parse_public_key(t) for t in texts)
    except SigningKeyError as e:
        raise RemoteConfigError(f"{origin}: {e}") from None
