"""The remote settings a command gets, through the one settings object (engine/core/settings.py)."""
from __future__ import annotations

from mcpp.engine.core.settings import RemoteFlags, Settings


def remote_of(flag_url, flag_upload, environ, home, flag_execute=None):
    """`Settings.read` for a command run with these remote flags, `environ` and `$MCPP_HOME=home`,
    then its remote settings (None: no remote)."""
    env = {"MCPP_HOME": str(home), **environ}
    return Settings.read(env, RemoteFlags(flag_url, flag_upload, flag_execute)).remote()
