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
import re
from dataclasses import dataclass
from typing import Any, Iterator

from ..core.errors import Position
from ..core.shipped_packages import NAMESPACE as SHIPPED_NAMESPACE
from ..manifest.deps import INDEX_NAME, INDEX_NAMESPACE, MANIFEST_NAME, entries, is_payload_address, is_system_spec
from ..manifest.load import ManifestSource
from ..manifest.reader import Reader
from .errors import RegistryError

PLAIN = ("dependencies", "build-dependencies")
DEV = "dev-dependencies"


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


def _tables(doc: dict, dev: bool) -> Iterator[tuple[tuple, dict]]:
    """(keypath, table) of every dependency table of `doc`, conditional ones included."""
    def of(body: dict, prefix: tuple) -> Iterator[tuple[tuple, dict]]:
        for section in PLAIN + ((DEV,) if dev else ()):
            if isinstance(body.get(section), dict):
                yield prefix + (section,), body[section]
        gates = body.get("feature-deps")
        if isinstance(gates, dict):
            for f, table in gates.items():
                if isinstance(table, dict):
                    yield prefix + ("feature-deps", f), table
    yield from of(doc, ())
    blocks = doc.get("target")
    if isinstance(blocks, dict):
        for selector, body in blocks.items():
            if isinstance(body, dict):
                yield from of(body, ("target", selector))


def read_entries(source: ManifestSource, requirer: str, *, dev: bool,
                 origin: tuple[str, str, str] | None = None) -> Entries:
    """The index requirements and path dependencies of `source`; `origin`: the index release it
    is, whose path dependencies are requirements on the index (their `version`)."""
    published = origin is not None
    reader = Reader(source.path, source.text, source.smap)
    index: list[Requirement] = []
    paths: list[str] = []
    for keypath, table in _tables(source.doc, dev):
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


def has_index_entries(doc: dict[str, Any], dev: bool = True) -> bool:
    """Whether a manifest writes any index dependency (a cheap look, no position computed)."""
    for _kp, table in _tables(doc, dev):
        for rel, spec in entries(table):
            if is_payload_address(rel[-1]) or is_system_spec(spec):
                continue
            namespace = rel[0] if len(rel) == 2 else None
            if isinstance(spec, str) or (isinstance(spec, dict) and "path" not in spec
                                         and namespace != SHIPPED_NAMESPACE):
                return True
    return False


def path_dependencies(source: ManifestSource, dev: bool) -> list[str]:
    """The directories of the path dependencies `source` writes, in every section."""
    out = []
    for _kp, table in _tables(source.doc, dev):
        for _rel, spec in entries(table):
            if isinstance(spec, dict) and isinstance(spec.get("path"), str):
                out.append(os.path.normpath(os.path.join(source.root, spec["path"])))
    return out


def workspace_manifests(files: Any, member_roots: list[str]) -> Iterator[tuple[ManifestSource, bool]]:
    """(manifest, is a member) for the members and every package their path dependencies
    reach, each once; a path that holds no manifest is left to the loader to name."""
    seen: set[str] = set()
    queue = [(r, True) for r in member_roots]
    while queue:
        root, member = queue.pop(0)
        path = os.path.join(root, MANIFEST_NAME)
        if root in seen or not os.path.isfile(path):
            continue
        seen.add(root)
        source = files.get(path)
        yield source, member
        queue += [(p, False) for p in path_dependencies(source, dev=member)]


def any_index_entry(files: Any, member_roots: list[str]) -> bool:
    """Whether the workspace or a package its path dependencies reach writes an index dependency:
    what decides, cheaply, that a build needs the resolver (engine/registry/session.py) at all."""
    return any(has_index_entries(source.doc, dev=member) for source, member in workspace_manifests(files, member_roots))
