"""Where the library index is: `MCPP_INDEX`, else `[index] url` in `$MCPP_HOME/config.toml`.

A directory, a `file://` URL or an `http(s)://` URL, read by the payload index's reader
(engine/payloads/index.py) under the payloads' trust rules: a plain-http index is believed only
for descriptors signed by a key of `[payloads] trusted-keys` / `MCPP_PAYLOAD_TRUSTED_KEYS`, or
with the explicit `MCPP_PAYLOAD_INDEX_INSECURE=1`. Nothing here reads the index: it is opened
only when resolution needs a package the lockfile and the cache cannot supply.
"""
from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from ..core.config_file import ConfigError
from ..payloads.errors import PayloadError
from ..payloads.index import Index, is_url, trust
from .errors import RegistryError

if TYPE_CHECKING:
    from ..core.settings import Settings

ENV = "MCPP_INDEX"


def configured(settings: Settings) -> str | None:
    """The index location as configured (relative paths: to `$MCPP_HOME`), or None."""
    text = settings.env.get(ENV, "").strip()
    if text:
        return text if is_url(text) else os.path.abspath(text)
    try:
        table = settings.table("index")
    except ConfigError as e:
        raise RegistryError(e.message) from None
    url = table.get("url")
    if url is None:
        return None
    if not isinstance(url, str) or not url.strip():
        raise RegistryError(f"{settings.config.path}: `[index] url` must be a directory or a URL")
    return url if is_url(url) or os.path.isabs(url) else os.path.join(str(settings.home.root), url)


def source_id(location: str) -> str:
    """How a lockfile names the index a package came from: `index+<url>`."""
    return f"index+{location}"


def open_index(settings: Settings, needed_for: str) -> Index:
    """The library index; an error naming `needed_for` when none is configured."""
    location = configured(settings)
    if location is None:
        raise RegistryError(f"{needed_for} needs the library index, and none is configured",
                            notes=[f"help: set {ENV} to a directory or URL, or `url` under [index] in "
                                   f"{settings.config.path}"])
    try:
        t = trust(settings.env, settings.config, warn=lambda m: print(f"warning: {m}", file=sys.stderr))
    except PayloadError as e:
        raise RegistryError(e.message, notes=e.notes) from None
    return Index(location, t)
