"""Where `$MCPP_HOME` is: the one resolver of the mcpp home directory.

Every part that needs the home asks this function: the settings of a command
(`engine/core/settings.py`), the no-op fast path (`engine/state/noop.py`, which answers before the engine
is imported) and the warm server's client (`engine/server/paths.py`, which names the server of
a home). One answer keeps them on one home; standard library only, so the two fast paths pay
no import for it.
"""

import os
from _collections_abc import Mapping  # what `collections.abc` re-exports, already loaded


def home_root(environ: Mapping[str, str]) -> str:
    """`$MCPP_HOME` as `environ` sets it, else `.mcpp` in `$HOME` (else the user's home directory)."""
    value = environ.get("MCPP_HOME")
    if value:
        return value
    return os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".mcpp")
