"""`$MCPP_HOME/config.toml`: the one parser of the user's configuration.

```toml
[remote]     # the remote cache and execution service (cas/remote/config.py lists the keys)
[payloads]   # payload indexes and their trusted keys (engine/payloads/index.py)
[cache]      # max-size = "2G": the home bounded after builds (engine/state/home_gc.py)
```

The file is read and parsed once per command, when its settings are made
(`engine/core/settings.py`); each part then takes its own table. A file that cannot be used is an
error only for a part that asks for a table, so a command that needs none (`mcpp new`,
`mcpp cache dir`) is not stopped by it.
"""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from typing import Any, Mapping

from .errors import McppError

CONFIG_FILE = "config.toml"


class ConfigError(McppError):
    """`config.toml` cannot be read or parsed, or a table is not a table; the message names the file."""


@dataclass(frozen=True)
class ConfigFile:
    """The user's `config.toml`, parsed (empty when there is none)."""
    path: str
    data: Mapping[str, Any] = field(default_factory=dict)  # the parsed document; {} when there is no file
    problem: str | None = None  # why the file cannot be used, raised by `table`

    @classmethod
    def read(cls, home_root: str | os.PathLike[str]) -> "ConfigFile":
        path = os.path.join(home_root, CONFIG_FILE)
        try:
            with open(path, "rb") as f:
                return cls(path, tomllib.load(f))
        except FileNotFoundError:
            return cls(path)
        except tomllib.TOMLDecodeError as e:
            return cls(path, problem=f"{path}: {e}")
        except UnicodeDecodeError as e:
            return cls(path, problem=f"{path}: not UTF-8 text (byte {e.start})")
        except RecursionError:
            return cls(path, problem=f"{path}: tables or arrays nest too deeply")
        except OSError as e:
            return cls(path, problem=f"{path}: cannot read: {e.strerror}")

    def table(self, name: str) -> dict[str, Any]:
        """The `[name]` table ({} when the file or the table is absent)."""
        if self.problem is not None:
            raise ConfigError(self.problem)
        value = self.data.get(name, {})
        if not isinstance(value, dict):
            raise ConfigError(f"{self.path}: `{name}` must be a table ([{name}])")
        return value
