"""What a manifest asks of the index: every index dependency it writes, in every section.

A lock holds for every build of the workspace, whatever its target, features or command, so the
requirements are read from the manifest as written, not as folded for one build: `[dependencies]`,
`[build-dependencies]`, every `[feature-deps.<f>]`, the same sections under every
`[target.<selector>]`, and `[dev-dependencies]` for the packages of the workspace (a dependency's
dev-dependencies are never built, as in Cargo). The manifest has been validated whole
(manifest/load.py) before it is read here, so the shapes are known good.

An index package's manifest is read the same way; there a path dependency must carry a
`version`, which is what it requires of the index (a workspace member published with its
siblings as path dependencies: docs/dependencies.md).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from ..core.errors import Position
from ..core.shipped_packages import NAMESPACE as SHIPPED_NAMESPACE
from ..manifest.deps import INDEX_NAME, INDEX_NAMESPACE, entries, is_payload_address, is_system_spec
from ..manifest.load import ManifestSource
from ..manifest.reader import Reader
from .errors import RegistryError
from .presence import dependency_tables

@dataclass(frozen=True)
class Requirement:
    requirer: str  # who asks: `app`, or `shout 1.1.0` for an index package
    namespace: str
    name: str
    requirement: str  # as written (version_req.py)
    pos: Position | None = None
    origin: tuple[str, str, str] | None = None  # (namespace, name, version) of the index release asking

    @property
    def package(self) -> tuple[str, str]:
        return self.namespace, self.name


@dataclass(frozen=True)
class Entries:
    """One manifest's dependency entries: index requirements and path dependencies' roots."""
    index: tuple[Requirement, ...]
    paths: tuple[str, ...]


def read_entries(source: ManifestSource, requirer: str, *, dev: bool,
                 origin: tuple[str, str, str] | None = None) -> Entries:
    """The index requirements and path dependencies of `source`; `origin`: the index release it
    is, whose path dependencies are requirements on the index (their `version`)."""
    published = origin is not None
    reader = Reader(source.path, source.text, source.smap)
    index: list[Requirement] = []
    paths: list[str] = []
    for keypath, table in dependency_tables(source.doc, dev):
        for rel, spec in entries(table):
            key = rel[-1]
            if is_payload_address(key) or not isinstance(spec, (str, dict)) or is_system_spec(spec):
                continue
            namespace = rel[0] if len(rel) == 2 else None
            kp = keypath + rel
            if isinstance(spec, dict) and "path" in spec and not published:
                if isinstance(spec["path"], str):
                    paths.append(os.path.normpath(os.path.join(source.root, spec["path"])))
                continue
            if not all(INDEX_NAME.match(word) for word in rel):
                raise RegistryError(f"dependency `{'.'.join(rel)}` of `{requirer}`: an index package's name and "
                                    f"namespace are letters, digits, `-` and `_`, starting with a letter",
                                    reader.pos(kp, "key"))
            if isinstance(spec, str):
                index.append(Requirement(requirer, namespace or INDEX_NAMESPACE, key, spec, reader.pos(kp), origin))
                continue
            path, version = spec.get("path"), spec.get("version")
            if namespace == SHIPPED_NAMESPACE and path is None:
                continue  # shipped with mcpp (core/shipped_packages.py)
            if path is None or published:
                if not isinstance(version, str):
                    raise RegistryError(f"dependency `{key}` of `{requirer}` is a path dependency without a "
                                        f"`version`; a published package names what it needs from the index",
                                        reader.pos(kp, "key"))
                index.append(Requirement(requirer, namespace or INDEX_NAMESPACE, key, version,
                                         reader.pos(kp + ("version",)), origin))
    return Entries(tuple(index), tuple(paths))
