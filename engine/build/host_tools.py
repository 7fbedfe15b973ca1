"""Host tools: a dependency entry with `tools = ["x"]` builds that package's `kind = "bin"`
target `x` for the build machine and hands its path to build programs (`mcpp.dep_bin`).

The tool store (`$MCPP_HOME/tool/<index>/<name>@<version>+<key>/bin/<tool>`) holds each build
of a tool under a key of everything its bytes depend on: the package's identity and
version, the host triple, the compiler's identity, the profile, the features, the versions of
its transitive dependencies, and for a path dependency a stamp of its source trees (every file's
relative path, size and modification time). Editing a tool's source with its version unchanged
therefore builds a new entry, and so does going back to an older version's tree: both change
the path a build program sees, so the program re-evaluates and its actions follow.

The tool is built by an ordinary, quiet build of its package (its own graph, host context, this
build's toolchain and profile) into `target/host/<name>/` of the consumer, so its compiles are
cached like any other action; only the finished binary is copied into the store. The tools one
build is missing are built at the same time, each in its own thread: they are independent (their
own graphs and target directories), and a `--release` build that needs three generators should
not wait for them one after another.

Visibility: a tool reaches the package whose manifest entry declares it, under that entry's name;
with `reexport = true` on a `[feature-deps.<f>]` (or `[dependencies]`) entry it also reaches every
package that activates `<f>` on (or depends on) the declaring package. Nothing else sees it.
"""
from __future__ import annotations

import json
import os
import shutil
import dataclasses
from dataclasses import dataclass, field
from typing import Callable, TypeVar

import blake3

from mcpp.cas.atomic import commit
from mcpp.cas.home import Home

from ..core.errors import BuildFailed, ManifestError
from ..manifest.model import DependencySpec
from ..package.features import requested_features
from ..package.graph import load_graph
from ..package.model import Package, PackageGraph, Selection, declared_by
from ..package.targets import targets_of

PATH_INDEX = "path"  # the <index> of tools that come from path dependencies


@dataclass(frozen=True)
class HostTool:
    entry: str  # the declaring manifest entry's name (`toyc` for `example.toyc = {...}`)
    display: str  # the entry as written, with its namespace
    tool: str  # the bin target
    path: str  # absolute binary in the tool store


@dataclass
class HostTools:
    # declared_by(package, its tool entry) -> the tools that entry builds
    by_entry: dict[tuple[Package, tuple], list[HostTool]] = field(default_factory=dict)
    watched_files: list[str] = field(default_factory=list)  # what the stamps read (no-op record)
    watched_dirs: list[str] = field(default_factory=list)

    def visible_to(self, pkg: Package) -> list[HostTool]:
        """The tools `pkg`'s build program may ask for with `mcpp.dep_bin`."""
        out = [t for spec in pkg.tool_edges for t in self.by_entry.get(declared_by(pkg, spec), ())]
        for spec, dep in pkg.edges:
            reexported = [s for s in dep.manifest.dependencies if s.reexport]
            for f in sorted(requested_features(spec, dep)):
                reexported += [s for s in dep.manifest.feature_deps.get(f, ()) if s.reexport]
            for s in reexported:
                out += self.by_entry.get(declared_by(dep, s), ())
        return list(dict.fromkeys(out))


def source_stamp(packages: list[Package], files: list[str], dirs: list[str]) -> str:
    """Every file's relative path, size and mtime under each package root (not `target/`, not
    hidden entries): a path dependency's sources in the form its kind offers, as cheap as a stat
    and never missing an edit that keeps the version. Where the tree lives is not part of it: an
    identical copy elsewhere is the same tool."""
    h = blake3.blake3()
    for pkg in packages:
        root = pkg.root
        h.update(f"package {len(pkg.name)}:{pkg.name}\n".encode())
        for d, subdirs, names in os.walk(root):
            subdirs[:] = sorted(s for s in subdirs if not s.startswith(".") and not (d == root and s == "target"))
            dirs.append(d)
            for name in sorted(names):
                if name.startswith("."):
                    continue
                path = os.path.join(d, name)
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                files.append(path)
                rel = os.path.relpath(path, root)
                h.update(f"{len(rel)}:{rel} {st.st_size} {st.st_mtime_ns}\n".encode())
    return h.hexdigest()


_Options = TypeVar("_Options")

# The build options a host tool's build sets itself: what it builds and where (its package, its
# features, the toolchain it is keyed under, its own target directory) and what only the build
# the user asked for does (keep going, timings). Every other option is the user's: the sandbox,
# -j, the settings (home, remote cache and execution), and any option added later.
HOST_TOOL_OVERRIDES = ("cwd", "manifest_path", "selection", "toolchain", "target_override",
                       "keep_going", "timings", "trace")


def host_tool_options(opts: _Options, *, cwd: str, selection: Selection, toolchain: str | None,
                      target_override: str) -> _Options:
    """The options of a host tool's build (of the package at `cwd`), derived from the user's
    `opts` (a `build.BuildOptions`): `HOST_TOOL_OVERRIDES` replaced, everything else kept."""
    overrides = dict(cwd=cwd, manifest_path=None, selection=selection, toolchain=toolchain,
                     target_override=target_override, keep_going=False, timings=None, trace=None)
    assert set(overrides) == set(HOST_TOOL_OVERRIDES)
    return dataclasses.replace(opts, **overrides)  # type: ignore[type-var]


class ToolBuilder:
    """Resolves every tool edge of a graph to a store entry, building the missing ones.

    `build_package(cwd, selection, target_dir)` runs a quiet build and returns
    `(execroot, {bin target name: execroot-relative path})`.
    """

    def __init__(self, graph: PackageGraph, toolchain_identity: str, host: str, profile: str,
                 build_package: Callable[[str, Selection, str], tuple[str, dict[str, str]]],
                 status: Callable[[str, str], None], home: Home):
        self.graph = graph
        self.toolchain_identity = toolchain_identity
        self.host = host
        self.profile = profile
        self.build_package = build_package
        self.status = status
        self.home = home

    def resolve(self) -> HostTools:
        tools = HostTools()
        done: dict[tuple, list[HostTool]] = {}
        missing: dict[str, list[Callable[[], None]]] = {}  # by target directory
        for pkg in self.graph.order:
            for spec in pkg.tool_edges:
                ident = (spec.path, tuple(sorted(spec.features)), spec.default_features, tuple(spec.tools))
                if ident not in done:
                    done[ident] = self._resolve(spec, tools, missing)
                tools.by_entry[declared_by(pkg, spec)] = [HostTool(spec.key, spec.display, t.tool, t.path) for t in done[ident]]
        self._build_all(missing)
        return tools

    def _build_all(self, missing: dict[str, list[Callable[[], None]]]) -> None:
        """Run the missing builds at once, those sharing a target directory (one package with two
        feature sets) one after the other; the first failure in graph order is the one reported."""
        def in_turn(builds: list[Callable[[], None]]) -> None:
            for b in builds:
                b()

        if len(missing) <= 1:
            for builds in missing.values():
                in_turn(builds)
            return
        from concurrent.futures import ThreadPoolExecutor  # a build with host tools to make

        with ThreadPoolExecutor(max_workers=len(missing), thread_name_prefix="host-tool") as pool:
            futures = [pool.submit(in_turn, builds) for builds in missing.values()]
            errors = [f.exception() for f in futures]
        for e in errors:
            if e is not None:
                raise e

    def _resolve(self, spec: DependencySpec, tools: HostTools,
                 missing: dict[str, list[Callable[[], None]]]) -> list[HostTool]:
        selection = Selection(features=spec.features, no_default_features=not spec.default_features)
        graph = load_graph(spec.path, None, selection)
        root = next(p for p in graph.order if p.root == os.path.normpath(spec.path))
        have = [t.name for t in targets_of(root) if t.kind == "bin"]
        for i, name in enumerate(spec.tools):
            if name not in have:
                raise ManifestError(
                    f"`{spec.display}` has no `kind = \"bin\"` target named `{name}` "
                    f"(its bin targets: {', '.join(have) or 'none'})", spec.pos)
        m = root.manifest
        key = {
            "identity": f"{m.namespace}:{m.name}" if m.namespace else m.name,
            "version": m.version,
            "host": self.host,
            "compiler": self.toolchain_identity,
            "profile": self.profile,
            "features": sorted(root.features),
            "deps": sorted(f"{p.name}@{p.version}" for p in graph.order if p is not root),
            "source": source_stamp(graph.order, tools.watched_files, tools.watched_dirs),
        }
        digest = blake3.blake3(json.dumps(key, sort_keys=True).encode()).hexdigest()
        entry = os.path.join(self.home.tool, PATH_INDEX, f"{m.name}@{m.version}+{digest[:16]}")
        wanted = [os.path.join(entry, "bin", t) for t in spec.tools]
        if not all(os.path.isfile(p) for p in wanted):
            for t in spec.tools:
                self.status("Building", f"host tool {spec.key}:{t} from {m.name} v{m.version} "
                                        f"(once per package source and host toolchain)")
            missing.setdefault(self._target_dir(m.name), []).append(
                lambda: self._build(spec, selection, root, entry, key))
        return [HostTool(spec.key, spec.display, t, p) for t, p in zip(spec.tools, wanted)]

    def _target_dir(self, name: str) -> str:
        return os.path.join(self.graph.target_dir, "host", name)

    def _build(self, spec: DependencySpec, selection: Selection, root: Package, entry: str, key: dict) -> None:
        m = root.manifest
        target_dir = self._target_dir(m.name)
        try:
            execroot, bins = self.build_package(spec.path, selection, target_dir)
        except BuildFailed as e:
            raise BuildFailed(f"host tool `{spec.key}` ({m.name} v{m.version}) failed to build: {e.message}") from None
        parent = os.path.dirname(entry)
        os.makedirs(parent, exist_ok=True)
        import tempfile  # only a build that makes a host tool

        tmp = tempfile.mkdtemp(prefix=".tmp-", dir=parent)
        try:
            os.makedirs(os.path.join(tmp, "bin"))
            for t in spec.tools:
                dest = os.path.join(tmp, "bin", t)
                shutil.copyfile(os.path.join(execroot, bins[t]), dest)
                os.chmod(dest, 0o755)
            with open(os.path.join(tmp, "key.json"), "w") as f:
                json.dump(key, f, indent=1, sort_keys=True)
            try:
                os.rename(tmp, entry)  # atomic: a reader sees the whole entry or none
            except OSError:
                if not os.path.isdir(entry):
                    raise
                # Another build published the same key first (or a partial tool set was there).
                for t in spec.tools:
                    if not os.path.isfile(os.path.join(entry, "bin", t)):
                        os.makedirs(os.path.join(entry, "bin"), exist_ok=True)
                        commit(os.path.join(tmp, "bin", t), os.path.join(entry, "bin", t))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
