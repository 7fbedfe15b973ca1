"""Which release `mcpp add NAME` writes a requirement for: the highest release of the library
index that is not yanked (and meets `@REQ` when one is given).

The index is opened by engine/registry/location.py (`MCPP_INDEX` or `[index] url`, under the
payload index's trust rules). A release is a library release when it has a `source`.
"""
from __future__ import annotations

from ..core.errors import McppError
from ..manifest import version_req
from ..payloads.errors import PayloadError
from ..payloads.index import Index
from ..payloads.version import key as version_key


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
    releases = [r for r in descriptor.releases if "source" in r.sources and not r.yanked]
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
