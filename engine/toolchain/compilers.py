"""The compilers of a build: which binaries, which version and target, and their identity.

Probing a compiler costs a few process starts, so the answer is cached in `$MCPP_HOME`, once per
driver path, flags and content: a build reads one small file and stats the drivers. A driver whose
stat (device, inode, size, mtime) changed is hashed, and the same bytes keep their answers (a
toolchain reinstalled or copied back into place, a home restored by a CI job); other bytes are
asked again. The identity (version, target triple and the blake3 of the compiler binary) goes
into every action key, so an upgraded compiler rebuilds everything and two machines with the
same compiler share results.

Where the cache has no answer (a first build in an empty home), the drivers are asked when their
identity is first read, not when the toolchain is resolved: a compile's command line needs only
the driver's path, so the first build plans its first compile and hands it to the sandbox
(engine/exec/head_start.py) before the questions' processes start (their start-up costs the
planning thread ~6 ms, and their answers ~4 ms more); its links, and the keys of its actions,
read the identity and wait for it.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass

from mcpp.cas.atomic import PUBLIC, write_atomic
from mcpp.cas.digest import digest_file
from mcpp.cas.home import Home
from mcpp.cas.statcache import discard

from ..core.action_env import ACTION_ENV
from ..core.errors import McppError

# name -> (C compiler, C++ compiler, family)
_KNOWN = {
    "gcc": ("gcc", "g++", "gcc"),
    "clang": ("clang", "clang++", "clang"),
}
# A versioned driver pair as Debian and apt.llvm.org install them: clang-19 / clang++-19.
_VERSIONED = re.compile(r"^(clang|gcc)-(\d+)$")
TOOLCHAIN_NAMES = ("gcc", "gcc-NN", "clang", "clang-NN")


@dataclass(frozen=True)
class Identity:
    """What a driver answers about itself (cached in the home: `_ProbeCache`)."""
    version: str
    target: str
    digest: str  # blake3 of the binary
    # The driver's program directories (`-print-search-dirs`), where it and its linker driver
    # look for the programs they run before PATH (engine/toolchain/linker.py)
    programs: tuple[str, ...] = ()
    sysroot: str = ""  # `-print-sysroot`: where the driver finds the target's libc ("" : none)


class Compiler:
    """One compiler driver found on PATH, with its identity: given, or asked of the driver the
    first time any part of it is read (`_Round`). Equal, hashed and pickled by path and identity."""

    __slots__ = ("path", "_identity", "_round")

    def __init__(self, path: str, version: str = "", target: str = "", digest: str = "",
                 programs: tuple[str, ...] = (), sysroot: str = "", *, asked: _Round | None = None):
        self.path = path  # absolute path as found on PATH (a symlink's name selects the driver mode)
        self._identity = None if asked is not None else Identity(version, target, digest, tuple(programs), sysroot)
        self._round = asked

    def identity(self) -> Identity:
        if self._identity is None:
            assert self._round is not None
            self._identity = self._round.identity(self.path)
        return self._identity

    @property
    def version(self) -> str:
        return self.identity().version

    @property
    def target(self) -> str:
        return self.identity().target

    @property
    def digest(self) -> str:
        return self.identity().digest

    @property
    def programs(self) -> tuple[str, ...]:
        return self.identity().programs

    @property
    def sysroot(self) -> str:
        return self.identity().sysroot

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Compiler):
            return NotImplemented
        return self.path == other.path and self.identity() == other.identity()

    def __hash__(self) -> int:
        return hash((self.path, self.identity()))

    def __reduce__(self):
        i = self.identity()
        return (Compiler, (self.path, i.version, i.target, i.digest, i.programs, i.sysroot))

    def __repr__(self) -> str:
        shown = repr(self._identity) if self._identity is not None else "not asked yet"
        return f"Compiler({self.path!r}, {shown})"


@dataclass(frozen=True)
class Toolchain:
    """The C and C++ compilers and tools a build uses."""
    name: str
    family: str  # "gcc" or "clang"
    cc: Compiler
    cxx: Compiler
    ar: str
    # A cross toolchain's (engine/toolchain/cross.py): what every compile and link of the target
    # passes right after the driver (`--target=`, `--sysroot=`), what links alone pass
    # (`-fuse-ld=lld`), the target triple and the sysroot its files come from (None: the host's)
    flags: tuple[str, ...] = ()
    link_flags: tuple[str, ...] = ()
    triple: str | None = None
    sysroot: str | None = None

    @property
    def identity(self) -> str:
        base = f"{self.family} {self.cxx.version} {self.cxx.target} cxx={self.cxx.digest} cc={self.cc.digest}"
        if self.triple is None:
            return base
        return f"{base} triple={self.triple} flags={' '.join(self.flags)} link={' '.join(self.link_flags)}"

    @property
    def tool_dirs(self) -> tuple[str, ...]:
        return tuple(sorted({os.path.dirname(self.cc.path), os.path.dirname(self.cxx.path), os.path.dirname(self.ar)}))


def resolve_toolchain(name: str | None, home: Home) -> Toolchain:
    name = name or "gcc"
    cc_name, cxx_name, family = driver_names(name)
    cache = _ProbeCache(str(home.toolchains))
    cc, cxx = cache.probe(_which(cc_name, name), _which(cxx_name, name))
    cache.save()
    ar = shutil.which("ar") or "/usr/bin/ar"
    return Toolchain(name=name, family=family, cc=cc, cxx=cxx, ar=os.path.realpath(ar))


def probe_compilers(home: Home, paths: tuple[str, str], flags: tuple[str, ...] = ()) -> list[Compiler]:
    """The identities of the drivers `paths` (C, C++) asked with `flags` before each question
    (a cross clang answers `-dumpmachine` for its `--target=`)."""
    cache = _ProbeCache(str(home.toolchains))
    found = cache.probe(*paths, flags=flags)
    cache.save()
    return found


def driver_names(name: str) -> tuple[str, str, str]:
    """(C driver, C++ driver, family) of the toolchain `name` (`gcc`, `clang-19`, ...)."""
    if name.startswith("path:"):
        raise McppError(f"unknown toolchain `{name}`; accepted values: {', '.join(TOOLCHAIN_NAMES)}")
    versioned = _VERSIONED.match(name)
    if versioned:
        family, number = versioned.groups()
        cc_name, cxx_name = name, f"{'clang++' if family == 'clang' else 'g++'}-{number}"
    elif name in _KNOWN:
        cc_name, cxx_name, family = _KNOWN[name]
        if family == "clang" and shutil.which(cxx_name) is None:
            # Debian installs only the versioned names (clang-19); take the newest installed.
            newest = _newest_versioned("clang", "clang++")
            if newest is not None:
                cc_name, cxx_name = newest
    else:
        raise McppError(f"unknown toolchain `{name}`; accepted values: {', '.join(TOOLCHAIN_NAMES)}")
    return cc_name, cxx_name, family


def _newest_versioned(cc: str, cxx: str) -> tuple[str, str] | None:
    """The `cc-NN`/`cxx-NN` pair on PATH with the highest NN, both present, or None."""
    pattern = re.compile(rf"^{re.escape(cxx)}-(\d+)$")
    numbers: set[int] = set()
    for d in os.environ.get("PATH", "").split(os.pathsep):
        try:
            names = os.listdir(d or ".")
        except OSError:
            continue
        for n in names:
            m = pattern.match(n)
            if m:
                numbers.add(int(m.group(1)))
    for number in sorted(numbers, reverse=True):
        pair = (f"{cc}-{number}", f"{cxx}-{number}")
        if all(shutil.which(b) for b in pair):
            return pair
    return None


def which_driver(binary: str, toolchain: str) -> str:
    return _which(binary, toolchain)


def _which(binary: str, toolchain: str) -> str:
    found = shutil.which(binary)
    if found is None:
        hint = " (apt-get install clang-19 libc++-19-dev libc++abi-19-dev)" if "clang" in binary else ""
        raise McppError(f"toolchain `{toolchain}`: `{binary}` was not found on PATH{hint}")
    # Not realpath: `clang++` is a symlink to `clang`, and the driver's mode comes from the name
    # it is invoked by. The digest below is of the file the link points to.
    return os.path.abspath(found)


class _ProbeCache:
    """`$MCPP_HOME/toolchains.json`: {"<driver path> <flags>": {"stamp", "digest", "version",
    "target", "programs", "sysroot"}}. Builds running at once each write the whole file
    atomically, the entries they learned merged into what the file holds by then."""

    def __init__(self, path: str):
        self.path = path
        self.dirty = False
        self.learned: dict[str, dict] = {}  # the entries this probe made or restamped
        entries = _read(path)
        if not isinstance(entries, dict):  # damaged or wrong-shaped: probe again, overwrite it
            discard(path, "unreadable" if entries is None else "wrong-shaped")
            entries, self.dirty = {}, True
        self.entries: dict = entries

    def probe(self, *paths: str, flags: tuple[str, ...] = ()) -> list[Compiler]:
        """Each compiler: with its identity from the cache while its file is unchanged (its stat,
        or else its content), else to be asked of it when first read (one `_Round` for all the
        drivers the cache does not know)."""
        known: dict[str, Compiler] = {}
        asking: dict[str, tuple[str, str | None]] = {}
        for path in paths:
            if path in known or path in asking:
                continue
            st = os.stat(path)
            stamp = f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"
            hit = _valid(self.entries.get(_entry(path, flags)))
            if hit is not None and hit["stamp"] == stamp:
                known[path] = _compiler(path, hit)
                continue
            digest = None  # with nothing cached, hashed while the questions are answered
            if hit is not None:
                digest = digest_file(os.path.realpath(path)).hash
                if hit["digest"] == digest:  # the same bytes under another stat
                    known[path] = _compiler(path, hit)
                    self._learn(_entry(path, flags), {**hit, "stamp": stamp})
                    continue
            asking[path] = (stamp, digest)
        if asking:
            asked = _Round(self, asking, flags)
            known.update((path, Compiler(path, asked=asked)) for path in asking)
        return [known[p] for p in paths]

    def ask(self, asking: dict[str, tuple[str, str | None]], flags: tuple[str, ...]) -> dict[str, Identity]:
        """Ask the drivers `asking` (path -> (stamp, digest or None)) who they are, learn and
        save the answers. Every question to every driver is asked at once, one question each of
        what it is asked (its full version, target, program directories and sysroot): a first
        build waits for one round of compiler processes, not several in a row, and starts no
        process whose answer it does not use."""
        answers: dict[str, Identity] = {}
        started: dict[str, list[subprocess.Popen]] = {}
        try:
            for path in asking:
                started[path] = [_start([path, *flags, flag]) for flag in (_version_flag(path), *_QUESTIONS)]
            for path, (stamp, digest) in asking.items():
                procs = started[path]
                if digest is None:
                    digest = digest_file(os.path.realpath(path)).hash
                asked, machine, dirs, sysroot = procs
                if _version_flag(path) != _FULL_VERSION:
                    full_version = _answer(asked)
                else:  # a gcc older than -dumpfullversion answers nothing: its -dumpversion is whole
                    full_version = _answer(asked, check=False)
                    if not full_version:
                        procs.append(_start([path, *flags, "-dumpversion"]))
                        full_version = _answer(procs[-1])
                target = _answer(machine)
                programs = _program_dirs(_answer(dirs, check=False))
                answers[path] = Identity(full_version, target, digest, programs, _answer(sysroot, check=False))
                self._learn(_entry(path, flags), {"stamp": stamp, "version": full_version, "target": target,
                                                  "digest": digest, "programs": list(programs),
                                                  "sysroot": answers[path].sysroot})
        finally:
            for procs in started.values():
                for proc in procs:
                    if proc.poll() is None:  # an error before its answer was read
                        proc.kill()
                        proc.wait()
        self.save()
        return answers

    def _learn(self, key: str, entry: dict) -> None:
        self.entries[key] = self.learned[key] = entry
        self.dirty = True

    def save(self) -> None:
        """Write what this probe learned over the file's entries as they are now: another build's
        probe since this one read the file keeps what it learned."""
        if not self.dirty:
            return
        now = _read(self.path)
        merged = now if isinstance(now, dict) else {}
        merged.update(self.learned)
        write_atomic(self.path, json.dumps(merged), mode=PUBLIC)


def _read(path: str) -> object:
    """The probe cache file's JSON value: {} when there is none, None when it is not JSON."""
    try:
        with open(path) as f:
            return json.load(f)
    except OSError:
        return {}
    except ValueError:
        return None


def _valid(hit: object) -> dict | None:
    """A cache entry of the right shape, or None."""
    if isinstance(hit, dict) and all(isinstance(hit.get(k), str) for k in ("stamp", "version", "target", "digest",
                                                                            "sysroot")) \
            and isinstance(hit.get("programs"), list) and all(isinstance(d, str) for d in hit["programs"]):
        return hit
    return None


def _compiler(path: str, entry: dict) -> Compiler:
    return Compiler(path, entry["version"], entry["target"], entry["digest"], tuple(entry["programs"]), entry["sysroot"])


class _Round:
    """The questions to the drivers a probe found no answer for, asked once, when the first of
    their identities is read (on whichever thread reads it: the others wait for the answers). A
    driver that fails to answer fails every read the same way."""

    def __init__(self, cache: _ProbeCache, asking: dict[str, tuple[str, str | None]], flags: tuple[str, ...]):
        self._cache = cache
        self._asking = asking
        self._flags = flags
        self._lock = threading.Lock()
        self._answers: dict[str, Identity] | None = None
        self._error: McppError | None = None

    def identity(self, path: str) -> Identity:
        with self._lock:
            if self._answers is None and self._error is None:
                try:
                    self._answers = self._cache.ask(self._asking, self._flags)
                except McppError as e:
                    self._error = e
            if self._error is not None:
                raise self._error
            assert self._answers is not None
            return self._answers[path]


# What a probe asks each driver besides its version, all at once.
_QUESTIONS = ("-dumpmachine", "-print-search-dirs", "-print-sysroot")
_FULL_VERSION = "-dumpfullversion"


def _version_flag(path: str) -> str:
    """How a driver is asked its full version: gcc's `-dumpversion` may answer the major alone
    (`12`), its `-dumpfullversion` the whole (`12.2.0`); clang knows only `-dumpversion`, which
    answers the whole. Asked the one question that answers; a gcc that does not know
    `-dumpfullversion` is asked `-dumpversion` after it (`probe`)."""
    return "-dumpversion" if "clang" in os.path.basename(path) else _FULL_VERSION


def _entry(path: str, flags: tuple[str, ...]) -> str:
    """A probe's cache entry: the driver's path, and the flags it was asked with."""
    return " ".join((path, *flags))


def _program_dirs(search_dirs: str) -> tuple[str, ...]:
    """The `programs: =a/:b/` line of `-print-search-dirs`, as a tuple of directories in order."""
    for line in search_dirs.splitlines():
        if line.startswith("programs: ="):
            return tuple(d for d in line[len("programs: ="):].split(":") if d)
    return ()


def _start(argv: list[str]) -> subprocess.Popen:
    """Ask a compiler about itself in the environment its actions run in (ACTION_ENV): the
    answer is cached by the binary's stat alone, and the user's `COMPILER_PATH` or
    `GCC_EXEC_PREFIX` would otherwise put program directories no action searches into it (and
    into the link key, as the linker it names)."""
    try:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=dict(ACTION_ENV))
    except OSError as e:
        raise McppError(f"cannot run `{argv[0]}`: {e.strerror}")


def _answer(proc: subprocess.Popen, check: bool = True) -> str:
    """What a compiler started by `_start` printed; "" for a failure `check` allows."""
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        raise McppError(f"`{' '.join(proc.args)}` did not answer in 30 s")
    if proc.returncode != 0:
        if not check:
            return ""
        raise McppError(f"`{' '.join(proc.args)}` failed: {err.strip()}")
    return out.strip()
