"""Reading one `mcpp.toml` into a `Manifest`, with every error at its `path:line:col`.

`tomllib` gives no positions, so the text is also scanned by `toml_positions.SourceMap`; each
check below names the key path it is about and the map turns that into a position. Paths in a
manifest are relative to the manifest's directory, never to the working directory.
"""
from __future__ import annotations

import os
import re
import tomllib
from typing import Any

from ..errors import ManifestError, Position
from .model import (
    TARGET_KINDS,
    BuildSpec,
    DependencySpec,
    FeatureSpec,
    Manifest,
    ProfileSpec,
    TargetSpec,
)
from .toml_positions import SourceMap

MANIFEST_NAME = "mcpp.toml"

STANDARDS = ("c++17", "c++20", "c++23", "c++26", "gnu++17", "gnu++20", "gnu++23", "gnu++26")
OPT_LEVELS = ("0", "1", "2", "3", "s", "z", "g")
TOOLCHAINS = ("gcc", "clang", "clang-19")
BUILTIN_PROFILES = ("dev", "release")

_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
_SEMVER_RE = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$"
)

# Keys this engine reads, per section; anything else is warned about, not silently dropped.
_PACKAGE_KEYS = {"name", "version", "namespace", "standard", "description", "authors", "license",
                 "repository", "homepage", "keywords", "readme", "accelerators", "platforms"}
_BUILD_KEYS = {"sources", "include_dirs", "cflags", "cxxflags", "ldflags", "defines"}
_PROFILE_KEYS = {"inherits", "opt", "debug", "cflags", "cxxflags", "ldflags"}
_FEATURE_KEYS = {"defines", "sources", "implies"}
_DEP_KEYS = {"path", "version", "features", "default-features"}
_TOP_KEYS = {"package", "targets", "lib", "build", "profile", "features", "dependencies",
             "dev-dependencies", "workspace", "toolchain"}

_TYPE_NAMES = {str: "a string", bool: "a boolean", int: "an integer", float: "a float",
               list: "an array", dict: "a table"}


def display_path(path: str) -> str:
    """A path as the user should read it: relative to the cwd when below it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _type_name(value: Any) -> str:
    for t, name in _TYPE_NAMES.items():
        if type(value) is t:
            return name
    return type(value).__name__


class _Reader:
    """Typed access to the parsed document; every failure is a positioned ManifestError."""

    def __init__(self, path: str, text: str):
        self.path = path
        self.shown = display_path(path)
        self.smap = SourceMap(text)
        self.warnings: list[str] = []

    def pos(self, keypath: tuple, prefer: str = "value") -> Position:
        line, col = self.smap.nearest(keypath, prefer=prefer)
        return Position(self.shown, line, col)

    def fail(self, keypath: tuple, message: str, prefer: str = "value", notes=None) -> ManifestError:
        return ManifestError(message, self.pos(keypath, prefer), notes)

    def warn_unknown(self, table: dict, keypath: tuple, known: set[str], section: str) -> None:
        for key in table:
            if key not in known:
                self.warnings.append(
                    f"{self.pos(keypath + (key,), 'key')}: warning: unknown key `{key}` in [{section}] (ignored)")

    def expect(self, value: Any, kind: type, keypath: tuple) -> Any:
        if type(value) is not kind:
            dotted = ".".join(str(k) for k in keypath)
            raise self.fail(keypath, f"`{dotted}` must be {_TYPE_NAMES[kind]}, found {_type_name(value)}")
        return value

    def opt(self, table: dict, key: str, kind: type, keypath: tuple, default=None):
        if key not in table:
            return default
        return self.expect(table[key], kind, keypath + (key,))

    def str_list(self, table: dict, key: str, keypath: tuple) -> tuple[str, ...] | None:
        if key not in table:
            return None
        items = self.expect(table[key], list, keypath + (key,))
        for i, item in enumerate(items):
            self.expect(item, str, keypath + (key, i))
        return tuple(items)


def read_manifest(path: str) -> Manifest:
    """Parse and validate the manifest at `path` (absolute)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise ManifestError(f"cannot read manifest: {e.strerror}", Position(display_path(path)))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ManifestError("manifest is not valid UTF-8", Position(display_path(path), 1, e.start + 1))
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise _toml_error(path, e) from None
    return _Builder(path, text, doc).build()


def _toml_error(path: str, e: "tomllib.TOMLDecodeError") -> ManifestError:
    # tomllib reports "... (at line L, column C)"; move the position in front, compiler-style.
    msg = str(e)
    m = re.search(r"\s*\(at line (\d+), column (\d+)\)$", msg)
    if m:
        return ManifestError(f"malformed TOML: {msg[:m.start()]}",
                             Position(display_path(path), int(m.group(1)), int(m.group(2))))
    m = re.search(r"\s*\(at end of document\)$", msg)
    return ManifestError(f"malformed TOML: {msg[:m.start()] if m else msg}", Position(display_path(path)))


class _Builder:
    def __init__(self, path: str, text: str, doc: dict):
        self.r = _Reader(path, text)
        self.path = path
        self.root = os.path.dirname(path)
        self.doc = doc

    def build(self) -> Manifest:
        r, doc = self.r, self.doc
        r.warn_unknown(doc, (), _TOP_KEYS, "top level")
        members = self._workspace()
        package = doc.get("package")
        if package is None:
            if members is None:
                raise ManifestError("missing [package] table (a manifest needs [package] or [workspace])",
                                    Position(r.shown, 1, 1))
            return Manifest(path=self.path, root=self.root, name=None, version=None,
                            workspace_members=members, warnings=r.warnings, smap=r.smap)
        r.expect(package, dict, ("package",))
        r.warn_unknown(package, ("package",), _PACKAGE_KEYS, "package")
        name = self._package_name(package)
        version = self._package_version(package)
        namespace = r.opt(package, "namespace", str, ("package",))
        standard = r.opt(package, "standard", str, ("package",), "c++20")
        if standard not in STANDARDS:
            raise r.fail(("package", "standard"),
                         f"unknown standard `{standard}`; accepted values: {', '.join(STANDARDS)}")
        features, default_features = self._features()
        m = Manifest(
            path=self.path, root=self.root, name=name, version=version, namespace=namespace,
            standard=standard, build=self._build(), profiles=self._profiles(),
            features=features, default_features=default_features,
            dependencies=self._deps("dependencies"), dev_dependencies=self._deps("dev-dependencies"),
            workspace_members=members, toolchain=self._toolchain(), warnings=r.warnings, smap=r.smap,
        )
        m.targets, m.explicit_targets = self._targets(name)
        m.lib_path = self._lib()
        return m

    # -- [package] -------------------------------------------------------------------------
    def _package_name(self, package: dict) -> str:
        if "name" not in package:
            raise self.r.fail(("package",), "missing `package.name`", prefer="key")
        name = self.r.expect(package["name"], str, ("package", "name"))
        if not _NAME_RE.match(name):
            raise self.r.fail(("package", "name"),
                              f"invalid package name `{name}`: use letters, digits, `-` and `_`, starting with a letter")
        return name

    def _package_version(self, package: dict) -> str:
        if "version" not in package:
            raise self.r.fail(("package",), "missing `package.version`", prefer="key")
        version = self.r.expect(package["version"], str, ("package", "version"))
        if not _SEMVER_RE.match(version):
            raise self.r.fail(("package", "version"),
                              f"invalid version `{version}`: expected a semantic version such as `0.1.0`")
        return version

    # -- [targets], [lib] ----------------------------------------------------------------------
    def _targets(self, package_name: str) -> tuple[tuple[TargetSpec, ...], bool]:
        r = self.r
        table = r.opt(self.doc, "targets", dict, ())
        if table is None:
            return (), False
        out = []
        for tname, spec in table.items():
            kp = ("targets", tname)
            r.expect(spec, dict, kp)
            r.warn_unknown(spec, kp, {"kind", "main"}, f"targets.{tname}")
            kind = r.opt(spec, "kind", str, kp, "bin")
            if kind not in TARGET_KINDS:
                raise r.fail(kp + ("kind",),
                             f"invalid kind `{kind}` for target `{tname}`; accepted values: {', '.join(TARGET_KINDS)}")
            main = r.opt(spec, "main", str, kp)
            if kind == "bin":
                main = main or "src/main.cpp"
                if not os.path.isfile(os.path.join(self.root, main)):
                    raise r.fail(kp + ("main",) if "main" in spec else kp,
                                 f"target `{tname}`: main source `{main}` does not exist")
            elif main is not None:
                raise r.fail(kp + ("main",), f"`main` applies to `bin` targets only (target `{tname}` is `{kind}`)")
            out.append(TargetSpec(tname, kind, main, r.pos(kp, "key")))
        return tuple(out), True

    def _lib(self) -> str | None:
        table = self.r.opt(self.doc, "lib", dict, ())
        if table is None:
            return None
        self.r.warn_unknown(table, ("lib",), {"path"}, "lib")
        path = self.r.opt(table, "path", str, ("lib",))
        if path is not None and not os.path.isfile(os.path.join(self.root, path)):
            raise self.r.fail(("lib", "path"), f"library source `{path}` does not exist")
        return path

    # -- [build], [profile.*], [toolchain] ----------------------------------------------------
    def _build(self) -> BuildSpec:
        r = self.r
        table = r.opt(self.doc, "build", dict, ())
        if table is None:
            return BuildSpec()
        kp = ("build",)
        r.warn_unknown(table, kp, _BUILD_KEYS, "build")
        return BuildSpec(
            sources=r.str_list(table, "sources", kp),
            include_dirs=r.str_list(table, "include_dirs", kp) or (),
            cflags=r.str_list(table, "cflags", kp) or (),
            cxxflags=r.str_list(table, "cxxflags", kp) or (),
            ldflags=r.str_list(table, "ldflags", kp) or (),
            defines=r.str_list(table, "defines", kp) or (),
            sources_pos=r.pos(kp + ("sources",)) if "sources" in table else None,
        )

    def _profiles(self) -> dict[str, ProfileSpec]:
        r = self.r
        table = r.opt(self.doc, "profile", dict, ())
        out: dict[str, ProfileSpec] = {}
        for pname, spec in (table or {}).items():
            kp = ("profile", pname)
            r.expect(spec, dict, kp)
            r.warn_unknown(spec, kp, _PROFILE_KEYS, f"profile.{pname}")
            inherits = r.opt(spec, "inherits", str, kp)
            if inherits is not None and inherits not in BUILTIN_PROFILES and inherits not in table:
                names = ", ".join(sorted(set(BUILTIN_PROFILES) | set(table)))
                raise r.fail(kp + ("inherits",), f"profile `{pname}` inherits unknown profile `{inherits}`; known: {names}")
            opt = spec.get("opt")
            if opt is not None:
                if type(opt) not in (int, str):
                    raise r.fail(kp + ("opt",), f"`profile.{pname}.opt` must be an integer or a string, found {_type_name(opt)}")
                opt = str(opt)
                if opt not in OPT_LEVELS:
                    raise r.fail(kp + ("opt",), f"invalid opt level `{opt}`; accepted values: {', '.join(OPT_LEVELS)}")
            out[pname] = ProfileSpec(
                name=pname, inherits=inherits, opt=opt, debug=r.opt(spec, "debug", bool, kp),
                cflags=r.str_list(spec, "cflags", kp) or (), cxxflags=r.str_list(spec, "cxxflags", kp) or (),
                ldflags=r.str_list(spec, "ldflags", kp) or (),
            )
        return out

    def _toolchain(self) -> str | None:
        table = self.r.opt(self.doc, "toolchain", dict, ())
        if table is None:
            return None
        self.r.warn_unknown(table, ("toolchain",), {"default"}, "toolchain")
        value = self.r.opt(table, "default", str, ("toolchain",))
        if value is not None and value not in TOOLCHAINS:
            raise self.r.fail(("toolchain", "default"),
                              f"unknown toolchain `{value}`; accepted values: {', '.join(TOOLCHAINS)}")
        return value

    # -- [features] ----------------------------------------------------------------------------
    def _features(self) -> tuple[dict[str, FeatureSpec], tuple[str, ...]]:
        r = self.r
        table = r.opt(self.doc, "features", dict, ())
        if table is None:
            return {}, ()
        features: dict[str, FeatureSpec] = {}
        default: tuple[str, ...] = ()
        for fname, spec in table.items():
            kp = ("features", fname)
            if fname == "default":
                default = r.str_list(table, "default", ("features",)) or ()
                continue
            if type(spec) is list:
                features[fname] = FeatureSpec(fname, implies=r.str_list(table, fname, ("features",)) or (),
                                              pos=r.pos(kp, "key"))
            elif type(spec) is dict:
                r.warn_unknown(spec, kp, _FEATURE_KEYS, f"features.{fname}")
                features[fname] = FeatureSpec(
                    fname, implies=r.str_list(spec, "implies", kp) or (),
                    defines=r.str_list(spec, "defines", kp) or (),
                    sources=r.str_list(spec, "sources", kp) or (), pos=r.pos(kp, "key"))
            else:
                raise r.fail(kp, f"feature `{fname}` must be an array of implied features or a table, found {_type_name(spec)}")
        for f in features.values():
            for i, implied in enumerate(f.implies):
                if implied not in features:
                    where = ("features", f.name, i) if type(table[f.name]) is list else ("features", f.name, "implies", i)
                    raise r.fail(where, f"feature `{f.name}` implies unknown feature `{implied}`"
                                        + _known(features))
        for i, d in enumerate(default):
            if d not in features:
                raise r.fail(("features", "default", i), f"default feature `{d}` is not declared" + _known(features))
        return features, default

    # -- [dependencies], [dev-dependencies] ---------------------------------------------------
    def _deps(self, section: str) -> tuple[DependencySpec, ...]:
        r = self.r
        table = r.opt(self.doc, section, dict, ())
        out: list[DependencySpec] = []
        for key, spec in (table or {}).items():
            if type(spec) is dict and spec and not (set(spec) & _DEP_KEYS) and all(type(v) in (dict, str) for v in spec.values()):
                # `ns.name = {...}` is a dotted key: a table of the namespace's packages.
                for sub, subspec in spec.items():
                    out.append(self._dep(section, (section, key, sub), sub, key, subspec))
            else:
                out.append(self._dep(section, (section, key), key, None, spec))
        return tuple(out)

    def _dep(self, section: str, kp: tuple, key: str, namespace: str | None, spec: Any) -> DependencySpec:
        r = self.r
        if type(spec) is str:
            raise r.fail(kp, f"dependency `{key}`: only path dependencies are supported so far; "
                             f"write `{key} = {{ path = \"...\" }}`")
        r.expect(spec, dict, kp)
        r.warn_unknown(spec, kp, _DEP_KEYS, f"{section}.{key}")
        path = r.opt(spec, "path", str, kp)
        if path is None:
            raise r.fail(kp, f"dependency `{key}` needs a `path` (index dependencies are not supported yet)")
        full = os.path.normpath(os.path.join(self.root, path))
        # [dev-dependencies] are resolved only by `mcpp test` (engine.graph checks them there).
        if section == "dependencies":
            check_dependency_path(full, path, key, r.pos(kp + ("path",)))
        return DependencySpec(
            key=key, namespace=namespace, path=full, written_path=path,
            features=r.str_list(spec, "features", kp) or (),
            default_features=r.opt(spec, "default-features", bool, kp, True),
            pos=r.pos(kp, "key"), path_pos=r.pos(kp + ("path",)),
        )

    # -- [workspace] -----------------------------------------------------------------------------
    def _workspace(self) -> tuple[str, ...] | None:
        r = self.r
        table = r.opt(self.doc, "workspace", dict, ())
        if table is None:
            return None
        r.warn_unknown(table, ("workspace",), {"members"}, "workspace")
        members = r.str_list(table, "members", ("workspace",)) or ()
        for i, member in enumerate(members):
            if not os.path.isfile(os.path.join(self.root, member, MANIFEST_NAME)):
                raise r.fail(("workspace", "members", i), f"workspace member `{member}` has no {MANIFEST_NAME}")
        return members


def check_dependency_path(full: str, written: str, key: str, pos: Position) -> None:
    if not os.path.isfile(os.path.join(full, MANIFEST_NAME)):
        what = "does not exist" if not os.path.exists(full) else f"has no {MANIFEST_NAME}"
        raise ManifestError(f"path dependency `{key}`: `{written}` {what}", pos)


def _known(features: dict) -> str:
    return f"; declared features: {', '.join(sorted(features))}" if features else "; no features are declared"
