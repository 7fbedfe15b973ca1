"""`Settings`: what one command was told, read once: its flags, the `MCPP_*` environment,
`$MCPP_HOME` and `$MCPP_HOME/config.toml`.

The command line makes one `Settings` per command (`Settings.read`) and hands it down: the
build, the payload resolution and the remote layers take what they need from it, and `cas/`
takes its values as arguments. Precedence, for every setting that has several sources: a flag,
else the environment variable, else the config.toml key, else the default.

```
$MCPP_HOME                the home (engine/core/mcpp_home.py)
--remote / MCPP_REMOTE / [remote] url, and the other [remote] keys (cas/remote/config.py)
--remote-upload / MCPP_REMOTE_UPLOAD / [remote] upload
--remote-exec / MCPP_REMOTE_EXEC / [remote] execute
--remote-retries / [remote] retries; --remote-jobs / [remote] jobs; --remote-download / [remote] download
--remote-instance-name / [remote] instance; --remote-header KEY=VALUE / [remote] headers
MCPP_REMOTE_TOKEN_FILE, MCPP_REMOTE_SIGN_KEY, MCPP_REMOTE_TRUSTED_KEYS  over their [remote] keys
MCPP_REMOTE_EXEC_WAIT     how long remote execution waits for a worker
MCPP_PAYLOAD_*            the payload indexes, their trust and unpacking limits (engine/payloads/)
```

Values are read when the command starts and checked when a part asks for them, so a bad value
stops only a command that uses it (`mcpp new` does not care about `MCPP_REMOTE_UPLOAD`).
Which of these variables change what a build produces is registered in `engine/core/build_env.py`.
Read elsewhere, before a command's settings exist or outside a build: the warm server's
switches (`MCPP_NO_SERVER`, `MCPP_NO_FAST_PATH`, `MCPP_SERVER_*`: the thin client, the daemon),
`MCPP_TRACEBACK` (the command line's error handler), `MCPP_TEST_SLOW_NOTICE` (`mcpp test`) and
the build programs' limits `MCPP_PROGRAM_*` (engine/program/bounded.py).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping

from mcpp.cas.home import Home
from mcpp.cas.switch import SPELLINGS, parse_switch

from .config_file import ConfigFile
from .errors import McppError
from .mcpp_home import home_root

if TYPE_CHECKING:  # the remote's settings are imported only where a remote may be configured (`remote`)
    from mcpp.cas.remote.config import Override, RemoteSettings


@dataclass(frozen=True)
class RemoteFlags:
    """The command line's remote flags; None: the flag was not given."""

    url: str | None = None  # --remote
    upload: bool | None = None  # --remote-upload / --no-remote-upload
    execute: bool | None = None  # --remote-exec / --no-remote-exec
    retries: int | None = None  # --remote-retries
    instance_name: str | None = None  # --remote-instance-name
    remote_jobs: int | None = None  # --remote-jobs
    download: str | None = None  # --remote-download
    headers: tuple[str, ...] = ()  # --remote-header KEY=VALUE (repeatable)


@dataclass(frozen=True)
class Settings:
    """The settings a command runs with: the home, the configuration and what they decide."""
    home: Home
    config: ConfigFile = field(default_factory=lambda: ConfigFile(""))
    # the command's `MCPP_*` environment variables, as they were when it started
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    flags: RemoteFlags = RemoteFlags()

    @classmethod
    def read(cls, environ: Mapping[str, str], flags: RemoteFlags = RemoteFlags()) -> "Settings":
        """The settings of a command run with `environ` and `flags`: the home resolved and its
        config.toml parsed now, once."""
        home = Home(Path(home_root(environ)))
        return cls(home, ConfigFile.read(home.root),
                   MappingProxyType({k: v for k, v in environ.items() if k.startswith("MCPP_")}), flags)

    def with_flags(self, flags: RemoteFlags) -> "Settings":
        """These settings under a command's own remote flags."""
        return Settings(self.home, self.config, self.env, flags)

    def table(self, name: str) -> dict[str, Any]:
        """The `[name]` table of config.toml; raises `ConfigError` when the file cannot be used."""
        return self.config.table(name)

    # --- the remote cache and execution service ----------------------------------------------

    def remote(self) -> RemoteSettings | None:
        """The remote of a build, or None: `--remote` > `MCPP_REMOTE` > `[remote] url`, and the
        same order for every other remote setting. A usage error (exit 2) when unusable."""
        if not self.flags.url and not any(k.startswith("MCPP_REMOTE") for k in self.env) \
                and not self.table("remote"):
            found = None  # nothing names a server: no need to import the remote's settings
        else:
            found = self._remote()
        if found is None:
            for flag, name in ((self.flags.upload, "--remote-upload"), (self.flags.execute, "--remote-exec")):
                if flag:
                    raise McppError(f"{name} needs a remote server: pass --remote URL, set MCPP_REMOTE, "
                                    f"or set `url` under [remote] in {self.config.path}")
        return found

    def _remote(self) -> RemoteSettings | None:
        from mcpp.cas.remote.config import Chosen, RemoteConfigError, resolve_settings

        try:
            chosen = Chosen(
                url=self.flags.url or self.env.get("MCPP_REMOTE") or None,
                upload=self._switch(self.flags.upload, "MCPP_REMOTE_UPLOAD"),
                execute=self._switch(self.flags.execute, "MCPP_REMOTE_EXEC"),
                token_file=self._override("MCPP_REMOTE_TOKEN_FILE"),
                sign_key=self.env.get("MCPP_REMOTE_SIGN_KEY") or None,
                trusted_keys=self._override("MCPP_REMOTE_TRUSTED_KEYS"),
                retries=self.flags.retries, instance_name=self.flags.instance_name, headers=self.flags.headers,
                jobs=self.flags.remote_jobs, download=self.flags.download)
            return resolve_settings(chosen, self.table("remote"), self.home.root, self.config.path)
        except RemoteConfigError as e:
            raise McppError(str(e)) from None

    def remote_exec_wait(self) -> float | None:
        """`MCPP_REMOTE_EXEC_WAIT`: seconds remote execution waits for a worker; None: its default."""
        text = self.env.get("MCPP_REMOTE_EXEC_WAIT", "").strip()
        if not text:
            return None
        try:
            return float(text)
        except ValueError:
            raise McppError(f"MCPP_REMOTE_EXEC_WAIT={text!r}: expected a number of seconds") from None

    def _switch(self, flag: bool | None, var: str) -> bool | None:
        """A yes/no setting: the flag, else the environment variable; None leaves it to config.toml."""
        if flag is not None:
            return flag
        if var not in self.env:
            return None
        value = parse_switch(self.env[var])
        if value is None:
            from mcpp.cas.remote.config import RemoteConfigError

            raise RemoteConfigError(f"{var}={self.env[var]!r}: expected {SPELLINGS}")
        return value

    def _override(self, var: str) -> Override | None:
        from mcpp.cas.remote.config import Override

        value = self.env.get(var)
        return Override(value, var) if value else None


def command_settings() -> Settings:
    """The settings of the running command, from its environment (no flags)."""
    return Settings.read(os.environ)
