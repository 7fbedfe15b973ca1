"""The library-dependency plane: `[dependencies]`, `[dev-dependencies]`, `[build-dependencies]`
and the gate `[feature-deps.<f>]`, unconditional or under `[target.<selector>]`.

An entry is a path dependency (`{ path = "..." }`, a `version` on it a check of what is found
there) or an index dependency (`greet = "1.2"`, `{ version = "1.2", ... }`): a requirement that
engine/registry/ resolves against the library index and pins in `mcpp.lock`.

These tables name mcpp packages and nothing else: a payload address such as
`"xim:cmake"` is a tool, refused here with the table where tools go. Entries are keyed by name or
by `namespace.name` (a dotted key or a `[dependencies.<ns>]` sub-table); `entries()` is the one
reading of that shape, shared by the loader and by the fold.
"""
from __future__ import annotations

import os
from typing import Any

from . import schema, shape, version_req
from ..core.errors import ManifestError, Position
from ..core.lazy_re import lazy_compile
from ..core.paths import AbsPath
from ..core.shipped_packages import NAMESPACE as SHIPPED_NAMESPACE, names as shipped_names, shipped_root
from .model import DependencySpec
from .reader import Reader, display_path, header

MANIFEST_NAME = "mcpp.toml"
# The namespace of an index dependency written without one (`greet = "1.2"`).
INDEX_NAMESPACE = "mcpplibs"
# An index package's name or namespace: one plain path component (engine/registry/ makes paths of it).
INDEX_NAME = lazy_compile(r"^[A-Za-z][A-Za-z0-9_-]{0,127}$")
DEP_SECTIONS = ("dependencies", "dev-dependencies", "build-dependencies")
_DEP_KEYS_NORMALIZED = {schema.normalized(k) for k in schema.DEPENDENCY.keys}


def is_payload_address(key: str) -> bool:
    return ":" in key


def is_system_spec(spec: Any) -> bool:
    """`{ pkg-config = "zlib" }` / `{ system = "z" }`: a library of the system, no mcpp package."""
    return type(spec) is dict and any(k in spec for k in schema.SYSTEM_DEP_KEYS)


def _is_namespace_table(spec: Any) -> bool:
    """`ns.name = {...}` / `[dependencies.ns]`: a table of one namespace's packages."""
    return (type(spec) is dict and bool(spec) and not any(schema.normalized(k) in _DEP_KEYS_NORMALIZED for k in spec)
            and all(type(v) in (dict, str) for v in spec.values()))


def entries(table: dict) -> list[tuple[tuple[str, ...], Any]]:
    """`[((name,), spec)]` or `[((namespace, name), spec)]`, in source order."""
    out = []
    for key, spec in table.items():
        if _is_namespace_table(spec) and not is_payload_address(key) and not shape.is_condition_key(key, spec):
            out += [((key, sub), subspec) for sub, subspec in spec.items()]
        else:
            out.append(((key,), spec))
    return out


def read_table(r: Reader, table: Any, keypath: tuple, *, check_paths: bool, root: str,
               feature: str | None = None) -> tuple[DependencySpec, ...]:
    """Validate one dependency table at `keypath`; `check_paths`: its path deps must exist now."""
    r.expect(table, dict, keypath)
    section_path = keypath[2:] if keypath[0] == "target" else keypath
    out = []
    for rel, spec in entries(table):
        kp = keypath + rel
        key = rel[-1]
        if is_payload_address(key):
            raise r.fail(kp, f"`{key}` is a payload (the tools and environment plane), not an mcpp package: "
                             f"tools are declared in [xlings.workspace] (or [feature-xlings.<f>] behind a feature), "
                             f"never in {header(section_path)}", prefer="key")
        if shape.is_condition_key(key, spec):
            raise shape.refuse_trailing(r, kp, section_path + rel[:-1])
        out.append(_dep(r, kp, rel, spec, section_path + rel[:-1], check_paths, root, feature))
    return tuple(out)


def _dep(r: Reader, kp: tuple, rel: tuple, spec: Any, section_path: tuple, check_paths: bool, root: str,
         feature: str | None) -> DependencySpec:
    key = rel[-1]
    namespace = rel[0] if len(rel) == 2 else None
    if type(spec) is str:  # `greet = "1.2"`: a requirement on a package of the index
        _index_name(r, kp, rel)
        _requirement(r, kp, key, spec)
        return DependencySpec(key=key, namespace=namespace or INDEX_NAMESPACE, path=AbsPath(""), index=True,
                              feature=feature, keypath=r.source_path(kp), pos=r.pos(kp, "key"),
                              version=spec, version_pos=r.pos(kp))
    r.expect(spec, dict, kp)
    if shape.is_platform_object(spec):
        raise shape.refuse_platform_object(r, kp, spec, section_path)
    shape.check_siblings(r, spec, kp, section_path)
    r.check_keys(spec, kp, schema.DEPENDENCY.keys, schema.DEPENDENCY.case,
                 where=f"the spec of dependency `{key}`")
    if is_system_spec(spec):
        return _system_dep(r, kp, key, spec, section_path, feature)
    path = r.opt(spec, "path", str, kp)
    if path is None and namespace == SHIPPED_NAMESPACE:  # a package shipped with mcpp (shipped_packages.py)
        path = shipped_root(namespace, key)
        if path is None:
            raise r.fail(kp, f"mcpp ships no package `{namespace}:{key}` (it ships: {', '.join(shipped_names())})")
    version = r.opt(spec, "version", str, kp)
    if version is not None:
        _requirement(r, kp + ("version",), key, version)
    if path is None:
        _index_name(r, kp, rel)
        if version is None:
            raise r.fail(kp, f"dependency `{key}` needs a `version` (a package of the index) or a `path` "
                             f"(a package on this disk)", notes=[f"help: write `{key} = \"1.0\"` or "
                                                               f"`{key} = {{ path = \"../{key}\" }}`"])
        return DependencySpec(
            key=key, namespace=namespace or INDEX_NAMESPACE, path=AbsPath(""), index=True,
            features=r.str_list(spec, "features", kp) or (),
            default_features=r.opt(spec, "default-features", bool, kp, True),
            tools=r.str_list(spec, "tools", kp) or (),
            host_module=r.opt(spec, "host-module", bool, kp, False),
            reexport=r.opt(spec, "reexport", bool, kp, False),
            feature=feature, keypath=r.source_path(kp), pos=r.pos(kp, "key"),
            version=version, version_pos=r.pos(kp + ("version",)), **_libs(r, spec, kp))
    full = AbsPath(os.path.normpath(os.path.join(root, path)))
    if check_paths:
        check_dependency_path(full, path, key, r.pos(kp + ("path",)))
    return DependencySpec(
        key=key, namespace=namespace, path=full, written_path=path,
        features=r.str_list(spec, "features", kp) or (),
        default_features=r.opt(spec, "default-features", bool, kp, True),
        tools=r.str_list(spec, "tools", kp) or (),
        host_module=r.opt(spec, "host-module", bool, kp, False),
        reexport=r.opt(spec, "reexport", bool, kp, False),
        feature=feature, keypath=r.source_path(kp),
        pos=r.pos(kp, "key"), path_pos=r.pos(kp + ("path",)),
        version=version, version_pos=r.pos(kp + ("version",)) if version is not None else None,
        **_libs(r, spec, kp))


def _libs(r: Reader, spec: dict, kp: tuple) -> dict:
    """`libs = ["gtest_main"]`: which of the dependency's libraries its dependent links (each
    checked against the dependency's targets once it is loaded, plan/library_set.py)."""
    libs = r.str_list(spec, "libs", kp)
    if libs is None:
        return {}
    if not libs:
        raise r.fail(kp + ("libs",), "`libs` names at least one library of the dependency (leave it out to link "
                                     "the library named after the package)")
    for i, name in enumerate(libs):
        if not name:
            raise r.fail(kp + ("libs", i), "an empty library name in `libs`")
    return {"libs": libs, "libs_pos": r.pos(kp + ("libs",))}


# What a pkg-config module name or a `-l` library name may be: never a flag or a path.
_SYSTEM_NAME = lazy_compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}$")


def _system_dep(r: Reader, kp: tuple, key: str, spec: dict, section_path: tuple,
                feature: str | None) -> DependencySpec:
    """`z = { pkg-config = "zlib" }` or `z = { system = "z" }`: a library of the system, linked
    (and, through pkg-config, compiled against) but never built; alone in its entry."""
    which = [k for k in schema.SYSTEM_DEP_KEYS if k in spec]
    if len(which) > 1:
        raise r.fail(kp + (which[1],), f"dependency `{key}` names both `pkg-config` and `system`: "
                                       f"a system library is one or the other", prefer="key")
    extra = [k for k in spec if k != which[0]]
    if extra:
        raise r.fail(kp + (extra[0],), f"`{extra[0]}` does not apply to the system library `{key}` "
                                       f"(`{which[0]}` takes no other key)", prefer="key")
    if section_path[:1] not in (("dependencies",), ("dev-dependencies",)) or feature is not None:
        raise r.fail(kp + (which[0],), f"a system library is declared in [dependencies] or [dev-dependencies], "
                                       f"not in {header(section_path)}", prefer="key")
    name = r.expect(spec[which[0]], str, kp + (which[0],))
    if not _SYSTEM_NAME.match(name):
        what = "a pkg-config module name such as \"zlib\"" if which[0] == "pkg-config" else \
            "a library name as `-l` takes it, such as \"z\""
        raise r.fail(kp + (which[0],), f"`{name}` is not {what}")
    return DependencySpec(key=key, namespace=None, path=AbsPath(""), keypath=r.source_path(kp),
                          pos=r.pos(kp + (which[0],)),
                          pkg_config=name if which[0] == "pkg-config" else None,
                          system=name if which[0] == "system" else None)


def read_source(r: Reader, table: Any, root: str) -> AbsPath:
    """`[source] vendor = "DIR"`: the vendor directory index dependencies are built from (a
    directory inside the package, docs/dependencies.md)."""
    r.expect(table, dict, ("source",))
    for key in table:
        if key != "vendor":
            raise r.fail(("source", key), f"unknown key `{key}` in [source] (it takes `vendor`)", prefer="key")
    vendor = table.get("vendor")
    if not isinstance(vendor, str) or not vendor.strip() or os.path.isabs(vendor) or ".." in vendor.split("/"):
        raise r.fail(("source", "vendor") if "vendor" in table else ("source",),
                     "`vendor` must be a directory inside the workspace, such as \"vendor\"")
    return AbsPath(os.path.normpath(os.path.join(root, vendor)))


def _index_name(r: Reader, kp: tuple, rel: tuple) -> None:
    """An index dependency's name and namespace name its descriptor in the index and its
    directory in the source cache: plain names only, never a path."""
    for i, word in enumerate(rel):
        if not INDEX_NAME.match(word):
            what = "namespace" if i < len(rel) - 1 else "name"
            raise r.fail(kp[:len(kp) - len(rel) + i + 1], f"index dependency {what} `{word}`: use letters, digits, "
                                                          f"`-` and `_`, starting with a letter", prefer="key")


def _requirement(r: Reader, kp: tuple, key: str, text: str) -> None:
    """A version requirement as written (version_req.py), refused at its position."""
    problem = version_req.parse(text)
    if isinstance(problem, str):
        raise r.fail(kp, f"dependency `{key}`: {problem}")


def check_dependency_path(full: str, written: str, key: str, pos: Position) -> None:
    if not os.path.isfile(os.path.join(full, MANIFEST_NAME)):
        what = "does not exist" if not os.path.exists(full) else f"has no {MANIFEST_NAME}"
        raise ManifestError(f"path dependency `{key}`: `{written}` {what}", pos)


def check_version(spec: DependencySpec, dep_version: str | None, dep_manifest_path: str) -> None:
    """A `version` requirement on a path dependency holds for the package found at the path."""
    if spec.version is None or (dep_version and version_req.satisfies(dep_version, spec.version)):
        return
    found = f"version {dep_version}" if dep_version else "no [package] version"
    raise ManifestError(
        f"dependency `{spec.display}` requires version `{spec.version}`, but `{spec.written_path}` has {found}",
        spec.version_pos or spec.pos,
        [f"note: `{display_path(dep_manifest_path)}` declares version = \"{dep_version}\"" if dep_version else
         f"note: `{display_path(dep_manifest_path)}` declares no version"])
