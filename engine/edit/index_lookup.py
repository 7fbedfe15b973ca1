"""Which release `mcpp add NAME` writes a requirement for: the highest release of the library
index that is not yanked (and meets `@REQ` when one is given).

The index is opened by engine/registry/location.py (`MCPP_INDEX` or `[index] url`, under the
payload index's trust rules). A release is a library release when it has a `source`.
"""
from __future__ import annotations

from ..core.errors import McppError
from ..payloads.errors import PayloadError
from ..payloads.index import Index
from ..registry.session import library_versions


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
    versions = library_versions(descriptor)
    if not versions:
        raise McppError(f"package `{shown}` has no library release in the index {index.location} "
                        f"(a release with a `source`, not yanked)")
    if requirement is None:
        return versions[-1]
    matching = library_versions(descriptor, requirement)
    if not matching:
        raise McppError(f"no release of `{shown}` matches `{requirement}` in the index {index.location}; "
                        f"available: {', '.join(versions)}")
    return matching[-1]
