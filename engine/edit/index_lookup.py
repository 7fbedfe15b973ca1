"""Which release `mcpp add NAME` writes a requirement for: the highest release of the library
index that is not yanked (and meets `@REQ` when one is given).

The library index is `MCPP_INDEX` or `[index] url` in `$MCPP_HOME/config.toml` (a directory, a
`file://` or an `http(s)://` URL; a relative directory is taken against the working directory for
the variable and against `$MCPP_HOME` for the file). It is read with the payload index's client
(engine/payloads/index.py) under the payload index's trust rules: a plain-http index must be
signed by a trusted key, or accepted with `MCPP_PAYLOAD_INDEX_INSECURE=1`. A release is a library
release when it has a `source`.
"""
from __future__ import annotations

import os

from ..core.errors import McppError
from ..core.settings import Settings
from ..manifest import version_req
from ..payloads.errors import PayloadError
from ..payloads.index import Index, is_url, trust
from ..payloads.version import key as version_key

ENV = "MCPP_INDEX"


def library_index(settings: Settings, warn=None) -> Index:
    location = settings.env.get(ENV, "").strip()
    if not location:
        url = settings.table("index").get("url")
        if url is not None and not isinstance(url, str):
            raise McppError(f"{settings.config.path}: `[index] url` must be a directory or URL")
        if url:
            location = url if is_url(url) or os.path.isabs(url) else os.path.join(str(settings.home.root), url)
    if not location:
        raise McppError("no library index is configured: set MCPP_INDEX or `[index] url` in "
                        f"{settings.config.path}",
                        notes=["help: or add a dependency on a local package with `--path DIR`"])
    try:
        return Index(location, trust(settings.env, settings.config, warn))
    except PayloadError as e:
        raise McppError(e.message, notes=e.notes) from None


def chosen_release(index: Index, namespace: str, name: str, requirement: str | None) -> str:
    """The highest non-yanked library release of `namespace.name` meeting `requirement`."""
    shown = name if namespace == "mcpplibs" else f"{namespace}.{name}"
    try:
        descriptor = index.descriptor(namespace, name)
    except PayloadError as e:
        raise McppError(e.message, notes=e.notes) from None
    if descriptor is None:
        raise McppError(f"package `{shown}` is not in the index {index.location} "
                        f"(no pkgs/{namespace}/{name}.toml)")
    releases = [r for r in descriptor.releases if "source" in r.sources and not getattr(r, "yanked", False)]
    versions = sorted((r.version for r in releases), key=version_key)
    if not versions:
        raise McppError(f"package `{shown}` has no library release in the index {index.location} "
                        f"(a release with a `source`, not yanked)")
    if requirement is None:
        return versions[-1]
    matching = [v for v in versions if _satisfies(v, requirement)]
    if not matching:
        raise McppError(f"no release of `{shown}` matches `{requirement}` in the index {index.location}; "
                        f"available: {', '.join(versions)}")
    return matching[-1]


def _satisfies(version: str, requirement: str) -> bool:
    try:
        return version_req.satisfies(version, requirement)
    except ValueError:
        return False
