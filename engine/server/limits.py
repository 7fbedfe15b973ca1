"""What a server may cost: how long it idles before it exits, how many servers one home keeps.

```toml
[server]            # in $MCPP_HOME/config.toml
idle-timeout = 900  # seconds an idle server waits for its next build (MCPP_SERVER_IDLE over it)
max-servers = 4     # servers of this home at most: a new one makes the least recently used exit
```

Read by the server when it starts (the client never parses config.toml: it runs before the
engine is imported). A value that cannot be used is said by the server to the build it is asked
for (the client warns and builds in process), and the server exits: the next build starts one
that reads the settings again.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from ..core.config_file import ConfigError, ConfigFile

IDLE_ENV = "MCPP_SERVER_IDLE"
DEFAULT_IDLE_S = 15 * 60
DEFAULT_MAX_SERVERS = 4
_KEYS = {"idle-timeout": "a positive number of seconds", "max-servers": "a positive whole number"}


@dataclass(frozen=True)
class Limits:
    idle_s: float = DEFAULT_IDLE_S
    max_servers: int = DEFAULT_MAX_SERVERS


def read(environ: Mapping[str, str], home: str) -> Limits:
    """The limits for a server of `home`: `MCPP_SERVER_IDLE`, else `[server] idle-timeout`, else
    15 minutes; `[server] max-servers`, else 4. Raises ConfigError naming the value at fault."""
    config = ConfigFile.read(home)
    table = config.table("server")
    for key in table:
        if key not in _KEYS:
            raise ConfigError(f"{config.path}: unknown key `server.{key}`; accepted: {', '.join(_KEYS)}")
    idle = _seconds(table.get("idle-timeout", DEFAULT_IDLE_S), f"{config.path}: `server.idle-timeout`")
    if IDLE_ENV in environ:
        idle = _seconds(environ[IDLE_ENV], IDLE_ENV)
    most = table.get("max-servers", DEFAULT_MAX_SERVERS)
    if isinstance(most, bool) or not isinstance(most, int) or most < 1:
        raise ConfigError(f"{config.path}: `server.max-servers` must be {_KEYS['max-servers']}, not {most!r}")
    return Limits(idle, most)


def _seconds(value, where: str) -> float:
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{where} must be {_KEYS['idle-timeout']}, not {value!r}")
    return float(value)
