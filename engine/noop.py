"""The no-op fast path: answer "nothing to do" without importing the engine.

A full no-op build parses manifests, plans every action and recomputes every key from the stat
cache: correct, but it spends most of its time importing and planning (about 0.2 s of imports
alone). After a successful `mcpp build` that printed no warnings, this module records the stat
of every file that build depended on (manifests, sources, discovered headers, outputs, compiler
binaries) and the mtime of every directory a glob or a lookup walked (a new file changes its
directory's mtime). The next identical invocation (same argv, working directory, PATH and
`$MCPP_HOME`) first checks that record with plain `os.stat` calls; if everything is unchanged
the previous build's result still holds and it prints the `Finished` line. Anything else, or
any doubt, falls through to the full build, which is always correct on its own.

Racy timestamps: a file rewritten within the file system's timestamp tick right after the
record was taken keeps its stat. As in git, an entry stamped no earlier than the record file's
own mtime is treated as changed.

This module must stay importable with the standard library only (cas/atomic.py is plain `os`):
it runs before anything else.
"""
from __future__ import annotations

import marshal
import os
import sys
import time
import zlib
from array import array

from mcpp.cas.atomic import PUBLIC, write_atomic

_FORMAT = "mcpp-noop-3"
# Stamps are stored as flat int64 arrays and paths as one NUL-joined string: loading a few
# thousand of them that way takes well under a millisecond, against ~10 ms as tuples.
_MISSING = -1


def _home() -> str:
    return os.environ.get("MCPP_HOME") or os.path.join(os.path.expanduser("~"), ".mcpp")


def _ident(argv: list[str]) -> str:
    return "\0".join([os.getcwd(), os.environ.get("PATH", ""), _home(), *argv])


def _record_path(ident: str) -> str:
    # crc32 only spreads records over file names; the record holds the full ident and is
    # used only when it matches exactly. (hashlib costs a few ms of import on this path.)
    return os.path.join(_home(), "noop", f"{zlib.crc32(ident.encode()):08x}")


def try_fast_noop(argv: list[str]) -> bool:
    """True when the recorded build for `argv` still holds (and its line was printed)."""
    if os.environ.get("MCPP_NO_FAST_PATH"):
        return False
    start = time.monotonic()
    ident = _ident(argv)
    try:
        with open(_record_path(ident), "rb") as f:
            written = os.fstat(f.fileno()).st_mtime_ns
            fmt, recorded_ident, line, paths, stamps, dir_paths, dir_stamps, last_build = marshal.load(f)
    except (OSError, EOFError, ValueError, TypeError):
        return False
    if fmt != _FORMAT or recorded_ident != ident:
        return False
    want = array("q")
    want.frombytes(stamps)
    stat = os.stat
    i = 0
    for p in paths.split("\0") if paths else ():
        try:
            st = stat(p)
        except OSError:
            if want[i] != _MISSING:
                return False
            i += 4
            continue
        if (st.st_ino != want[i] or st.st_size != want[i + 1] or st.st_mtime_ns != want[i + 2]
                or st.st_ctime_ns != want[i + 3] or max(st.st_mtime_ns, st.st_ctime_ns) >= written):
            return False
        i += 4
    want_dirs = array("q")
    want_dirs.frombytes(dir_stamps)
    for j, d in enumerate(dir_paths.split("\0") if dir_paths else ()):
        try:
            mtime = stat(d).st_mtime_ns
        except OSError:
            mtime = _MISSING
        if mtime != want_dirs[j] or mtime >= written:
            return False
    if line:
        verb, message = line
        if sys.stdout.isatty() and "NO_COLOR" not in os.environ and "--color" not in " ".join(argv):
            verb = f"\x1b[1;32m{verb}\x1b[0m"
        sys.stdout.write(f"{verb} {message.replace('{elapsed}', f'{time.monotonic() - start:.2f}s')}\n")
        sys.stdout.flush()
    _write_last_build(last_build)
    return True


def _write_last_build(text: str) -> None:
    """`mcpp cache stats` reports the last build; rewrite the file only when it changes."""
    path = os.path.join(_home(), "last-build.json")
    try:
        with open(path) as f:
            if f.read() == text:
                return
    except OSError:
        pass
    try:
        write_atomic(path, text, mode=PUBLIC)
    except OSError:
        pass


def record(argv: list[str], line: tuple[str, str] | None, files: list[str], dirs: list[str],
           actions: int) -> None:
    """Remember what the successful build of `argv` depended on (see the module docstring)."""
    import json

    paths = list(dict.fromkeys(files))
    stamps = array("q")
    for p in paths:
        try:
            st = os.stat(p)
            stamps.extend((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
        except OSError:
            stamps.extend((_MISSING, _MISSING, _MISSING, _MISSING))
    dir_paths = list(dict.fromkeys(dirs))
    dir_stamps = array("q")
    for d in dir_paths:
        try:
            dir_stamps.append(os.stat(d).st_mtime_ns)
        except OSError:
            dir_stamps.append(_MISSING)
    last_build = json.dumps({"fresh": actions, "cache_hits": 0, "remote_hits": 0, "executed": 0, "failed": 0})
    ident = _ident(argv)
    path = _record_path(ident)
    try:
        write_atomic(path, marshal.dumps((_FORMAT, ident, line, "\0".join(paths), stamps.tobytes(),
                                          "\0".join(dir_paths), dir_stamps.tobytes(), last_build)), mode=PUBLIC)
    except OSError:
        pass


def forget(argv: list[str]) -> None:
    try:
        os.unlink(_record_path(_ident(argv)))
    except OSError:
        pass


def engine_files() -> list[str]:
    """The engine's own sources: an upgraded or edited engine must not trust old records."""
    here = os.path.dirname(os.path.abspath(__file__))
    return [os.path.join(dp, f) for dp, _, fs in os.walk(here) for f in fs if f.endswith(".py")]


def walked_dirs(root: str) -> list[str]:
    """Every directory under `root` a source glob may read (not `target/`, not dot dirs)."""
    out = [root]
    for dirpath, dirnames, _ in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and not (dirpath == root and d == "target")]
        out.extend(os.path.join(dirpath, d) for d in dirnames)
    return out


def ancestors(path: str) -> list[str]:
    out = []
    d = os.path.abspath(path)
    while True:
        out.append(d)
        parent = os.path.dirname(d)
        if parent == d:
            return out
        d = parent
