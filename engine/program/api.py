"""The global `mcpp` struct of a build program (docs/rules.md), one Python method per function.

Each method validates its arguments and records what the program declares into a
`ProgramResult`; what it reads (files, globs, environment variables) goes into a `Reads`
record so the evaluation cache can tell when the program must run again. A `ProgramApiError`
becomes a Starlark error at the calling line, with the Starlark call stack (evaluate.py).
"""
from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field

import blake3

from ..core import containment
from ..core.containment import inside
from ..core.errors import ManifestError
from ..manifest import globs
from ..package.program_result import ROLES, ProgramResult, RuleAction
from ..payloads import version as payload_version
from .api_context import ContextApi
from .api_errors import ProgramApiError, _need_str
from .api_providers import ProvidersApi
from .api_targets import TargetsApi
from .context import ProgramContext
from .probe import ProbeSettings

# `floor("name >= version")`: the shape checked here, compared with facts in driver.py.
FLOOR = re.compile(r"\s*(?P<name>[A-Za-z0-9_.:+-]+)\s*(?P<op>>=|==)\s*(?P<version>\S+)\s*$")


@dataclass
class Reads:
    """Everything an evaluation read, with what it saw: the cache's validity conditions."""

    files: dict[str, str | None] = field(default_factory=dict)  # absolute path -> blake3 hex, None: missing
    globs: dict[str, list[str]] = field(default_factory=dict)  # pattern -> package-relative matches
    env: dict[str, str | None] = field(default_factory=dict)  # variable -> value, None: unset


def file_digest(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return blake3.blake3(f.read()).hexdigest()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


class McppApi(ContextApi, ProvidersApi, TargetsApi):
    """The functions behind `mcpp.<name>` for one package's evaluation."""

    FUNCTIONS = ("manifest_dir", "out_dir", "package_name", "profile", "target", "host", "has_feature",
                 "accel", "device_sources", "dep_bin", "xpkg_dir", "action", "generated", "source",
                 "cxxflag", "cflag", "define", "include_dir", "link_lib", "link_search", "warning",
                 "fact", "floor", "read_file", "glob", "rerun_if_env_changed",
                 *ContextApi.CONTEXT_FUNCTIONS,
                 "provide", "dep_info",
                 "probe",
                 *TargetsApi.TARGET_FUNCTIONS)

    def __init__(self, ctx: ProgramContext, environ: dict[str, str] | None = None,
                 probes: ProbeSettings | None = None):
        self.ctx = ctx
        self.probes = probes or ProbeSettings()  # where `mcpp.probe` runs and caches (probe.py)
        self.result = ProgramResult()
        self.reads = Reads()
        self._environ = os.environ if environ is None else environ
        self._ids: set[str] = set()
        # (where, via) of the declaration being made: set by the prelude's wrapper (evaluate.py)
        self.declared_at: tuple[str, tuple[str, ...]] = ("", ())

    # -- build context -------------------------------------------------------------------------
    def manifest_dir(self) -> str:
        return self.ctx.manifest_dir

    def out_dir(self) -> str:
        return self.ctx.out_dir

    def package_name(self) -> str:
        return self.ctx.package

    def profile(self) -> str:
        return self.ctx.profile

    def target(self) -> str:
        return self.ctx.target

    def host(self) -> str:
        return self.ctx.host

    def has_feature(self, name: str) -> bool:
        _need_str("has_feature", "name", name)
        return name in self.ctx.features

    def accel(self) -> list[dict]:
        return [{"name": e.name, "version": e.version, "archs": list(e.archs), "floor": e.floor} for e in self.ctx.accel]

    def device_sources(self, ext: str | None = None) -> list[str]:
        if ext is not None:
            _need_str("device_sources", "ext", ext)
            ext = ext if ext.startswith(".") else "." + ext
            return [s for s in self.ctx.device_sources if os.path.splitext(s)[1] == ext]
        return list(self.ctx.device_sources)

    def dep_bin(self, pkg: str, tool: str) -> str:
        _need_str("dep_bin", "pkg", pkg)
        _need_str("dep_bin", "tool", tool)
        for t in self.ctx.tools:
            if t.tool == tool and (t.entry == pkg or t.entry.rsplit(".", 1)[-1] == pkg):
                return t.path
        have = ", ".join(f"{t.entry}:{t.tool}" for t in self.ctx.tools) or "none"
        raise ProgramApiError(
            f"no host tool `{pkg}:{tool}` reaches package `{self.ctx.package}` (available: {have}); a tool "
            f"comes from `tools = [...]` on a dependency entry of this package, or from a feature it activates "
            f"whose entry says `reexport = true`")

    def xpkg_dir(self, a: str, b: str | None = None) -> str:
        """`xpkg_dir("xim:gen")`, `xpkg_dir("gen")`, `xpkg_dir("xim", "gen")`, with a version
        requirement `xpkg_dir("xim:gen@>=1.2")` or `xpkg_dir("xim:gen", ">=1.2")`: the installed
        directory of the build's one version of that payload, `""` when the environment has none
        (or has one the requirement excludes). The environment is the project's, whichever
        package or axis declared the payload."""
        _need_str("xpkg_dir", "name", a)
        requirement = ""
        if b is not None:
            _need_str("xpkg_dir", "name", b)
            if _is_requirement(b):
                requirement = b
            else:
                a = f"{a}:{b}"
        ns, _, rest = a.rpartition(":")
        name, _, at = rest.partition("@")
        requirement = requirement or at
        req = payload_version.parse(requirement)
        if isinstance(req, str):
            raise ProgramApiError(f"xpkg_dir(`{a}`): {req}")
        for p in self.ctx.payloads:
            if p.name == name and (not ns or ns == p.namespace):
                if not p.directory:
                    raise ProgramApiError(f"payload `{p.namespace}:{p.name}` is in the environment but not "
                                          f"installed")
                return p.directory if req.allows(p.version) else ""
        return ""

    # -- declarations ----------------------------------------------------------------------------
    def action(self, id, argv, inputs, outputs, tools=None, role="object", env=None, description="",
               depfile=None) -> None:
        _need_str("action", "id", id)
        where = f"package `{self.ctx.package}`, action `{id}`"
        if id in self._ids:
            raise ProgramApiError(f"{where}: the id is declared twice")
        if role not in ROLES:
            raise ProgramApiError(f"{where}: unknown role `{role}` (expected one of: {', '.join(ROLES)})")
        _no_nul(where, "id", id)
        argv = _str_list(argv, f"{where}: argv")
        if not argv:
            raise ProgramApiError(f"{where}: argv is empty")
        for arg in argv:
            _no_nul(where, "argv", arg)
        outs = [self._file_path(where, "output", p) + _tree_mark(p) for p in _str_list(outputs, f"{where}: outputs")]
        if not outs:
            raise ProgramApiError(f"{where}: declares no outputs (every action must produce a file under out_dir())")
        for declared, resolved in zip(outputs, outs):
            if not inside(resolved, self.ctx.out_dir):
                raise ProgramApiError(f"{where}: output `{declared}` is outside out_dir() (`{self.ctx.out_dir}`)")
            if resolved.rstrip("/") == os.path.normpath(self.ctx.out_dir):
                raise ProgramApiError(f"{where}: output `{declared}` is out_dir() itself; an output is a file under it")
            clash = next((o for o in outs if o.startswith(resolved.rstrip("/") + "/") and o != resolved), None)
            if clash is not None:
                raise ProgramApiError(f"{where}: output `{declared}` would be the directory of output "
                                      f"`{os.path.relpath(clash, self.ctx.out_dir)}`; an output is a file")
        tree = next((d for d in outputs if _tree_mark(d)), None)
        if tree is not None and role in ("source", "object"):
            raise ProgramApiError(f"{where}: output `{tree}` is a tree (its files are known only once the action "
                                  f"ran), so it cannot be compiled or linked with role = \"{role}\"; use role = "
                                  f"\"check\" or \"artifact\" and read it from a later action (`inputs = [\"{tree}\"]`)")
        ins = [self._file_path(where, "input", p) + _tree_mark(p) for p in _str_list(inputs, f"{where}: inputs")]
        tool_paths = [self._file_path(where, "tool", p) for p in _str_list(tools or [], f"{where}: tools")]
        for declared, resolved in zip(inputs, ins):
            if _tree_mark(declared) and not inside(resolved.rstrip("/"), self.ctx.out_dir):
                raise ProgramApiError(f"{where}: input `{declared}` ends in `/`, so it is a tree output of another "
                                      f"action, and those are under out_dir() (`{self.ctx.out_dir}`)")
        for declared, resolved in zip(list(inputs) + list(tools or []), ins + tool_paths):
            if os.path.isdir(resolved) and not (resolved in ins and _tree_mark(declared)):
                raise ProgramApiError(f"{where}: `{declared}` is a directory; list the files the action reads "
                                      f"(`mcpp.glob(\"dir/**\")` finds them)")
        if env is not None and not (isinstance(env, dict) and all(isinstance(k, str) and isinstance(v, str)
                                                                   for k, v in env.items())):
            raise ProgramApiError(f"{where}: env must be a dict of strings")
        for k, v in (env or {}).items():
            _no_nul(where, "env", k + v)
            if not k or "=" in k:
                raise ProgramApiError(f"{where}: env variable name `{k}` is empty or contains `=`")
        dep = None
        if depfile is not None:
            _need_str("action", "depfile", depfile)
            dep = self._file_path(where, "depfile", depfile)
            if not inside(dep, self.ctx.out_dir):
                raise ProgramApiError(f"{where}: depfile `{depfile}` is outside out_dir() (`{self.ctx.out_dir}`)")
        _need_str("action", "description", description)
        self._ids.add(id)
        self.result.actions.append(RuleAction(
            id=id, argv=tuple(argv), inputs=tuple(ins), outputs=tuple(outs), tools=tuple(tool_paths), role=role,
            env=tuple(sorted((env or {}).items())), description=description, depfile=dep,
            where=self.declared_at[0], via=self.declared_at[1]))

    def generated(self, path: str) -> None:
        _need_str("generated", "path", path)
        resolved = self._path(path)
        if not inside(resolved, self.ctx.out_dir):
            raise ProgramApiError(f"generated source `{path}` is outside out_dir() (`{self.ctx.out_dir}`)")
        self.result.generated.append(resolved)

    def source(self, path: str) -> None:
        _need_str("source", "path", path)
        resolved = self._path(path)
        if not inside(resolved, self.ctx.manifest_dir) or inside(resolved, self.ctx.out_dir):
            raise ProgramApiError(f"source `{path}` is not a file of package `{self.ctx.package}`")
        self._inside(resolved, f"source(`{path}`)")
        self.result.sources.append(os.path.relpath(resolved, self.ctx.manifest_dir))

    def cxxflag(self, flag: str) -> None:
        self.result.cxxflags.append(_need_str("cxxflag", "flag", flag))

    def cflag(self, flag: str) -> None:
        self.result.cflags.append(_need_str("cflag", "flag", flag))

    def define(self, d: str) -> None:
        self.result.defines.append(_need_str("define", "d", d))

    def include_dir(self, d: str) -> None:
        self.result.include_dirs.append(self._path(_need_str("include_dir", "d", d)))

    def link_lib(self, lib: str) -> None:
        self.result.link_libs.append(_need_str("link_lib", "l", lib))

    def link_search(self, d: str) -> None:
        self.result.link_search.append(self._path(_need_str("link_search", "d", d)))

    def warning(self, text: str) -> None:
        self.result.warnings.append(_need_str("warning", "text", text))

    def fact(self, name: str, version: str) -> None:
        _need_str("fact", "name", name)
        self.result.facts[name] = _need_str("fact", "version", version)

    def floor(self, requirement: str) -> None:
        _need_str("floor", "requirement", requirement)
        if not FLOOR.match(requirement):
            raise ProgramApiError(f"malformed floor `{requirement}` (expected `name >= version`)")
        self.result.floors.append(requirement)

    # -- reads -----------------------------------------------------------------------------------
    def read_file(self, path: str) -> str:
        _need_str("read_file", "path", path)
        resolved = self._path(path)
        if not inside(resolved, self.ctx.manifest_dir):
            raise ProgramApiError(f"read_file(`{path}`): a build program reads only files of its own package")
        self._inside(resolved, f"read_file(`{path}`)")
        try:
            regular = stat.S_ISREG(os.stat(resolved).st_mode)
        except OSError:
            regular = True  # nothing there: the read below names why
        if not regular:  # a FIFO would block the read, a device never end it
            raise ProgramApiError(f"read_file(`{path}`): not a regular file")
        self.reads.files[resolved] = file_digest(resolved)
        try:
            with open(resolved, "rb") as f:
                data = f.read()
        except OSError as e:
            raise ProgramApiError(f"read_file(`{path}`): {e.strerror}") from None
        try:
            return data.decode()
        except UnicodeDecodeError:
            raise ProgramApiError(f"read_file(`{path}`): not UTF-8 text") from None

    def glob(self, pattern: str) -> list[str]:
        _need_str("glob", "pattern", pattern)
        if pattern.startswith("/") or ".." in pattern.split("/"):
            raise ProgramApiError(f"glob(`{pattern}`): patterns are relative to the package and stay inside it")
        try:
            found = run_glob(self.ctx.manifest_dir, pattern)
        except ManifestError as e:  # a symlink out of the package, an unreadable directory
            raise ProgramApiError(f"glob(`{pattern}`): {e.message}") from None
        self.reads.globs[pattern] = found
        return list(found)

    def rerun_if_env_changed(self, name: str) -> str | None:
        _need_str("rerun_if_env_changed", "name", name)
        value = self._environ.get(name)
        self.reads.env[name] = value
        return value

    # -- helpers ---------------------------------------------------------------------------------
    def _inside(self, resolved: str, call: str) -> None:
        """The engine reads this path outside any sandbox: a symlink must not lead it out of the
        package (engine/core/containment.py)."""
        try:
            containment.check(resolved, self.ctx.manifest_dir, shown=f"`{resolved}`")
        except containment.SymlinkEscape as e:
            raise ProgramApiError(f"{call}: {e.message}") from None

    def _path(self, path: str) -> str:
        """Relative paths resolve against the package root, never the action's directory."""
        return os.path.normpath(os.path.join(self.ctx.manifest_dir, path))

    def _file_path(self, where: str, what: str, path: str) -> str:
        """A path the engine will stat, stage or create: no NUL byte, and names the file system
        can hold (checked here, so a bad one is an error at its line, not an OSError mid-build)."""
        _no_nul(where, what, path)
        resolved = self._path(path)
        shown = path if len(path) <= 80 else path[:60] + "..."
        if len(resolved.encode()) >= _PATH_MAX or any(len(part.encode()) > _NAME_MAX for part in resolved.split("/")):
            raise ProgramApiError(f"{where}: {what} `{shown}` is longer than a file system allows "
                                  f"({_NAME_MAX} bytes a name, {_PATH_MAX} a path)")
        return resolved


def _is_requirement(text: str) -> bool:
    """Whether the second argument of `xpkg_dir` is a version requirement rather than a name."""
    return bool(re.match(r"^\s*(>=|<=|>|<|=|\^|~|\d)", text)) and not isinstance(payload_version.parse(text), str)


def run_glob(root: str, pattern: str) -> list[str]:
    return sorted(globs.expand(root, [pattern]))


def _tree_mark(path: str) -> str:
    """An output (or input) written with a trailing `/` is a tree: a directory the action fills
    (cas/tree.py); the mark survives normalisation so every later stage can tell."""
    return "/" if path.endswith("/") and path.strip("/") else ""


_NAME_MAX = 255  # Linux: bytes in one path component
_PATH_MAX = 4096  # Linux: bytes in a path, NUL included


def _no_nul(where: str, what: str, value: str) -> None:
    if "\0" in value:
        raise ProgramApiError(f"{where}: {what} contains a NUL byte")


def _str_list(value, what: str) -> list[str]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ProgramApiError(f"{what} must be a list of strings")
    return list(value)
