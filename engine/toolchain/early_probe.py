"""A first build's compiler questions, asked before the engine is imported.

With an empty `$MCPP_HOME` a build asks its compilers who they are (engine/toolchain/compilers.py)
and waits for the answers before it plans. Those processes need nothing of the engine: started
by `engine/entry.py` as soon as the command is known to build in this process, they run on
another core while the engine is imported, and the probe takes their answers instead of asking
again. Only the default toolchain (`gcc`) of a host build is asked this way, and only where its
answers cannot be in the home yet (no probe cache file), a manifest is above the working
directory and nothing may choose another toolchain (no `--toolchain`, `--target` or
`--manifest-path`, no `toolchain` in any of those manifests); otherwise the probe asks as it
always does. An answer is the same process the probe would start (the same arguments, in the
actions' environment), so the identity it gives is the one it would have given; questions the
build does not take are ended (`close`).

Imported by the console script before the engine: standard library and `core` only; `subprocess`
is imported when there is something to ask (a build imports it anyway).
"""
from __future__ import annotations

import os
from _collections_abc import Mapping  # what `collections.abc` re-exports, already loaded

from ..core.action_env import ACTION_ENV
from ..core.manifest_search import manifests_above
from ..core.mcpp_home import home_root

TYPE_CHECKING = False
if TYPE_CHECKING:
    from subprocess import Popen

# What a probe asks each driver besides its version (`version_flag`), all at once.
QUESTIONS = ("-dumpmachine", "-print-search-dirs", "-print-sysroot")
FULL_VERSION = "-dumpfullversion"
# The probe cache in the home (`Home.toolchains`, cas/home.py): where a home keeps what it was told.
PROBE_CACHE = "toolchains.json"
# The default toolchain's drivers (C, C++), as `compilers.driver_names("gcc")` names them.
DEFAULT_DRIVERS = ("gcc", "g++")
_BUILDS = ("build", "run", "test")
_GLOBAL_WITH_VALUE = ("--color", "-j", "--jobs")
# Anything that may choose another toolchain, target or manifest than a plain build's.
_CHOOSERS = ("--toolchain", "--target", "--manifest-path", "-h", "--help", "--version")


def version_flag(path: str) -> str:
    """How a driver is asked its full version: gcc's `-dumpversion` may answer the major alone
    (`12`), its `-dumpfullversion` the whole (`12.2.0`); clang knows only `-dumpversion`, which
    answers the whole. Asked the one question that answers; a gcc that does not know
    `-dumpfullversion` is asked `-dumpversion` after it (`compilers._ProbeCache.probe`)."""
    return "-dumpversion" if "clang" in os.path.basename(path) else FULL_VERSION


def questions(path: str, flags: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The command lines a probe runs to ask the driver `path` (with `flags`) about itself."""
    return [(path, *flags, flag) for flag in (version_flag(path), *QUESTIONS)]


def ask(argv: tuple[str, ...] | list[str]) -> Popen:
    """Start one question, in the environment actions run in (ACTION_ENV): the answer is cached
    by the binary's stat alone, and the user's `COMPILER_PATH` or `GCC_EXEC_PREFIX` would
    otherwise put program directories no action searches into it (and into the link key, as the
    linker it names). Raises OSError where the driver cannot be run."""
    import subprocess

    return subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(ACTION_ENV))


class EarlyProbes:
    """Questions already asked (command line -> its process), each taken at most once, and the
    `os.stat` of each driver taken before its questions were (`driver_stat`)."""

    def __init__(self, asked: dict[tuple[str, ...], Popen],
                 stats: dict[str, os.stat_result] | None = None) -> None:
        self.asked = asked
        self.stats = stats or {}

    def driver_stat(self, path: str) -> os.stat_result | None:
        """The driver's stat before it was asked: the probe takes the answers only while the
        driver's stat is still this one (the answers are of the binary it hashes)."""
        return self.stats.get(path)

    def take(self, argv: tuple[str, ...]) -> Popen | None:
        """The process asking exactly `argv`, or None where it was not asked early."""
        return self.asked.pop(tuple(argv), None)

    def close(self) -> None:
        """End the questions nobody took (a build whose toolchain is not the one guessed)."""
        asked, self.asked = self.asked, {}
        for proc in asked.values():
            if proc.poll() is None:
                proc.kill()
            proc.communicate()


def start(argv: list[str], environ: Mapping[str, str]) -> EarlyProbes | None:
    """The default toolchain's questions, started, where the command line `argv` (without the
    program's name) is a first build of it in the working directory (see the module's
    docstring); else None."""
    if not _plain_build(argv):
        return None
    if os.path.exists(os.path.join(home_root(environ), PROBE_CACHE)):
        return None
    found = False
    try:
        for manifest in manifests_above(os.getcwd()):
            found = True
            with open(manifest, "rb") as f:
                if b"toolchain" in f.read():
                    return None
    except OSError:
        return None
    if not found:  # no package here: the command says so, and asks no compiler
        return None
    drivers = [_which(name, environ) for name in DEFAULT_DRIVERS]
    asked: dict[tuple[str, ...], Popen] = {}
    stats: dict[str, os.stat_result] = {}
    try:
        for path in drivers:
            if path is None:
                continue
            stats[path] = os.stat(path)
            for argv_ in questions(path):
                asked[argv_] = ask(argv_)
    except OSError:
        pass  # what was started is still taken; the probe names a driver that cannot run
    return EarlyProbes(asked, stats) if asked else None


def _plain_build(argv: list[str]) -> bool:
    """Whether `argv` is `build`, `run` or `test` with nothing that may choose another toolchain."""
    command = None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            break
        if a.split("=", 1)[0] in _CHOOSERS:
            return False
        if command is None:
            if a in _GLOBAL_WITH_VALUE:
                i += 2
                continue
            if not a.startswith("-"):
                command = a
        i += 1
    return command in _BUILDS


def _which(name: str, environ: Mapping[str, str]) -> str | None:
    """`os.path.abspath(shutil.which(name))` as the probe finds a driver on PATH, without
    importing `shutil`; None where it is not found."""
    path = environ.get("PATH", os.defpath)
    for d in path.split(os.pathsep):
        candidate = os.path.join(d, name)
        if os.path.exists(candidate) and os.access(candidate, os.F_OK | os.X_OK) and not os.path.isdir(candidate):
            return os.path.abspath(candidate)
    return None
