"""Whether a workspace writes any index dependency, read cheaply from the manifests as written:
what decides that a build imports the resolver (engine/registry/session.py, requirements.py) at
all. A workspace without index dependencies reads nothing of the registry but this."""
from __future__ import annotations

import os
from typing import Any, Iterator

from ..core.shipped_packages import NAMESPACE as SHIPPED_NAMESPACE
from ..manifest.deps import MANIFEST_NAME, entries, is_payload_address, is_system_spec
from ..manifest.load import ManifestSource

PLAIN = ("dependencies", "build-dependencies")
DEV = "dev-dependencies"


def dependency_tables(doc: dict, dev: bool) -> Iterator[tuple[tuple, dict]]:
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


def has_index_entries(doc: dict[str, Any], dev: bool = True) -> bool:
    """Whether a manifest writes any index dependency (a cheap look, no position computed)."""
    for _kp, table in dependency_tables(doc, dev):
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
    for _kp, table in dependency_tables(source.doc, dev):
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
