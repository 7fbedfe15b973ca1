"""What a compiler is asked about itself (engine/toolchain/compilers.py's probe), as processes
started now and answered later; and questions asked ahead, before the engine is imported.

`AskedAhead` holds the questions the `mcpp` process started for a first build in an empty home
before it imported the engine (engine/build/cold_start.py), while the import runs on the other
core: the probe takes a driver's processes when it would ask the same questions of the same
file (the same path, flags and stat), and asks again otherwise. Imports nothing of the engine's
but the action environment: it runs before `dataclasses` is imported (engine/core/dataclass_code.py).
"""
from __future__ import annotations

import os
import subprocess

from ..core.action_env import ACTION_ENV

# What a probe asks each driver besides its version, all at once.
QUESTIONS = ("-dumpmachine", "-print-search-dirs", "-print-sysroot")
FULL_VERSION = "-dumpfullversion"


def version_flag(path: str) -> str:
    """How a driver is asked its full version: gcc's `-dumpversion` may answer the major alone
    (`12`), its `-dumpfullversion` the whole (`12.2.0`); clang knows only `-dumpversion`, which
    answers the whole. Asked the one question that answers; a gcc that does not know
    `-dumpfullversion` is asked `-dumpversion` after it (compilers.py's `probe`)."""
    return "-dumpversion" if "clang" in os.path.basename(path) else FULL_VERSION


def stamp_of(path: str) -> str:
    """The driver file's stat as the probe cache keeps it: device, inode, size, mtime."""
    st = os.stat(path)
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


def start(argv: list[str]) -> subprocess.Popen:
    """Ask a compiler about itself in the environment its actions run in (ACTION_ENV): the
    answer is cached by the binary's stat alone, and the user's `COMPILER_PATH` or
    `GCC_EXEC_PREFIX` would otherwise put program directories no action searches into it (and
    into the link key, as the linker it names)."""
    try:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=dict(ACTION_ENV))
    except OSError as e:
        from ..core.errors import McppError

        raise McppError(f"cannot run `{argv[0]}`: {e.strerror}")


def ask(path: str, flags: tuple[str, ...] = ()) -> list[subprocess.Popen]:
    """Every question of a probe to the driver `path`, at once: its version, then QUESTIONS."""
    return [start([path, *flags, flag]) for flag in (version_flag(path), *QUESTIONS)]


def stop(procs: list[subprocess.Popen]) -> None:
    """End the questions whose answers nobody will read."""
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


class AskedAhead:
    """Questions asked before the build wanted them, by (driver path, flags): taken once each
    (`take`), by a probe that finds the driver's stat as it was when they were asked."""

    def __init__(self) -> None:
        self._asked: dict[tuple[str, tuple[str, ...]], tuple[str, list[subprocess.Popen]]] = {}

    def ask(self, path: str, flags: tuple[str, ...] = ()) -> None:
        """Start the probe's questions to `path` now; a driver that cannot be run is not asked
        (the probe meets it again and says why)."""
        procs: list[subprocess.Popen] = []
        try:
            stamp = stamp_of(path)
            for flag in (version_flag(path), *QUESTIONS):
                procs.append(start([path, *flags, flag]))
        except Exception:  # noqa: BLE001 - only a head start: the probe asks again and reports
            stop(procs)
            return
        self._asked[(path, flags)] = (stamp, procs)

    def take(self, path: str, flags: tuple[str, ...], stamp: str) -> list[subprocess.Popen] | None:
        """The processes asked of `path` with `flags` while it had `stamp`, or None (never asked,
        taken already, or the file changed since: those are ended)."""
        asked = self._asked.pop((path, flags), None)
        if asked is None:
            return None
        if asked[0] != stamp:
            stop(asked[1])
            return None
        return asked[1]

    def close(self) -> None:
        """End what no probe took."""
        asked, self._asked = self._asked, {}
        for _, procs in asked.values():
            stop(procs)
