"""System libraries: `z = { pkg-config = "zlib" }` and `z = { system = "z" }` dependencies.

A `system` entry is a bare `-l<name>` on every link of the package and of its dependents. A
`pkg-config` entry takes its compile flags (`--cflags`: `-I`, `-D`) and link flags (`--libs`)
from the `pkg-config` program, asked in the engine's own environment (the user's
`PKG_CONFIG_PATH`), never from inside an action: what it answers becomes part of the command
lines, so of the action keys, and the files those flags then read (headers, `libz.so`) are keyed
as every system file is, through the compile's and the link's depfiles.

Asking costs a process or two, so per build each module is located once (`pkg-config --path`),
and its flags are cached in `$MCPP_HOME/pkg-config.json` by the digest of that `.pc` file (and the
environment pkg-config reads): an edited `.pc` is asked again. The `.pc` file is also one of the
files the no-op record watches, so editing it sends the next build down the full path.

The directories the flags name (`-I/opt/zlib/include`, `-L/opt/zlib/lib`) are bound read-only
into the sandbox beside the system roots (`staged_dirs`), so a `.pc` outside `/usr` builds the
same under the sandbox as without it.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field

from mcpp.cas.atomic import PUBLIC, write_atomic
from mcpp.cas.digest import digest_file

from ..core.errors import ManifestError
from ..manifest.model import DependencySpec

_ENV_NAMES = ("PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR", "PKG_CONFIG_SYSROOT_DIR")
_TIMEOUT_S = 30


@dataclass(frozen=True)
class SystemFlags:
    """What one package's system libraries add: to its compiles (and its dependents'), to its
    links (and its dependents'), the `.pc` files they came from, and the directories they name."""

    cflags: tuple[str, ...] = ()
    libs: tuple[str, ...] = ()
    pc_files: tuple[str, ...] = ()
    dirs: tuple[str, ...] = ()

    def identity(self) -> tuple:
        return self.cflags, self.libs


@dataclass
class PkgConfig:
    """One build's answers, by module name; the persistent cache under `home_root`."""

    home_root: str
    env: dict = field(default_factory=lambda: dict(os.environ))
    answers: dict[str, tuple[tuple[str, ...], tuple[str, ...], str]] = field(default_factory=dict)
    _cache: dict | None = None
    _dirty: bool = False

    @property
    def cache_path(self) -> str:
        return os.path.join(self.home_root, "pkg-config.json")

    def flags_of(self, specs: tuple[DependencySpec, ...]) -> SystemFlags:
        cflags: list[str] = []
        libs: list[str] = []
        pcs: list[str] = []
        for spec in specs:
            if spec.system is not None:
                libs.append(f"-l{spec.system}")
                continue
            c, l, pc = self.module(spec)
            cflags += [f for f in c if f not in cflags]
            libs += l
            pcs.append(pc)
        dirs = [f[2:] for f in cflags + libs if f.startswith(("-I", "-L")) and os.path.isabs(f[2:])]
        return SystemFlags(tuple(cflags), tuple(libs), tuple(pcs), tuple(dict.fromkeys(dirs)))

    def module(self, spec: DependencySpec) -> tuple[tuple[str, ...], tuple[str, ...], str]:
        """(cflags, libs, .pc file) of `spec`'s module: located once per build, its flags from the
        cache while the `.pc` file's digest is unchanged."""
        name = spec.pkg_config
        assert name is not None
        if name in self.answers:
            return self.answers[name]
        pc = self._run(spec, ["--path", name]).strip()
        if not pc or not os.path.isfile(pc):
            raise self._missing(spec)
        digest = digest_file(pc).hash
        ident = "\0".join([name, pc, *(f"{k}={self.env.get(k, '')}" for k in _ENV_NAMES)])
        cache = self._load()
        hit = cache.get(ident)
        if isinstance(hit, dict) and hit.get("digest") == digest and isinstance(hit.get("cflags"), list) \
                and isinstance(hit.get("libs"), list):
            answer = (tuple(hit["cflags"]), tuple(hit["libs"]), pc)
        else:
            import shlex  # only a package with a pkg-config library: not on a build's import path

            cflags = tuple(shlex.split(self._run(spec, ["--cflags", name])))
            libs = tuple(shlex.split(self._run(spec, ["--libs", name])))
            cache[ident] = {"digest": digest, "cflags": list(cflags), "libs": list(libs)}
            self._dirty = True
            answer = (cflags, libs, pc)
        self.answers[name] = answer
        return answer

    def save(self) -> None:
        if self._dirty and self._cache is not None:
            os.makedirs(self.home_root, exist_ok=True)
            write_atomic(self.cache_path, json.dumps(self._cache), mode=PUBLIC)
            self._dirty = False

    def _load(self) -> dict:
        if self._cache is None:
            try:
                with open(self.cache_path) as f:
                    loaded = json.load(f)
            except (OSError, ValueError):
                loaded = {}
            self._cache = loaded if isinstance(loaded, dict) else {}
        return self._cache

    def _run(self, spec: DependencySpec, args: list[str]) -> str:
        program = shutil.which("pkg-config", path=self.env.get("PATH"))
        if program is None:
            raise ManifestError(f"system library `{spec.key}` is found through pkg-config, and `pkg-config` is not "
                                f"on PATH", spec.pos,
                                ["help: install pkg-config (apt-get install pkg-config), or declare the library "
                                 f"as `{spec.key} = {{ system = \"...\" }}` (a bare `-l`)"])
        try:
            proc = subprocess.run([program, "--print-errors", *args], capture_output=True, text=True,
                                  env=self.env, stdin=subprocess.DEVNULL, timeout=_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ManifestError(f"`pkg-config {' '.join(args)}` did not answer in {_TIMEOUT_S} s", spec.pos)
        if proc.returncode != 0:
            raise self._missing(spec, proc.stderr.strip())
        return proc.stdout

    def _missing(self, spec: DependencySpec, said: str = "") -> ManifestError:
        path, libdir = self.env.get("PKG_CONFIG_PATH", ""), self.env.get("PKG_CONFIG_LIBDIR")
        where = f"PKG_CONFIG_PATH={path}" if path else "PKG_CONFIG_PATH is not set"
        where += f", then PKG_CONFIG_LIBDIR={libdir}" if libdir is not None else ", then pkg-config's default directories"
        notes = [f"note: pkg-config said: {said.splitlines()[0]}"] if said else []
        notes.append(f"help: install the package that ships `{spec.pkg_config}.pc` (its -dev package), or add the "
                     f"directory holding it to PKG_CONFIG_PATH")
        return ManifestError(f"system library `{spec.key}`: pkg-config finds no package `{spec.pkg_config}` "
                             f"({where})", spec.pos, notes)
