"""From a (folded or unconditional) manifest document to the typed `Manifest`.

One reader per section, each naming the key path it reads so that every failure lands at
`path:line:col`. The same section readers validate `[target.<selector>.build]` and
`[target.<selector>.runtime]` bodies (conditions.py), so a conditional entry is held to exactly
the rules of an unconditional one.
"""
from __future__ import annotations

import os
import re
from typing import Any

from . import deps, schema, shape, xlings
from ..core.accel import BACKEND_NAME, AccelSet, AccelSyntaxError, parse_accel
from ..core.conventions import PROGRAM_FILE, TARGET_FOLDERS
from ..core.paths import AbsPath, PkgPath
from .model import (DEFAULT_MAINS, OUT_PREFIX, TARGET_KINDS, BuildSpec, FeatureSpec, Manifest, ProfileSpec,
                    RuntimeArtifact, SourceFlags, TargetSpec)
from .reader import Reader, header, type_name

# What the reference mcpp compiles with when a manifest names no standard (its examples use
# C++23's std::println), so its manifests build here unchanged.
DEFAULT_STANDARD = "c++23"
STANDARDS = ("c++17", "c++20", "c++23", "c++26", "gnu++17", "gnu++20", "gnu++23", "gnu++26")
# Linker flags that set a SONAME: only the `soname` key of a shared target does that.
SONAME_FLAGS = ("-Wl,-soname", "-Wl,-h,", "-Wl,--soname")
# Where compile_commands.json goes: under target/ only, or also linked from the workspace root.
COMPILE_COMMANDS = ("target", "root")
OPT_LEVELS = ("0", "1", "2", "3", "s", "z", "g")
TOOLCHAINS = ("gcc", "clang", "clang-19")
BUILTIN_PROFILES = ("dev", "release")
PLATFORMS = ("linux", "macos", "windows")  # [package] platforms: a declaration, not a gate
NOT_ACTED_SECTIONS = ("resources", "hooks")

_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
_SEMVER_RE = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$"
)


class Builder:
    def __init__(self, r: Reader, doc: dict, host_os: str, check_paths: bool = True):
        self.r = r
        self.doc = doc
        self.root = os.path.dirname(r.path)
        self.host_os = host_os
        self.check_paths = check_paths

    def build(self) -> Manifest:
        r, doc = self.r, self.doc
        self._top_level()
        members = self._workspace()
        package = doc.get("package")
        if package is None:
            if members is None:
                raise r.fail_at(r.pos((), "key"), "missing [package] table (a manifest needs [package] or [workspace])")
            return Manifest(path=AbsPath(r.path), root=self.root, name=None, version=None, workspace_members=members,
                            toolchain=self._toolchain(), warnings=r.warnings, smap=r.smap, provenance=r.provenance)
        r.expect(package, dict, ("package",))
        r.check_keys(package, ("package",), schema.PACKAGE.keys, schema.PACKAGE.case)
        name = self._package_name(package)
        version = self._package_version(package)
        namespace = r.opt(package, "namespace", str, ("package",))
        standard = r.opt(package, "standard", str, ("package",), DEFAULT_STANDARD)
        if standard not in STANDARDS:
            raise r.fail(("package", "standard"),
                         f"unknown standard `{standard}`; accepted values: {', '.join(STANDARDS)}")
        self._declarations(package)
        public_headers = self._public_headers(package)
        features, default_features = self._features()
        m = Manifest(
            path=AbsPath(r.path), root=self.root, name=name, version=version, namespace=namespace,
            standard=standard, build=self.read_build(doc["build"], ("build",)) if "build" in doc else BuildSpec(),
            profiles=self._profiles(), features=features, default_features=default_features,
            dependencies=self._deps("dependencies"), dev_dependencies=self._deps("dev-dependencies"),
            build_dependencies=self._deps("build-dependencies"),
            feature_deps=self._feature_deps(features), feature_xlings=self._feature_xlings(features),
            workspace_members=members, toolchain=self._toolchain(), warnings=r.warnings, smap=r.smap,
            provenance=r.provenance, public_headers=public_headers,
            description=r.opt(package, "description", str, ("package",)),
        )
        if "xlings" in doc:
            m.xlings = xlings.read_xlings(r, doc["xlings"], ("xlings",), None, self.host_os)
        m.payload_indexes = self._payload_indexes()
        if "runtime" in doc:
            m.runtime_artifacts, m.runtime_library_dirs = self.read_runtime(doc["runtime"], ("runtime",))
        if "source" in doc:
            m.vendor = deps.read_source(r, doc["source"], self.root)
        m.system_libs = tuple(s for s in m.dependencies if s.is_system)
        m.dev_system_libs = tuple(s for s in m.dev_dependencies if s.is_system)
        m.dependencies = tuple(s for s in m.dependencies if not s.is_system)
        m.dev_dependencies = tuple(s for s in m.dev_dependencies if not s.is_system)
        self._declared_deps = [s.key for s in m.dependencies + m.dev_dependencies]
        m.targets, m.explicit_targets = self._targets(name)
        m.lib_path = self._lib()
        m.test_dirs = self._test_dirs()
        return m

    # -- the top level -------------------------------------------------------------------------
    def _top_level(self) -> None:
        r = self.r
        for key, value in self.doc.items():
            if shape.is_condition_key(key, value) and key not in schema.TOP.keys:
                sel = shape.selector_for(key)
                inner = next(iter(value), "<section>")
                raise r.fail((key,), f"{header((key, inner))} writes a condition as a leading key; a condition is "
                                     f"written outside the section: {shape.target_form(sel, (inner,))}", prefer="key")
        r.check_keys(self.doc, (), schema.TOP.keys, schema.TOP.case, where="[top level]")
        for section in NOT_ACTED_SECTIONS:
            if section in self.doc:
                r.expect(self.doc[section], dict, (section,))
                r.warn((section,), f"[{section}] is not acted on by this engine yet (ignored)")

    # -- [package] -------------------------------------------------------------------------
    def _package_name(self, package: dict) -> str:
        if "name" not in package:
            raise self.r.fail(("package",), "missing `package.name`", prefer="key")
        name = self.r.expect(package["name"], str, ("package", "name"))
        if not _NAME_RE.match(name):
            raise self.r.fail(("package", "name"),
                              f"invalid package name `{name}`: use letters, digits, `-` and `_`, starting with a letter")
        return self.r.file_name(name, ("package", "name"), "package name")

    def _package_version(self, package: dict) -> str:
        if "version" not in package:
            raise self.r.fail(("package",), "missing `package.version`", prefer="key")
        version = self.r.expect(package["version"], str, ("package", "version"))
        if not _SEMVER_RE.match(version):
            raise self.r.fail(("package", "version"),
                              f"invalid version `{version}`: expected a semantic version such as `0.1.0`")
        return version

    def _declarations(self, package: dict) -> None:
        """`platforms` and `accelerators`: intent and CI hints, not gates (a build on an unlisted
        platform still runs; the accelerator set comes from `[build] accel`)."""
        r = self.r
        for i, p in enumerate(r.str_list(package, "platforms", ("package",)) or ()):
            if p not in PLATFORMS:
                r.unknown(("package", "platforms", i), f"unknown platform `{p}` in [package] platforms",
                          PLATFORMS)
        for i, a in enumerate(r.str_list(package, "accelerators", ("package",)) or ()):
            if not BACKEND_NAME.match(a):
                raise r.fail(("package", "accelerators", i),
                             f"`{a}` is not a backend name (such as `cuda` or `vulkan`); [package] accelerators "
                             f"lists backends, versions belong in [build] accel")

    def _public_headers(self, package: dict) -> tuple[str, ...] | None:
        """`include`: package-relative names of the headers (or directories of headers) that are
        the package's interface. Only their shape is checked here: a generated header exists
        only once the build program ran, so `mcpp install` looks them up."""
        r = self.r
        entries = r.str_list(package, "include", ("package",))
        for i, e in enumerate(entries or ()):
            norm = os.path.normpath(e) if e else ""
            if not e or os.path.isabs(e) or norm == ".." or norm.startswith("../"):
                raise r.fail(("package", "include", i),
                             f"`{e}` is not a path inside the package: [package] include names headers (or "
                             f"directories of them) relative to the package root, such as `zlib.h` or `include/zlib`")
        return entries

    # -- [targets], [lib] ----------------------------------------------------------------------
    def _targets(self, package_name: str) -> tuple[tuple[TargetSpec, ...], bool]:
        r = self.r
        table = r.opt(self.doc, "targets", dict, ())
        if table is None:
            return (), False
        out = []
        # Targets another target's `deps` may name: the package's libraries, static and shared.
        siblings = {n: s.get("kind", "bin") for n, s in table.items() if isinstance(s, dict)
                    and s.get("kind") in ("lib", "shared")}
        siblings.setdefault(package_name, "lib")  # the library of its [build] sources
        for tname, spec in table.items():
            kp = ("targets", tname)
            r.file_name(tname, kp, "target name", prefer="key")
            if tname.startswith("."):  # target/<profile>/.mcpp holds the engine's own files
                raise r.fail(kp, f"target name `{tname}` cannot start with `.`: such names are mcpp's "
                                 f"(target/<profile>/.mcpp)", prefer="key")
            r.expect(spec, dict, kp)
            self._target_keys(spec, kp, tname)
            kind = r.opt(spec, "kind", str, kp, "bin")
            if kind not in TARGET_KINDS:
                raise r.fail(kp + ("kind",),
                             f"invalid kind `{kind}` for target `{tname}`; accepted values: {', '.join(TARGET_KINDS)}")
            main = r.opt(spec, "main", str, kp)
            if kind in ("bin", "test"):
                if main is None and kind == "test":
                    raise r.fail(kp, f"test target `{tname}` needs `main`, the source holding its `main()`",
                                 prefer="key")
                main = main or next((d for d in DEFAULT_MAINS if os.path.isfile(os.path.join(self.root, d))),
                                    DEFAULT_MAINS[0])
                if not os.path.isfile(os.path.join(self.root, main)):
                    raise r.fail(kp + ("main",) if "main" in spec else kp,
                                 f"target `{tname}`: main source `{main}` does not exist")
            elif main is not None:
                raise r.fail(kp + ("main",), f"`main` applies to `bin` and `test` targets only (target `{tname}` "
                                             f"is `{kind}`)")
            for key in ("soname", "version"):
                if key in spec and kind != "shared":
                    raise r.fail(kp + (key,), f"`{key}` applies to `shared` targets only (target `{tname}` is "
                                              f"`{kind}`)", prefer="key")
            if kind == "lib":
                for key in ("ldflags", "link_inputs"):
                    if key in spec:
                        raise r.fail(kp + (key,), f"`{key}` does not apply to a `lib` target (`{tname}`): a "
                                                  f"static library is archived, not linked", prefer="key")
                if "sources" in spec and tname == package_name:
                    raise r.fail(kp + ("sources",), f"the library named after the package (`{tname}`) is its "
                                                    f"[build] sources: name them there, or give this library "
                                                    f"another name", prefer="key")
            for i, flag in enumerate(r.str_list(spec, "ldflags", kp) or ()):
                if flag.startswith(SONAME_FLAGS):
                    raise r.fail(kp + ("ldflags", i), f"`{flag}`: a SONAME is written `soname = \"...\"` on a "
                                                      f"`shared` target (the engine passes it to that link alone)")
            version = r.opt(spec, "version", str, kp)
            if version is not None and not re.match(r"^\d+(\.\d+)*$", version):
                raise r.fail(kp + ("version",), f"invalid shared-library version `{version}`: expected dot-separated "
                                                f"numbers such as `1.3.1`")
            soname = r.opt(spec, "soname", str, kp)
            if soname is not None:
                r.file_name(soname, kp + ("soname",), "soname")
            out.append(TargetSpec(
                tname, kind, main, r.pos(kp, "key"),
                sources=r.str_list(spec, "sources", kp) or (),
                include_dirs=tuple(PkgPath(d) for d in r.str_list(spec, "include_dirs", kp) or ()),
                defines=r.str_list(spec, "defines", kp) or (),
                cflags=r.str_list(spec, "cflags", kp) or (), cxxflags=r.str_list(spec, "cxxflags", kp) or (),
                ldflags=r.str_list(spec, "ldflags", kp) or (),
                deps=self._target_deps(spec, kp, tname, kind, siblings),
                libs=self._sibling_libs(spec, kp, tname, kind, siblings),
                link_inputs=self._link_inputs(spec, kp, tname),
                soname=soname, version=version, install=r.opt(spec, "install", bool, kp, True)))
        self._sibling_cycles(out)
        return tuple(out), True

    def _sibling_libs(self, spec: dict, kp: tuple, tname: str, kind: str, siblings: dict) -> tuple[str, ...]:
        """The libraries of this package a target's `deps` names (`gtest_main` depends on
        `gtest`): linked after the target's own objects, each before the libraries it names."""
        r = self.r
        out = []
        for i, name in enumerate(r.str_list(spec, "deps", kp) or ()):
            if name not in siblings:
                continue
            if name == tname:
                raise r.fail(kp + ("deps", i), f"target `{tname}` names itself in `deps`")
            if siblings[name] == "shared" and kind not in ("bin", "test"):
                raise r.fail(kp + ("deps", i), f"`{tname}` is a `{kind}` target: only a `bin` or `test` target "
                                               f"links the shared library `{name}`")
            other = self.doc["targets"].get(name)
            if kind == "shared" and isinstance(other, dict) and "sources" in other:
                raise r.fail(kp + ("deps", i), f"the shared library `{tname}` cannot link the static library "
                                               f"`{name}`, whose objects are not position-independent: name its "
                                               f"sources in `{tname}`'s `sources`")
            out.append(name)
        return tuple(out)

    def _sibling_cycles(self, targets: list[TargetSpec]) -> None:
        libs = {t.name: t for t in targets}
        state: dict[str, int] = {}  # 1: on the current path, 2: done

        def visit(t: TargetSpec, path: list[str]) -> None:
            state[t.name] = 1
            for i, name in enumerate(t.libs):
                if state.get(name) == 1:
                    cycle = " -> ".join(path[path.index(name):] + [name]) if name in path else f"{t.name} -> {name}"
                    raise self.r.fail(("targets", t.name, "deps", list(self._deps_of(t)).index(name)),
                                      f"the libraries of this package depend on each other in a cycle: {cycle}")
                if state.get(name) is None and name in libs:
                    visit(libs[name], path + [name])
            state[t.name] = 2

        for t in targets:
            if state.get(t.name) is None:
                visit(t, [t.name])

    def _deps_of(self, t: TargetSpec) -> tuple[str, ...]:
        return self.r.str_list(self.doc["targets"][t.name], "deps", ("targets", t.name)) or ()

    def _target_keys(self, spec: dict, kp: tuple, tname: str) -> None:
        """An unknown key under a target is an error, never a warning: a misspelt `defnies` or
        `cxxflag` builds that one target silently wrong, and only this target would show it."""
        r = self.r
        known = schema.TARGET_SPEC.keys
        for key in spec:
            if key in known:
                continue
            right = schema.did_you_mean(key, known) or schema.close_key(key, known)
            hint = f"; did you mean `{right}`?" if right else ""
            raise r.fail(kp + (key,), f"unknown key `{key}` in [targets.{tname}]{hint} (known keys: "
                                      f"{', '.join(known)})", prefer="key")

    def _target_deps(self, spec: dict, kp: tuple, tname: str, kind: str, siblings: dict) -> tuple[str, ...]:
        """Names of dependency entries the target links on top of the package's [dependencies]:
        a [dev-dependencies] entry (an example or a test that needs a test framework) or a
        [dependencies] one (already linked by every target; accepted, so moving an entry between
        the two sections does not break the target). A name of one of the package's own
        libraries is not one of them (`_sibling_libs`)."""
        r = self.r
        names = r.str_list(spec, "deps", kp) or ()
        declared = self._declared_deps
        for i, name in enumerate(names):
            if name not in declared and name not in siblings:
                listed = ", ".join(declared) if declared else "none are declared"
                own = f"; the libraries of this package are {', '.join(siblings)}" if siblings else ""
                raise r.fail(kp + ("deps", i), f"target `{tname}` depends on `{name}`, which neither [dependencies] "
                                               f"nor [dev-dependencies] declares ({listed}){own}")
        return tuple(n for n in names if n not in siblings)

    def _link_inputs(self, spec: dict, kp: tuple, tname: str) -> tuple[PkgPath, ...]:
        """Files the target's link reads: package files, or outputs of its build program, named
        `$OUT/<path>` (under `out_dir()`) or by their path there alone. A name that is not a
        file of the package is left for the planner to find among the program's outputs when
        the package has a build program (they do not exist before it runs)."""
        r = self.r
        files = r.str_list(spec, "link_inputs", kp) or ()
        has_program = os.path.isfile(os.path.join(self.root, PROGRAM_FILE))
        for i, rel in enumerate(files):
            generated = rel.startswith(OUT_PREFIX)
            inner = rel[len(OUT_PREFIX):] if generated else rel
            norm = os.path.normpath(inner) if inner else ".."
            if os.path.isabs(inner) or norm == ".." or norm.startswith("../") or "$" in inner:
                where = "the build program's output directory (`$OUT/...`)" if generated else "the package"
                raise r.fail(kp + ("link_inputs", i), f"link input `{rel}` of target `{tname}` must be a path inside "
                                                      f"{where}")
            if generated and not has_program:
                raise r.fail(kp + ("link_inputs", i), f"link input `{rel}` of target `{tname}` names an output of the "
                                                      f"build program, and this package has no `{PROGRAM_FILE}`")
            full = os.path.join(self.root, norm)
            if not generated and self.check_paths and not has_program and not os.path.isfile(full):
                raise r.fail(kp + ("link_inputs", i), f"link input `{rel}` of target `{tname}` does not exist")
        return tuple(PkgPath(f) for f in files)

    def _lib(self) -> str | None:
        table = self.r.opt(self.doc, "lib", dict, ())
        if table is None:
            return None
        self.r.check_keys(table, ("lib",), schema.LIB.keys, schema.LIB.case)
        path = self.r.opt(table, "path", str, ("lib",))
        if path is not None and not os.path.isfile(os.path.join(self.root, path)):
            raise self.r.fail(("lib", "path"), f"library source `{path}` does not exist")
        return path

    def _payload_indexes(self) -> tuple[str, ...]:
        """`[payloads] index`: one location or a list, each a directory inside the package (its
        payload index ships with it) or an `http(s)://` URL; nothing is read here, only when a
        payload the package declares is resolved (docs/payloads.md, "A package's own index")."""
        r = self.r
        table = r.opt(self.doc, "payloads", dict, ())
        if table is None:
            return ()
        r.check_keys(table, ("payloads",), schema.PAYLOADS.keys, schema.PAYLOADS.case)
        if "index" not in table:
            return ()
        value = table["index"]
        paths: list[tuple] = [("payloads", "index")]
        if isinstance(value, str):
            listed = [value]
        else:
            listed = list(r.str_list(table, "index", ("payloads",)) or ())
            paths = [("payloads", "index", i) for i in range(len(listed))]
        out = []
        for location, keypath in zip(listed, paths):
            scheme = location.split("://", 1)[0].lower() if "://" in location else ""
            if scheme in ("http", "https"):
                out.append(location.rstrip("/"))
                continue
            norm = os.path.normpath(location) if location else ""
            if scheme or not location or os.path.isabs(location) or norm == ".." or norm.startswith("../"):
                raise r.fail(keypath, f"`[payloads] index` names `{location}`; a package's payload index is a "
                                      f"directory inside the package (relative to this manifest) or an "
                                      f"http(s):// URL, never a path elsewhere on the machine")
            out.append(os.path.join(self.root, norm))
        return tuple(out)

    def _test_dirs(self) -> tuple[PkgPath, ...] | None:
        """`[test] dirs`: the directories whose C and C++ sources are tests (docs/manifest.md,
        "Tests"); each a directory inside the package."""
        r = self.r
        table = r.opt(self.doc, "test", dict, ())
        if table is None:
            return None
        r.check_keys(table, ("test",), schema.TEST.keys, schema.TEST.case)
        dirs = r.str_list(table, "dirs", ("test",))
        if dirs is None:
            return None
        for i, d in enumerate(dirs):
            norm = os.path.normpath(d) if d else ""
            if not d or os.path.isabs(d) or norm in (".", "..") or norm.startswith("../"):
                raise r.fail(("test", "dirs", i), f"`{d}` is not a directory inside the package: [test] dirs names "
                                                  f"directories relative to the package root, such as `test`")
        return tuple(PkgPath(os.path.normpath(d)) for d in dirs)

    # -- [build] (also [target.<selector>.build]) ----------------------------------------------
    def read_build(self, table: Any, kp: tuple) -> BuildSpec:
        r = self.r
        r.expect(table, dict, kp)
        for key, value in table.items():
            if shape.is_condition_key(key, value):
                raise shape.refuse_trailing(r, kp + (key,), kp[2:] if kp[0] == "target" else kp)
            if shape.is_platform_object(value):
                raise shape.refuse_platform_object(r, kp + (key,), value, kp[2:] if kp[0] == "target" else kp)
        r.check_keys(table, kp, schema.BUILD.keys, schema.BUILD.case)
        ldflags = r.str_list(table, "ldflags", kp) or ()
        for i, flag in enumerate(ldflags):
            if flag.startswith(SONAME_FLAGS):
                raise r.fail(kp + ("ldflags", i), f"`{flag}` in {header(kp)} ldflags would reach every executable "
                                                  f"the package links; give the shared target its name with "
                                                  f"`soname = \"...\"` under [targets.<name>]")
        commands = r.opt(table, "compile_commands", str, kp)
        if commands is not None and commands not in COMPILE_COMMANDS:
            raise r.fail(kp + ("compile_commands",), f"invalid compile_commands `{commands}`; accepted values: "
                                                     f"{', '.join(COMPILE_COMMANDS)}")
        accel = None
        if "accel" in table:
            accel = self._accel(r.expect(table["accel"], str, kp + ("accel",)), kp + ("accel",))
        flagged: list[SourceFlags] = []
        return BuildSpec(
            sources=self._sources(table, kp, flagged),
            include_dirs=r.str_list(table, "include_dirs", kp) or (),
            cflags=r.str_list(table, "cflags", kp) or (),
            cxxflags=r.str_list(table, "cxxflags", kp) or (),
            ldflags=ldflags,
            defines=r.str_list(table, "defines", kp) or (),
            compile_commands=commands,
            sources_pos=r.pos(kp + ("sources",)) if "sources" in table else None,
            accel=accel,
            source_flags=tuple(flagged),
        )

    def _sources(self, table: dict, kp: tuple, flagged: list[SourceFlags]) -> tuple[str, ...] | None:
        """Globs, or `{ glob, accel, cflags, cxxflags, defines }` entries narrowed by the build's
        accelerator set (fold.py); the entries with flags are added to `flagged`."""
        r = self.r
        if "sources" not in table:
            return None
        items = r.expect(table["sources"], list, kp + ("sources",))
        out = []
        for i, item in enumerate(items):
            ikp = kp + ("sources", i)
            if type(item) is dict:
                r.check_keys(item, ikp, schema.SOURCE_ENTRY.keys, schema.SOURCE_ENTRY.case,
                             where=f"the source entry {header(kp)} sources[{i}]")
                if "glob" not in item:
                    raise r.fail(ikp, "a source entry needs a `glob`: { glob = \"src/kernels/*.cu\", accel = \"cuda\" }")
                glob = r.expect(item["glob"], str, ikp + ("glob",))
                out.append(glob)
                if "accel" in item:
                    self._accel(r.expect(item["accel"], str, ikp + ("accel",)), ikp + ("accel",))
                flags = SourceFlags(glob, r.str_list(item, "cflags", ikp) or (), r.str_list(item, "cxxflags", ikp) or (),
                                    r.str_list(item, "defines", ikp) or ())
                if flags.cflags or flags.cxxflags or flags.defines:
                    if glob.startswith("!"):
                        raise r.fail(ikp + ("glob",), "a source entry with flags names the sources they reach; "
                                                      f"`{glob}` excludes sources instead")
                    flagged.append(flags)
            elif type(item) is str:
                out.append(item)
            else:
                raise r.fail(ikp, f"`{header(kp)[1:-1]}.sources.{i}` must be a glob string or a table "
                                  f"{{ glob, accel, cflags, cxxflags, defines }}, found {type_name(item)}")
        return tuple(out)

    def _accel(self, text: str, kp: tuple) -> AccelSet:
        try:
            return parse_accel(text)
        except AccelSyntaxError as e:
            raise self.r.fail_at(self.r.pos_inside(kp, e.offset), str(e)) from None

    # -- [profile.*], [toolchain] -------------------------------------------------------------
    def _profiles(self) -> dict[str, ProfileSpec]:
        r = self.r
        table = r.opt(self.doc, "profile", dict, ())
        out: dict[str, ProfileSpec] = {}
        for pname, spec in (table or {}).items():
            kp = ("profile", pname)
            r.file_name(pname, kp, "profile name", prefer="key")
            if pname in TARGET_FOLDERS:  # target/<profile> would be one of the engine's own folders
                raise r.fail(kp, f"profile name `{pname}` is taken by mcpp's own folder `target/{pname}` "
                                 f"(reserved: {', '.join(TARGET_FOLDERS)})", prefer="key")
            r.expect(spec, dict, kp)
            r.check_keys(spec, kp, schema.PROFILE.keys, schema.PROFILE.case, where=f"[profile.{pname}]")
            inherits = r.opt(spec, "inherits", str, kp)
            if inherits is not None and inherits not in BUILTIN_PROFILES and inherits not in table:
                names = ", ".join(sorted(set(BUILTIN_PROFILES) | set(table)))
                raise r.fail(kp + ("inherits",), f"profile `{pname}` inherits unknown profile `{inherits}`; known: {names}")
            opt = spec.get("opt")
            if opt is not None:
                if type(opt) not in (int, str):
                    raise r.fail(kp + ("opt",), f"`profile.{pname}.opt` must be an integer or a string, found {type_name(opt)}")
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
        self.r.check_keys(table, ("toolchain",), schema.TOOLCHAIN.keys, schema.TOOLCHAIN.case)
        value = self.r.opt(table, "default", str, ("toolchain",))
        if value is not None and value not in TOOLCHAINS:
            raise self.r.fail(("toolchain", "default"),
                              f"unknown toolchain `{value}`; accepted values: {', '.join(TOOLCHAINS)}")
        return value

    # -- gates: [features], [feature-deps.<f>], [feature-xlings.<f>] ------------------------------
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
                self._feature_table(fname, spec, kp)
                features[fname] = FeatureSpec(
                    fname, implies=r.str_list(spec, "implies", kp) or (),
                    defines=r.str_list(spec, "defines", kp) or (),
                    sources=r.str_list(spec, "sources", kp) or (), pos=r.pos(kp, "key"),
                    rule_module=r.opt(spec, "rule_module", str, kp),
                    rule_module_entry=r.opt(spec, "rule_module_entry", str, kp),
                    device_extensions=r.str_list(spec, "device_extensions", kp) or ())
            else:
                raise r.fail(kp, f"feature `{fname}` must be an array of implied features or a table, found {type_name(spec)}")
        for f in features.values():
            for i, implied in enumerate(f.implies):
                if implied not in features:
                    where = ("features", f.name, i) if type(table[f.name]) is list else ("features", f.name, "implies", i)
                    raise r.fail(where, f"feature `{f.name}` implies unknown feature `{implied}`" + _known(features))
        for i, d in enumerate(default):
            if d not in features:
                raise r.fail(("features", "default", i), f"default feature `{d}` is not declared" + _known(features))
        return features, default

    def _feature_table(self, fname: str, spec: dict, kp: tuple) -> None:
        """A gate is spelled [feature-deps.<f>], never [features.<f>.deps]: TOML cannot extend an
        inline feature table, so the nested spelling would break once the feature is inline."""
        r = self.r
        for key in spec:
            gate = schema.GATE_SPELLINGS.get(key)
            if gate is not None:
                raise r.fail(kp + (key,), f"[features.{fname}.{key}] is not a gate spelling: TOML cannot extend an "
                                          f"inline table (`{fname} = {{ sources = [...] }}` would make it a syntax "
                                          f"error), so what a feature pulls in is written [{gate}.{fname}]",
                             prefer="key")
        shape.check_siblings(r, spec, kp, ("features",))
        r.check_keys(spec, kp, schema.FEATURE.keys, schema.FEATURE.case, where=f"[features.{fname}]")

    def _gate_table(self, section: str, features: dict) -> list[tuple[str, Any, tuple]]:
        r = self.r
        table = r.opt(self.doc, section, dict, ())
        out = []
        for f, sub in (table or {}).items():
            kp = (section, f)
            if f not in features:
                declared = f"declared features: {', '.join(sorted(features))}" if features else "no features are declared"
                raise r.fail(kp, f"[{section}.{f}] gates on feature `{f}`, which [features] does not declare; {declared}",
                             prefer="key")
            out.append((f, sub, kp))
        return out

    def _feature_deps(self, features: dict) -> dict:
        return {f: deps.read_table(self.r, sub, kp, check_paths=False, root=self.root, feature=f)
                for f, sub, kp in self._gate_table("feature-deps", features)}

    def _feature_xlings(self, features: dict) -> dict:
        return {f: xlings.read_payload_table(self.r, sub, kp, None, self.host_os, feature=f)
                for f, sub, kp in self._gate_table("feature-xlings", features)}

    # -- library dependencies -----------------------------------------------------------------
    def _deps(self, section: str):
        if section not in self.doc:
            return ()
        # [dev-dependencies] are resolved only by `mcpp test` (engine/package/graph.py checks them there).
        return deps.read_table(self.r, self.doc[section], (section,),
                               check_paths=self.check_paths and section == "dependencies", root=self.root)

    # -- [runtime] (also [target.<selector>.runtime]) -------------------------------------------
    def read_runtime(self, table: Any, kp: tuple) -> tuple[tuple[RuntimeArtifact, ...], tuple[str, ...]]:
        r = self.r
        r.expect(table, dict, kp)
        for key, value in table.items():
            if shape.is_condition_key(key, value):
                raise shape.refuse_trailing(r, kp + (key,), kp[2:] if kp[0] == "target" else kp)
        r.check_keys(table, kp, schema.RUNTIME.keys, schema.RUNTIME.case)
        artifacts = []
        for i, art in enumerate(r.opt(table, "artifacts", list, kp) or ()):
            akp = kp + ("artifacts", i)
            r.expect(art, dict, akp)
            r.check_keys(art, akp, schema.ARTIFACT.keys, schema.ARTIFACT.case, where=f"{header(kp + ('artifacts',))}")
            values = {k: r.opt(art, k, str, akp) for k in ("role", "path", "provenance", "abi")}
            accel = self._accel(art["accel"], akp + ("accel",)) if r.opt(art, "accel", str, akp) is not None else None
            artifacts.append(RuntimeArtifact(accel=accel, **values))
        return tuple(artifacts), r.str_list(table, "library_dirs", kp) or ()

    # -- [workspace] -----------------------------------------------------------------------------
    def _workspace(self) -> tuple[str, ...] | None:
        r = self.r
        table = r.opt(self.doc, "workspace", dict, ())
        if table is None:
            return None
        r.check_keys(table, ("workspace",), schema.WORKSPACE.keys, schema.WORKSPACE.case)
        members = r.str_list(table, "members", ("workspace",)) or ()
        for i, member in enumerate(members):
            if not os.path.isfile(os.path.join(self.root, member, deps.MANIFEST_NAME)):
                raise r.fail(("workspace", "members", i), f"workspace member `{member}` has no {deps.MANIFEST_NAME}")
        return members


def _known(features: dict) -> str:
    return f"; declared features: {', '.join(sorted(features))}" if features else "; no features are declared"
