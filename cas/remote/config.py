"""Which remote cache a build talks to: `--remote` > `MCPP_REMOTE` > `[remote]` in config.toml.

```toml
# $MCPP_HOME/config.toml
[remote]
url = "grpc://cache.example.com:8980"   # or "unix:/run/buildgrid.sock"
upload = true          # like --remote-upload (CI writes; laptops read)
instance = ""          # REAPI instance_name, when the server hosts several
timeout = 60           # seconds per request before the server counts as unavailable
```

The same precedence holds for uploading: `--remote-upload`/`--no-remote-upload` >
`MCPP_REMOTE_UPLOAD` (1/0, true/false, yes/no, on/off) > `upload`. This module imports no gRPC,
so a build without a remote pays nothing for it.
"""
from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from typing import Mapping

CONFIG_FILE = "config.toml"
_KEYS = {"url": str, "upload": bool, "instance": str, "timeout": (int, float)}
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class RemoteConfigError(ValueError):
    """A remote setting that cannot be used; the message says what is accepted."""


@dataclass(frozen=True, slots=True)
class RemoteSettings:
    url: str  # as the user wrote it (shown in messages)
    target: str  # as gRPC wants it: "host:port" or "unix:/path"
    upload: bool = False
    instance_name: str = ""
    timeout: float = 60.0


def parse_remote_url(url: str) -> str:
    """`grpc://HOST:PORT` -> `HOST:PORT`; `unix:PATH` (or `unix://PATH`) -> `unix:/abs/PATH`."""
    text = url.strip()
    m = re.fullmatch(r"grpc://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})/?", text)
    if m and 0 < int(m.group(2)) < 65536:
        return f"{m.group(1)}:{m.group(2)}"
    if text.startswith("unix:"):
        path = text[len("unix:"):]
        if path.startswith("//"):
            path = path[2:]
        if path:
            return "unix:" + os.path.abspath(path)
    hint = " (TLS is not supported yet)" if text.startswith(("grpcs://", "https://")) else ""
    raise RemoteConfigError(f"invalid remote cache URL `{url}`{hint}: expected grpc://HOST:PORT "
                            "(e.g. grpc://localhost:50051) or unix:PATH (e.g. unix:/run/buildgrid.sock)")


def load_config(home_root: str | os.PathLike[str]) -> dict:
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
            kind = {str: "a string", bool: "true or false"}.get(want, "a number of seconds")  # type: ignore[call-overload]
            raise RemoteConfigError(f"{path}: `remote.{key}` must be {kind}")
    return table


def resolve_settings(flag_url: str | None, flag_upload: bool | None, environ: Mapping[str, str],
                     home_root: str | os.PathLike[str]) -> RemoteSettings | None:
    """The remote settings of one build, or None when no remote cache is configured."""
    table = load_config(home_root)
    url = flag_url or environ.get("MCPP_REMOTE") or table.get("url") or None
    upload = flag_upload
    if upload is None and environ.get("MCPP_REMOTE_UPLOAD") is not None:
        value = environ["MCPP_REMOTE_UPLOAD"].strip().lower()
        if value not in _TRUE | _FALSE:
            raise RemoteConfigError(f"MCPP_REMOTE_UPLOAD={environ['MCPP_REMOTE_UPLOAD']!r}: expected 1 or 0 "
                                    "(also true/false, yes/no, on/off)")
        upload = value in _TRUE
    if upload is None:
        upload = bool(table.get("upload", False))
    if url is None:
        if flag_upload:
            raise RemoteConfigError("--remote-upload needs a remote cache: pass --remote URL, set MCPP_REMOTE, "
                                    f"or set `url` under [remote] in {os.path.join(home_root, CONFIG_FILE)}")
        return None
    timeout = float(table.get("timeout", 60.0))
    if timeout <= 0:
        raise RemoteConfigError("`remote.timeout` must be a positive number of seconds")
    return RemoteSettings(url=url, target=parse_remote_url(url), upload=upload,
                          instance_name=table.get("instance", ""), timeout=timeout)
