"""One command's index dependencies: read what the workspace requires, resolve it against the
lock (and the index where the lock cannot answer), write the lock when it changed, and give the
loader the directory of each package (`resolve_workspace`). `refresh_lock` is the same resolution for a
command that edits a manifest (`mcpp add`, `mcpp remove`) or asks for newer versions (`mcpp update`).

A workspace that writes no index dependency pays nothing here: `resolve_workspace` looks at the manifests
the loader parses anyway and returns None without touching a lockfile or an index.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Protocol

from mcpp.cas.atomic import PUBLIC, write_atomic

from ..core.manifest_search import manifests_above
from ..manifest import version_req
from ..manifest.deps import INDEX_NAMESPACE, MANIFEST_NAME
from ..manifest.load import ManifestSource, parse_manifest
from ..manifest.reader import display_path
from ..payloads.descriptor import Descriptor
from ..payloads.index import Index
from ..payloads.errors import PayloadError
from .cache import Sources, find_release
from .errors import RegistryError
from .location import configured, open_index, source_id
from .lockfile import Lock, Locked, changes, lock_path, read_lock
from .presence import any_index_entry, workspace_manifests
from .requirements import Requirement, read_entries
from .resolver import Candidate, Package, resolve, version_order

if TYPE_CHECKING:
    from ..core.settings import Settings

VENDOR_DEFAULT = "vendor"


class Files(Protocol):
    def get(self, path: str) -> ManifestSource: ...


@dataclass(frozen=True)
class Options:
    locked: bool = False  # --locked: refuse any change to the lock
    offline: bool = False  # --offline: the source cache or the vendor directory only
    update: tuple[str, ...] | None = None  # `mcpp update`: () every package, else these names


@dataclass
class Resolution:
    lock_file: str
    lock: Lock
    changed: list[str]  # what the lock gained, lost or moved (`changes`)
    sources: Sources
    roots: dict[Package, str] = field(default_factory=dict)  # where the build reads each package

    def root_of(self, namespace: str, name: str, target_dir: str) -> str | None:
        key = (namespace, name)
        if key not in self.roots:
            locked = self.lock.packages.get(key)
            if locked is None:
                return None
            self.roots[key] = self.sources.build_root(locked, target_dir)
        return self.roots[key]


def workspace_requirements(files: Files, member_roots: list[str]) -> list[Requirement]:
    """The index requirements of the workspace: its members' (dev-dependencies included) and
    those of every package their path dependencies reach."""
    out: list[Requirement] = []
    for source, member in workspace_manifests(files, member_roots):
        out += read_entries(source, source.base.name or display_path(source.root), dev=member).index
    return out


class _Universe:
    """What resolution asks of the index and of the releases themselves, each answered once."""

    def __init__(self, settings: Settings, files: Files, sources: Sources, old: Lock | None,
                 index: Callable[[], Index], may_read_index: str | None):
        self.settings = settings
        self.files = files
        self.sources = sources
        self.old = old
        self._index = index
        self.may_read_index = may_read_index  # why the index may not be read, or None
        self._requirements: dict[tuple[Package, str], tuple[Requirement, ...]] = {}
        self.digests: dict[tuple[Package, str], str] = {}

    def _descriptor(self, package: Package):
        if self.may_read_index is not None:
            ns, name = package
            raise RegistryError(f"{self.may_read_index}: `{ns}.{name}` needs the library index (the lock does not "
                                f"hold a version meeting what the manifests ask)",
                                notes=["help: build once online (or run `mcpp update`) to lock it"])
        index = self._index()
        try:
            return index, index.descriptor(*package)
        except PayloadError as e:
            raise RegistryError(e.message, e.pos, e.notes) from None

    def versions(self, package: Package) -> list[Candidate]:
        _index, desc = self._descriptor(package)
        if desc is None:
            return []
        out = []
        for r in desc.releases:
            if r.library is not None:
                out.append(Candidate(r.version, r.yanked))
                self.digests.setdefault((package, r.version), r.library.blake3)
        return out

    def digest(self, package: Package, version: str) -> str:
        locked = self.old.packages.get(package) if self.old is not None else None
        if locked is not None and locked.version == version:
            return locked.blake3
        if (package, version) not in self.digests:
            _index, desc = self._descriptor(package)
            release = find_release(desc, version) if desc is not None else None
            if release is None or release.library is None:
                raise RegistryError(f"the library index has no release {version} of `{package[0]}.{package[1]}`")
            self.digests[(package, version)] = release.library.blake3
        return self.digests[(package, version)]

    def locked(self, package: Package, version: str) -> Locked:
        old = self.old.packages.get(package) if self.old is not None else None
        if old is not None and old.version == version:
            return old
        location = configured(self.settings)
        return Locked(package[0], package[1], version, source_id(location or "?"), self.digest(package, version))

    def requirements(self, package: Package, version: str) -> tuple[Requirement, ...]:
        key = (package, version)
        if key not in self._requirements:
            ns, name = package
            tree = self.sources.unpacked(self.locked(package, version))
            path = os.path.join(tree, MANIFEST_NAME)
            if not os.path.isfile(path):
                raise RegistryError(f"`{ns}.{name} {version}` of the library index has no {MANIFEST_NAME}")
            source = self.files.get(path)
            base = source.base
            if base.name != name or (base.namespace or INDEX_NAMESPACE) != ns or base.version != version:
                raise RegistryError(f"the library index's `{ns}.{name} {version}` holds a manifest for "
                                    f"`{base.namespace or INDEX_NAMESPACE}.{base.name} {base.version}`; refused",
                                    notes=[f"note: {display_path(path)}"])
            self._requirements[key] = read_entries(source, f"{name} {version}", dev=False,
                                                     origin=(ns, name, version)).index
        return self._requirements[key]


def resolve_workspace(files: Files, workspace_root: str, member_roots: list[str], settings: Settings | None,
                      options: Options, *, force: bool = False) -> Resolution | None:
    """Resolve the workspace's index dependencies (None when it has none and not `force`); the
    lock is written when it changed, refused to change under --locked. `settings` (None: this
    process's environment, read only when there is something to resolve) locate the index and
    the cache."""
    if not force and not any_index_entry(files, member_roots):
        return None
    if settings is None:
        from ..core.settings import command_settings

        settings = command_settings()
    reqs = workspace_requirements(files, member_roots)
    lock_file = lock_path(workspace_root)
    old = read_lock(lock_file)
    root_manifest = os.path.join(workspace_root, MANIFEST_NAME)
    vendor_setting = files.get(root_manifest).base.vendor if os.path.isfile(root_manifest) else None
    offline = options.offline or vendor_setting is not None
    vendor = vendor_setting or (os.path.join(workspace_root, VENDOR_DEFAULT) if options.offline else None)
    index_cell: list[Index] = []

    def index() -> Index:
        if not index_cell:
            index_cell.append(open_index(settings, "resolving index dependencies"))
        return index_cell[0]

    sources = Sources(settings, index, offline=offline, vendor=vendor, vendor_only=vendor_setting is not None)
    why_not = ("--offline" if options.offline else f"[source] vendor ({display_path(root_manifest)})"
               if vendor_setting is not None else None)
    universe = _Universe(settings, files, sources, old, index, why_not)
    preferred = {} if old is None else {k: p.version for k, p in old.packages.items()}
    if options.update is not None:
        names = set(options.update)
        if old is not None and names - {n for _ns, n in old.packages}:
            missing = sorted(names - {n for _ns, n in old.packages})
            raise RegistryError(f"`mcpp update -p {missing[0]}`: the lock holds no package `{missing[0]}`")
        preferred = {} if not names else {k: v for k, v in preferred.items() if k[1] not in names}
    chosen = resolve(reqs, universe, preferred) if reqs else {}
    new = Lock()
    for package, version in chosen.items():
        entry = universe.locked(package, version)
        deps = sorted({f"{r.namespace}.{r.name} {chosen[r.package]}" for r in universe.requirements(package, version)})
        new.packages[package] = Locked(entry.namespace, entry.name, entry.version, entry.source, entry.blake3,
                                       tuple(deps))
    changed = changes(old, new)
    if old is None and not new.packages:
        return Resolution(lock_file, new, changed, sources)  # nothing to lock: no lockfile either
    if old is None or old.render() != new.render():
        if options.locked:
            what = "is missing" if old is None else "would change"
            raise RegistryError(f"{display_path(lock_file)} {what}, and --locked forbids writing it",
                                notes=[f"note: {c}" for c in changed or ["(its text would be rewritten)"]] +
                                      ["help: run the command without --locked (or `mcpp update`) and commit the lock"])
        write_atomic(lock_file, new.render(), mode=PUBLIC)
    return Resolution(lock_file, new, changed, sources)


def workspace_of(manifest_path: str, files: Files) -> tuple[str, list[str]]:
    """(the workspace root, the roots of all its members) for the manifest at `manifest_path`."""
    source = files.get(manifest_path)
    ws = source
    if source.base.workspace_members is None:
        for candidate in manifests_above(os.path.dirname(source.root)):
            above = files.get(candidate)
            if above.base.workspace_members is not None:
                listed = {os.path.normpath(os.path.join(above.root, m)) for m in above.base.workspace_members}
                if source.root in listed:
                    ws = above
                break
    members = [os.path.normpath(os.path.join(ws.root, m)) for m in ws.base.workspace_members or ()]
    if not ws.base.is_virtual:
        members.insert(0, ws.root)
    return ws.root, members


class ParsedManifests:
    def __init__(self) -> None:
        self.parsed: dict[str, ManifestSource] = {}

    def get(self, path: str) -> ManifestSource:
        if path not in self.parsed:
            self.parsed[path] = parse_manifest(path)
        return self.parsed[path]


def refresh_lock(manifest_path: str, settings: Settings, *, update: tuple[str, ...] | None = None,
                 offline: bool = False, locked: bool = False) -> Resolution:
    """Resolve the workspace of the manifest at `manifest_path` again and rewrite its `mcpp.lock`
    when the resolution changed: after a command edited the manifest (`mcpp add`, `mcpp remove`),
    or for `mcpp update` (`update`: () for every package, else the names to move). Returns the
    resolution, whose `changed` lists what moved. A workspace with no index dependency left keeps
    an empty lock (and gets none, if it had none)."""
    files = ParsedManifests()
    root, members = workspace_of(os.path.abspath(manifest_path), files)
    resolution = resolve_workspace(files, root, members, settings, Options(locked, offline, update), force=True)
    assert resolution is not None
    return resolution


def library_versions(descriptor: Descriptor, requirement: str | None = None) -> list[str]:
    """The versions of `descriptor`'s library releases that are not yanked (and meet `requirement`,
    when one is given), lowest first: what `mcpp add` chooses from."""
    def meets(version: str) -> bool:
        try:
            return requirement is None or version_req.satisfies(version, requirement)
        except ValueError:
            return False

    return sorted((r.version for r in descriptor.releases if r.library is not None and not r.yanked
                   and meets(r.version)), key=version_order)


def newest_release(settings: Settings, namespace: str, name: str, requirement: str = "*") -> str | None:
    """The highest release of `namespace.name` in the library index meeting `requirement`,
    yanked ones aside (None: none does)."""
    index = open_index(settings, f"`{namespace}.{name}`")
    try:
        desc = index.descriptor(namespace, name)
    except PayloadError as e:
        raise RegistryError(e.message, e.pos, e.notes) from None
    versions = library_versions(desc, requirement) if desc is not None else []
    return versions[-1] if versions else None


__all__ = ["library_versions", "newest_release", "Options", "Resolution", "refresh_lock", "resolve_workspace", "workspace_of"]
