"""The server's answer to a repeated `mcpp build`: the no-op record, kept true by inotify.

A no-op record (engine/state/noop.py) lists the stat of every file a successful build depended on:
sources, headers (the system's too), outputs, compilers, manifests, the engine's own sources
and the directories globs walked. Checking it costs a `stat` per file, a thousand or more for a
few hundred units. Once a check has passed, the server watches every directory those files
live in (the directory of each path, and of each path's real location when links lead
elsewhere); while no event arrives from any of them, the record still holds and the next
identical request is answered with no `stat` at all.

The watches are added before the check that arms them, so a change made during the check is
an event, not a miss. Any event in a watched directory (a write, an attribute change, a create,
delete or rename of any entry) disarms every record watching it; a queue overflow disarms all.

A directory's watch does not see a file written through a name in another directory (a hard
link made from elsewhere), so each regular file is also watched by its inode: a write through
any name, and the making of another name (its link count changes), is an event on the file's
own watch. Those watches are kept per path and made again only for a path an event named (a
file replaced by a rename is a new inode), so nothing is counted or stat'ed after a build that
changed nothing. A file the server has no inode watch for (past `_MAX_FILE_WATCHES`, or a
quarter of the user's inotify limit) and a non-regular file with several links are checked by
`stat` on every request instead, and everything when inotify is unavailable or out of
directory watches (then only the plain check runs).
"""
from __future__ import annotations

import errno
import os
import stat
from collections.abc import Generator
from dataclasses import dataclass

from ..state import noop
from .watcher import (EVERY_CHANGE, IN_ATTRIB, IN_CLOSE_WRITE, IN_DELETE_SELF, IN_IGNORED, IN_MODIFY, IN_MOVE_SELF,
                      IN_Q_OVERFLOW, Descriptor, inotify_open, read_events)

_MAX_WATCHES = 4096  # directories one server may watch for no-op records; beyond that, stat
_MAX_FILE_WATCHES = 131_072  # files watched by inode (each pins its inode in the kernel); beyond: stat
# What a file's own watch asks for: a write through any of its names, a name made or removed (its
# link count), a chmod or touch, its end. IN_MASK_ADD: should the inode be a directory watched for
# its entries after all (a path replaced between its stat and the watch), that watch keeps its mask.
_FILE_CHANGES = IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF
_IN_MASK_ADD = 0x20000000
_INODE = -1  # the watch field of a logged event a file's own watch raised; its name is the file's path
_GONE = (errno.ENOENT, errno.ENOTDIR)  # a path that names nothing now: its inode watch is let go
_MAX_LOG = 100_000  # events kept while some record is armed; more void every record
ANY = None  # interest in every entry of a directory (its listing is what a glob or PATH reads)
REARM_SLICE = 512  # files one step of `rearming` watches anew (~1.5 ms here)
# Files of a record found changed by its check, at most, for the record to stay armed with them
# (`_Armed.stale`); more, and the next record is checked whole.
MOST_STALE = 64


@dataclass
class _Armed:
    ident: str
    since: int  # the event serial when its watches were in place, before its check
    interest: dict[int, set[str] | None]  # watch -> the entry names that matter in it, or ANY
    record: noop.Record | None  # None: files armed for a build (`arm_files`)
    # Indexes of files no event would name for every change: stat-checked every time (a regular
    # file with no inode watch, a non-regular one with several links).
    linked: list[int]
    paths: list[str]  # the files watched by name
    members: dict[str, int]  # path -> its index in `paths`
    # Indexes of the record's files its check found changed (saved before the watch was in
    # place, so no event names them): the record does not hold while one of them differs, and
    # the next build's record is armed from this one checking them with the files it changed.
    stale: tuple[int, ...] = ()


class NoopWatch(Descriptor):
    def __init__(self):
        try:
            self._libc, self.fd = inotify_open()
        except (OSError, AttributeError):
            self._libc, self.fd = None, None
        self._wds: dict[str, int] = {}  # directory -> watch descriptor
        self._dir_of: dict[int, str] = {}  # the same, the other way
        self._files: dict[str, int] = {}  # file -> the watch of the inode it named when watched
        self._file_paths: dict[int, set[str]] = {}  # a file's watch -> the paths it was made for
        self._file_budget = _file_watch_budget()
        # (serial, watch, entry name or "" for the directory), or (serial, _INODE, path)
        self._log: list[tuple[int, int, str]] = []
        self._serial = 0
        self._void = 0  # serial up to which every armed record is void (queue overflow, log cut)
        self._armed: dict[str, _Armed] = {}  # record file -> its watch
        self.answered_from_watch = 0

    def drain(self) -> None:
        if self.fd is None:
            return
        for wd, mask, name in read_events(self.fd):
            self._serial += 1
            if mask & IN_Q_OVERFLOW:
                self._void = self._serial
                continue
            named = self._file_paths.get(wd)
            if named is not None:  # a file's own watch: every path it was made for is named
                self._log.extend((self._serial, _INODE, p) for p in named)
                if mask & IN_IGNORED:  # the inode is gone (or unwatched): its paths are watched anew when armed
                    self._drop_file_watch(wd)
                if wd not in self._dir_of:  # also a directory's (a file standing where one is awaited)
                    continue
            if mask & IN_IGNORED:  # the directory is gone: forget the watch (every name of it), void its records
                if self._dir_of.pop(wd, None) is not None:
                    self._wds = {d: w for d, w in self._wds.items() if w != wd}
                name = ""
            self._log.append((self._serial, wd, name))
        self._trim()

    def _trim(self) -> None:
        """Keep the events an armed record may still have to look at, within bounds."""
        oldest = min((a.since for a in self._armed.values()), default=self._serial)
        if self._log and self._log[0][0] <= oldest:
            self._log = [e for e in self._log if e[0] > oldest]
        if len(self._log) > _MAX_LOG:
            self._void = self._serial
            self._log.clear()

    def answer(self, argv: list[str], cwd: str, env, tty: bool, start: float) -> str | None:
        """As `noop.answer`, from the watch when it is armed and quiet."""
        if env.get("MCPP_NO_FAST_PATH") or not noop.answers(argv):
            return None
        ident = noop._ident(argv, cwd, env)
        self.drain()
        armed = self._armed.get(noop._record_path(ident, env))
        if armed is not None and armed.ident == ident and armed.record is not None:
            if not armed.stale and self._quiet(armed) and noop.holds(armed.record, armed.linked):
                self.answered_from_watch += 1
                return noop.finish(armed.record, argv, env, tty, start)
            if self._named_and_changed(armed) or not noop.holds(armed.record, list(armed.stale)):
                # An edit, or a file the record's own check found changed that still differs
                # (`_Armed.stale`): the whole check (the record read again, every file stat'ed and
                # watched anew, ~10 ms at 300 units) would say so too, in front of the build
                # the edit's compile waits for. The watch stays armed: the build's new record
                # is armed from it (`prepare`).
                return None
        record = self._checked(ident, argv, cwd, env)
        return None if record is None else noop.finish(record, argv, env, tty, start)

    def prepare(self, argv: list[str], cwd: str, env) -> None:
        """After a build of `argv` ended, while nothing waits: arm the record it left (checked
        once here), so that the next `mcpp build` is answered from the watch instead of paying
        that check. A JSON build's record serves the plain build too (engine/state/noop.py)."""
        if env.get("MCPP_NO_FAST_PATH"):
            return
        self.drain()
        ident = noop._ident(argv, cwd, env)
        record = noop.load_record(argv, cwd, env)
        if record is not None and self._carried(ident, record) is False:
            self._checked_record(ident, record)

    def _carried(self, ident: str, record: noop.Record) -> bool | None:
        """Arm `record` (a build's new record of `ident`) from the watch of an earlier one,
        checking only the files whose stamps it changed, where that one is still armed (it
        held when it was), lists the same files and directories (the directories' stamps
        unchanged too) and no event since touched any other of them. Its files, unchanged and
        unseen, hold as they did when the watch was armed: a thousand `stat`s fewer after each
        build (~20 ms at 1,000 units, in front of a request that comes right after). A changed
        file that no longer has the stamp the build read (the next edit, saved already) leaves
        the record armed with it `stale`: it does not hold, and the next build's record is armed
        from it the same way. None: more than `MOST_STALE` such files; the earlier watch is kept
        for the next build's record. False: the whole check decides."""
        armed = self._armed.get(record.path)
        if armed is None or armed.ident != ident or armed.record is None:
            return False
        before = armed.record
        if record.paths != before.paths or record.dir_paths != before.dir_paths \
                or record.dir_stamps != before.dir_stamps:
            return False
        changed = noop.restamped(record.stamps, before.stamps)
        if armed.stale:  # unchanged between the records, changed on disk before the watch: checked too
            changed = sorted(set(changed).union(armed.stale))
        rewritten = [record.paths[k] for k in changed]
        expected = {(self._wds.get(os.path.dirname(p)), os.path.basename(p))
                    for p in [record.path] + rewritten}  # the record is rewritten by every build
        expected.update((_INODE, p) for p in rewritten)
        if not self._quiet(armed, expected):
            return False
        since = self._serial  # what happens from here on is an event
        # a rewritten file is a new inode: watched before its check
        linked = set(armed.linked).difference(changed) | set(self._watch_files(record.paths, changed))
        stale = noop.unheld(record, changed, most=MOST_STALE)
        if stale is None:
            return None
        self._armed[record.path] = _Armed(ident, since, armed.interest, record, sorted(linked), armed.paths,
                                          armed.members, tuple(stale))
        return True

    def _checked(self, ident: str, argv: list[str], cwd: str, env) -> noop.Record | None:
        """The record of `argv` from disk, armed before its check (which disarms it when it
        does not hold); None when there is none or it does not hold."""
        record = noop.load_record(argv, cwd, env)
        return None if record is None else self._checked_record(ident, record)

    def _checked_record(self, ident: str, record: noop.Record) -> noop.Record | None:
        """`record`, armed before its check; None when it does not hold. A record that does not
        hold for a few changed files only (an edit saved before a build's record is checked, as
        a script's next command does) stays armed with them (`_Armed.stale`), so the next
        build's record is armed from it, not checked whole in front of that build."""
        armed = self._arm(ident, record)
        stale = noop.unheld(record, most=MOST_STALE)
        if stale == [] and noop.dirs_hold(record):
            return record
        if armed is not None:
            if stale and noop.dirs_hold(record):
                armed.stale = tuple(stale)
            else:
                del self._armed[record.path]
        return None

    def _quiet(self, armed: _Armed, expected: set[tuple[int | None, str]] | frozenset = frozenset()) -> bool:
        """No event since the record was armed touched an entry it depends on (but the entries
        `expected`, as (watch, name), or (_INODE, path) for a file's own watch)."""
        if self._void > armed.since:
            return False
        interest, members = armed.interest, armed.members
        for serial, wd, name in reversed(self._log):
            if serial <= armed.since:
                return True
            if wd == _INODE:
                if name in members and (wd, name) not in expected:
                    return False
            elif wd in interest and (wd, name) not in expected:
                names = interest[wd]
                if names is ANY or not name or name in names:
                    return False
        return True

    def _arm(self, ident: str, record: noop.Record) -> _Armed | None:
        """Watch the record's directories, before the check that decides whether it holds."""
        armed = self._arm_paths(ident, record.paths, record.dir_paths, record.path, record)
        if armed is not None:
            self._armed[record.path] = armed
        return armed

    def arm_files(self, key: str, paths: list[str]) -> _Armed | None:
        """Watch the directories of `paths` (each file by name, as a record's), for a check the
        caller makes next; `changed(armed)` then says which of them an event may have touched
        since. Re-arming a key replaces its watch. None where inotify cannot watch them all."""
        self._armed.pop(key, None)
        self.drain()
        armed = self._arm_paths(key, paths)
        if armed is not None:
            self._armed[key] = armed
        return armed

    def rearming(self, armed: _Armed, changed: set[str]) -> Generator[None, None, _Armed | None]:
        """`armed`'s watches again, counting events from the serial `changed(armed)` has just
        read up to (taken before the first step, with no drain in between: an event read here
        would be in neither), for the files the caller checks next: `changed`, what that call
        returned. Those files are watched by inode anew (a file replaced is a new inode; the
        others' watches stand). A generator that returns the new watch (None when `armed` is no
        longer armed, at the start or once done): it watches `REARM_SLICE` files per step, and
        the server serves a request that comes between two steps (daemon.py `_in_steps`), so a
        build that changed every file does not hold up the next request. Until it returns,
        `armed` stays the armed one: a build forked meanwhile is given the older proof, whose
        events since then include this one's."""
        if self._armed.get(armed.ident) is not armed:
            return None
        since = self._serial
        members = armed.members
        named = sorted(members[p] for p in changed if p in members)
        linked = set(armed.linked).difference(named)
        for start in range(0, len(named), REARM_SLICE):
            if start:
                yield
            linked.update(self._watch_files(armed.paths, named[start:start + REARM_SLICE]))
        if self._armed.get(armed.ident) is not armed:  # re-armed or disarmed meanwhile
            return None
        again = _Armed(armed.ident, since, armed.interest, armed.record, sorted(linked), armed.paths, members)
        self._armed[armed.ident] = again
        return again

    def _watch_files(self, paths: list[str], indexes) -> list[int]:
        """Watch the inodes `paths[k]` name now, for each k of `indexes`; the indexes no event
        would name for every change, to be stat-checked every time: a regular file this
        server has no inode watch for, something else with several links."""
        out = []
        for k in indexes:
            p = paths[k]
            try:
                st = os.stat(p)
            except OSError as e:
                if e.errno in _GONE:
                    self._unwatch_file(p)  # not there: its directory sees it appear
                else:
                    out.append(k)  # unreadable now (rights, a loop): not watched anew, so stat-checked
                continue
            if self._stat_checked(p, st):
                out.append(k)
        return out

    def _stat_checked(self, path: str, st: os.stat_result) -> bool:
        """Watch the inode of `path` (which `st` describes) if it is a regular file; whether it
        must be stat-checked every time instead: a regular file this server cannot watch by its
        inode, something else with several links."""
        if stat.S_ISREG(st.st_mode):
            return not self._watch_file(path)  # by its inode too: a write through any of its names
        self._unwatch_file(path)
        return st.st_nlink > 1

    def _watch_file(self, path: str) -> bool:
        """Watch the inode `path` names (made once per inode: a second name shares its watch);
        False where it cannot be (out of budget, refused)."""
        old = self._files.get(path)
        if old is None and len(self._file_paths) >= self._file_budget:
            return False
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(path), _FILE_CHANGES | _IN_MASK_ADD)
        if wd != old:
            self._unwatch_file(path)
            if wd < 0 or wd in self._dir_of:  # refused, or a directory after all (replaced meanwhile)
                return False
            self._files[path] = wd
            self._file_paths.setdefault(wd, set()).add(path)
        return True

    def _unwatch_file(self, path: str) -> None:
        """`path` no longer stands for the inode it was watched by; a watch left with no path
        is removed (its IN_IGNORED then names nothing)."""
        wd = self._files.pop(path, None)
        if wd is None:
            return
        named = self._file_paths.get(wd)
        if named is not None:
            named.discard(path)
            if not named:
                del self._file_paths[wd]
                self._libc.inotify_rm_watch(self.fd, wd)

    def _drop_file_watch(self, wd: int) -> None:
        """A file's watch the kernel removed (its inode is gone)."""
        for p in self._file_paths.pop(wd, ()):
            if self._files.get(p) == wd:
                del self._files[p]

    @property
    def files_watched(self) -> int:
        """Inode watches held (`mcpp server status`: `files_watched`)."""
        return len(self._file_paths)

    def disarm(self, key: str) -> None:
        self._armed.pop(key, None)

    def changed(self, armed: _Armed) -> set[str] | None:
        """The files of `armed` (an `arm_files` watch, still armed) that may have changed since
        it was armed: those named by an event (on their directory's watch or their own), and
        the `linked` ones; None when anything may have (a queue overflow, an event on the
        directory itself or on one where links are resolved)."""
        self.drain()
        if self._armed.get(armed.ident) is not armed or self._void > armed.since:
            return None
        hit: set[tuple[int, str]] = set()
        interest, members = armed.interest, armed.members
        for serial, wd, name in reversed(self._log):
            if serial <= armed.since:
                break
            if wd == _INODE:
                if name in members:
                    hit.add((wd, name))
                continue
            names = interest.get(wd, ())
            if names is ANY or (wd in interest and not name):
                return None
            if name in names:
                hit.add((wd, name))
        return {armed.paths[k] for k in armed.linked} | self._paths(hit)

    def _paths(self, entries: set[tuple[int, str]]) -> set[str]:
        """The paths of (watch, entry name) pairs events named (a file's own watch logs its path)."""
        if not entries:
            return set()
        dirs = self._dir_of
        return {name if wd == _INODE else os.path.join(dirs[wd], name) for wd, name in entries
                if wd == _INODE or wd in dirs}

    def _named_and_changed(self, armed: _Armed) -> bool:
        """Whether a file of `armed`'s record that an event named since it was armed (the
        events drained) no longer has its recorded stat: then the record does not hold, as its
        whole check would find. False says nothing: the whole check decides."""
        record = armed.record
        named: set[tuple[int, str]] = set()
        for serial, wd, name in reversed(self._log):
            if serial <= armed.since:
                break
            if name:  # an event on a directory itself names no file
                named.add((wd, name))
        if record is None or not named:
            return False
        paths = self._paths(named)
        touched = [k for k, p in enumerate(armed.paths) if p in paths]
        return bool(touched) and not noop.holds(record, touched)

    def _arm_paths(self, ident: str, paths: list[str], dir_paths: list[str] = (), own: str | None = None,
                   record: noop.Record | None = None) -> _Armed | None:
        if self.fd is None:
            return None
        wanted: dict[str, set[str] | None] = {}  # directory -> names that matter, or ANY

        def want(directory: str, name: str | None) -> None:
            if name is ANY:
                wanted[directory] = ANY
            elif wanted.get(directory, set()) is not ANY:
                wanted.setdefault(directory, set()).add(name)

        if own is not None:
            want(os.path.dirname(own), os.path.basename(own))
        plain_dirs: dict[str, bool] = {}  # directory -> reached without a link on the way
        linked = []
        for k, p in enumerate(paths):
            d = os.path.dirname(p)
            want(d, os.path.basename(p))
            if d not in plain_dirs:
                plain_dirs[d] = os.path.realpath(d) == d
                if not plain_dirs[d]:  # links on the way to the directory: each may be re-pointed
                    for r in _resolution_dirs(os.path.join(d, "_")):
                        want(r, ANY)
            try:
                st = os.lstat(p)
            except OSError as e:
                if e.errno in _GONE:
                    self._unwatch_file(p)
                continue  # not there: its directory (or the nearest one that is) sees it appear
            if stat.S_ISLNK(st.st_mode):
                for r in _resolution_dirs(p):
                    want(r, ANY)
                st = _stat_or(p, st)
            if self._stat_checked(p, st):
                linked.append(k)
        for d in dir_paths:
            want(d, ANY)
        interest: dict[int, set[str] | None] = {}
        for d, names in wanted.items():
            found = self._watch(d)
            if found is None:
                return None
            wd, exact = found
            if not exact or names is ANY or interest.get(wd, set()) is ANY:
                interest[wd] = ANY  # an ancestor standing in for a missing directory: anything there
            else:
                interest.setdefault(wd, set()).update(names)
        self.drain()
        return _Armed(ident, self._serial, interest, record, linked, paths, {p: k for k, p in enumerate(paths)})

    def _watch(self, directory: str) -> tuple[int, bool] | None:
        """(watch descriptor, whether it is `directory`'s own): the nearest existing ancestor's
        when `directory` does not exist (it sees it appear); None when the kernel refuses more
        watches."""
        exact = True
        while True:
            wd = self._wds.get(directory)
            if wd is not None:
                return wd, exact
            if len(self._wds) >= _MAX_WATCHES:
                return None
            wd = self._libc.inotify_add_watch(self.fd, os.fsencode(directory), EVERY_CHANGE)
            if wd >= 0:
                self._wds[directory] = wd
                self._dir_of[wd] = directory
                return wd, exact
            parent = os.path.dirname(directory)
            if os.path.isdir(directory) or parent == directory:  # there, yet refused: limits, rights
                return None
            directory, exact = parent, False


def _file_watch_budget() -> int:
    """Files one server watches by inode: a quarter of the user's inotify watches at most (the
    limit is per user: other servers, editors and tools share it)."""
    try:
        with open("/proc/sys/fs/inotify/max_user_watches", "rb") as f:
            limit = int(f.read())
    except (OSError, ValueError):
        limit = 8192  # the kernel's default before it scaled with memory
    return min(_MAX_FILE_WATCHES, limit // 4)


def _resolution_dirs(path: str) -> set[str]:
    """Every directory holding a symbolic link met while resolving `path`, and the directory of
    what it finally names: re-pointing any of those links changes what `path` reads."""
    out: set[str] = set()
    todo = os.path.abspath(path)
    for _ in range(40):  # the kernel's own limit on links followed
        out.add(os.path.dirname(todo))
        parts = todo.strip("/").split("/")
        prefix = "/"
        for i, part in enumerate(parts):
            prefix = os.path.join(prefix, part)
            if os.path.islink(prefix):
                out.add(os.path.dirname(prefix))
                try:
                    target = os.readlink(prefix)
                except OSError:
                    return out
                todo = os.path.normpath(os.path.join(os.path.dirname(prefix), target, *parts[i + 1:]))
                break
        else:
            return out
    return out


def _stat_or(path: str, fallback: os.stat_result) -> os.stat_result:
    try:
        return os.stat(path)
    except OSError:
        return fallback
