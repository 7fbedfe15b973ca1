"""The no-op fast path: answer "nothing to do" without importing the engine.

A full no-op build parses manifests, plans every action and recomputes every key from the stat
cache: correct, but it spends most of its time importing and planning (about 0.2 s of imports
alone). After a successful `mcpp build` that printed no warnings, this module records the stat
of every file that build depended on (manifests, sources, discovered headers, outputs, compiler
binaries, the configuration under `$MCPP_HOME`) and the mtime of every directory a glob or a
lookup walked (a new file changes its directory's mtime). The next identical invocation (same
argv, working directory, and the same values of every environment variable a build's result
depends on: engine/core/build_env.py) first checks that record with plain `os.stat` calls; if
everything is unchanged the previous build's result still holds and it prints the `Finished`
line. Anything else, or any doubt, falls through to the full build, which is always correct on
its own.

What a record holds is the stat of what the build read, never a stat of what is there after it:
a file saved while the build ran (after the build read it) must send the next build down the
full path. Each full build first marks its record pending (`begin`), which also gives the
build's start on the file system's clock. At the end, a file the build hashed through the stat
cache is recorded with the stat taken when it was hashed (or, for an output, when it was
written); any other file or directory (manifests, build programs, configuration) is stat'ed
then, which is the stat the build read only when it is older than the build's start. A file
the build did not write that is stamped no earlier than that start may have changed after the
build read it: the build records nothing, and the next one takes the full path.

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

from ..core import build_env
from ..core.mcpp_home import home_root

_FORMAT = "mcpp-noop-4"
_PENDING = "mcpp-noop-pending"  # a build of this identity is running, or ended unrecorded
# Stamps are stored as flat int64 arrays and paths as one NUL-joined string: loading a few
# thousand of them that way is one allocation each, where tuples cost one object per stamp.
_MISSING = -1
_STAMP = 4  # int64s per path in `Record.stamps`: inode, size, mtime, ctime


def _home(env=None) -> str:
    return home_root(os.environ if env is None else env)


def _ident(argv: list[str], cwd: str | None = None, env=None) -> str:
    env = os.environ if env is None else env
    return "\0".join([cwd or os.getcwd(), _home(env), *build_env.identity(env), "", *_presented(argv)[0]])


_FORMAT_OPTION = "--message-format"


def _presented(argv: list[str]) -> tuple[list[str], str]:
    """`argv` without its `--message-format` option, and the format it asks for. A build leaves
    the same files behind in either format, so one record serves both: a successful JSON build
    (an IDE's, a CI step's) lets the next plain `mcpp build` answer from stats. Only the human
    format is answered here (`answers`); a JSON build always runs the engine, which writes the
    events. Options end at `--`."""
    kept: list[str] = []
    fmt = "human"
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            kept += argv[i:]
            break
        if arg == _FORMAT_OPTION:
            fmt = argv[i + 1] if i + 1 < len(argv) else ""
            i += 2
            continue
        if arg.startswith(_FORMAT_OPTION + "="):
            fmt = arg[len(_FORMAT_OPTION) + 1:]
        else:
            kept.append(arg)
        i += 1
    return kept, fmt


def answers(argv: list[str]) -> bool:
    """Whether the fast path may answer `argv`: only a build that prints the human format."""
    return _presented(argv)[1] == "human"


def _record_path(ident: str, env=None) -> str:
    # crc32 only spreads records over file names; the record holds the full ident and is
    # used only when it matches exactly. (hashlib costs a few ms of import on this path.)
    return os.path.join(_home(env), "noop", f"{zlib.crc32(ident.encode()):08x}")


def try_fast_noop(argv: list[str]) -> bool:
    """True when the recorded build for `argv` still holds (and its line was printed)."""
    text = answer(argv, os.getcwd(), os.environ, sys.stderr.isatty(), time.monotonic())
    if text is None:
        return False
    if text:  # a status line: stderr, as the build's own (engine/report/reporter.py)
        sys.stderr.write(text)
        sys.stderr.flush()
    return True


def answer(argv: list[str], cwd: str, env, tty: bool, start: float) -> str | None:
    """What the build of `argv` run in `cwd` with `env` would print when its record still holds
    ("" for nothing), else None: build. `tty`: whether that output goes to a terminal (the
    line is coloured as the build would colour it); `start`: when the command began. The warm
    build server asks the same question for its clients (engine/server/noop_watch.py)."""
    if env.get("MCPP_NO_FAST_PATH") or not answers(argv):
        return None
    found = load_record(argv, cwd, env)
    if found is None or not holds(found):
        return None
    return finish(found, argv, env, tty, start)


class Record:
    """A no-op record as read: what a later check compares and what it prints."""

    def __init__(self, path: str, written: int, line, paths: str, stamps: bytes, dir_paths: str,
                 dir_stamps: bytes, last_build: str):
        self.path, self.written, self.line, self.last_build = path, written, line, last_build
        self.paths = paths.split("\0") if paths else []
        self.stamps = array("q")
        self.stamps.frombytes(stamps)
        self.dir_paths = dir_paths.split("\0") if dir_paths else []
        self.dir_stamps = array("q")
        self.dir_stamps.frombytes(dir_stamps)


def load_record(argv: list[str], cwd: str, env) -> Record | None:
    """The record of the last successful build of `argv` from `cwd` with `env`, if any."""
    ident = _ident(argv, cwd, env)
    path = _record_path(ident, env)
    try:
        with open(path, "rb") as f:
            written = os.fstat(f.fileno()).st_mtime_ns
            fmt, recorded_ident, *fields = marshal.loads(f.read())  # load(f) reads it piece by piece
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if fmt != _FORMAT or recorded_ident != ident:
        return None
    try:
        return Record(path, written, *fields)
    except (TypeError, ValueError):
        return None


def holds(record: Record, only: range | list[int] | None = None) -> bool:
    """Whether every file (those at the indexes `only`, when given) and every directory still
    has the stat it had when the record was written."""
    return unheld(record, only) == [] and (only is not None or dirs_hold(record))


def unheld(record: Record, only: range | list[int] | None = None, most: int = 0) -> list[int] | None:
    """The indexes of the files (among `only`, when given) that no longer have the stat they
    had when the record was written; None once more than `most` of them do not."""
    stat = os.stat
    want, written = record.stamps, record.written
    paths = record.paths
    found: list[int] = []
    for k in (range(len(paths)) if only is None else only):
        i = _STAMP * k
        try:
            st = stat(paths[k])
        except OSError:
            if want[i] == _MISSING:
                continue
        else:
            if (st.st_ino == want[i] and st.st_size == want[i + 1] and st.st_mtime_ns == want[i + 2]
                    and st.st_ctime_ns == want[i + 3] and max(st.st_mtime_ns, st.st_ctime_ns) < written):
                continue
        found.append(k)
        if len(found) > most:
            return None
    return found


def dirs_hold(record: Record) -> bool:
    """Whether every directory the record lists still has the mtime it had."""
    stat = os.stat
    written = record.written
    for j, d in enumerate(record.dir_paths):
        try:
            mtime = stat(d).st_mtime_ns
        except OSError:
            mtime = _MISSING
        if mtime != record.dir_stamps[j] or mtime >= written:
            return False
    return True


def finish(record: Record, argv: list[str], env, tty: bool, start: float) -> str:
    """The no-op's output, and its `last-build.json`."""
    text = ""
    if record.line:
        verb, message = record.line
        if tty and "NO_COLOR" not in env and "--color" not in " ".join(argv):
            verb = f"\x1b[1;32m{verb}\x1b[0m"
        text = f"{verb} {message.replace('{elapsed}', f'{time.monotonic() - start:.2f}s')}\n"
    _write_last_build(record.last_build, env)
    return text


def _write_last_build(text: str, env=None) -> None:
    """`mcpp cache stats` reports the last build; rewrite the file only when it changes."""
    path = os.path.join(_home(env), "last-build.json")
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


def begin(argv: list[str]) -> int | None:
    """Before a full build of `argv`: mark its record pending (no check passes until `record`
    writes it again) and return when that happened on the file system's clock (the marker's
    mtime: the clock and granularity that stamp the files the build reads). None when the
    marker cannot be written: then nothing is recorded."""
    ident = _ident(argv)
    path = _record_path(ident)
    try:
        write_atomic(path, marshal.dumps((_PENDING, ident)), mode=PUBLIC)
        return os.stat(path).st_mtime_ns
    except OSError:
        forget(argv)
        return None


def record(argv: list[str], line: tuple[str, str] | None, files: list[str], dirs: list[str],
           actions: int, started: int | None, read_stamp=None, written: frozenset[str] | set[str] = frozenset()
           ) -> bool:
    """Remember what the successful build of `argv` begun at `started` (`begin`) depended on
    (see the module docstring). `read_stamp(path)`: the (dev, ino, size, mtime_ns, ctime_ns)
    the build hashed or wrote the file at, or None; `written`: the files the build itself wrote
    (outputs, generated files), whose stamps are newer than its start by nature. False, and
    nothing recorded, when a file or directory may have changed after the build read it."""
    import json

    if started is None:
        return False
    paths = list(dict.fromkeys(files))
    stamps = array("q")
    for p in paths:
        st = read_stamp(p) if read_stamp is not None else None
        if st is not None:
            ino, size, mtime, ctime = st[1], st[2], st[3], st[4]
        else:
            try:
                s = os.stat(p)
            except OSError:
                stamps.extend((_MISSING, _MISSING, _MISSING, _MISSING))
                continue
            ino, size, mtime, ctime = s.st_ino, s.st_size, s.st_mtime_ns, s.st_ctime_ns
        if max(mtime, ctime) >= started and p not in written:
            return False  # changed while the build ran (or in the tick it began): not proven
        stamps.extend((ino, size, mtime, ctime))
    dir_paths = list(dict.fromkeys(dirs))
    dir_stamps = array("q")
    for d in dir_paths:
        try:
            mtime = os.stat(d).st_mtime_ns
        except OSError:
            mtime = _MISSING
        if mtime >= started:
            return False  # an entry made, removed or renamed while the build ran
        dir_stamps.append(mtime)
    last_build = json.dumps({"fresh": actions, "cache_hits": 0, "remote_hits": 0, "executed": 0, "failed": 0})
    ident = _ident(argv)
    path = _record_path(ident)
    try:
        write_atomic(path, marshal.dumps((_FORMAT, ident, line, "\0".join(paths), stamps.tobytes(),
                                          "\0".join(dir_paths), dir_stamps.tobytes(), last_build)), mode=PUBLIC)
    except OSError:
        return False
    return True


_BLOCK = 64  # paths compared at once by `restamped` before one by one


def restamped(new: array, old: array) -> list[int]:
    """The indexes of the paths whose stamps differ between two records of the same paths. A
    block of paths is compared at once (one C comparison) and only a block that differs path by
    path: an edit's record differs from the last one in a few of thousands."""
    if new == old:
        return []
    out = []
    width = _STAMP * _BLOCK
    for start in range(0, len(new), width):
        end = start + width
        if new[start:end] != old[start:end]:
            out += [k // _STAMP for k in range(start, min(end, len(new)), _STAMP)
                    if new[k:k + _STAMP] != old[k:k + _STAMP]]
    return out


def forget(argv: list[str]) -> None:
    try:
        os.unlink(_record_path(_ident(argv)))
    except OSError:
        pass


def engine_files() -> list[str]:
    """The engine's own sources: an upgraded or edited engine must not trust old records."""
    engine = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # this module is engine/state/
    out = []
    for dirpath, dirnames, names in os.walk(engine):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]  # compiled copies of what is listed
        out += [os.path.join(dirpath, f) for f in names if f.endswith(".py")]
    return out


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
