"""A build's incremental state (stat cache, action records, scan cache), loaded ahead of time.

Every build opens three marshal files under `target/<profile>/.mcpp/` (engine/state/incremental.py);
for a few hundred actions that is tens of milliseconds of a no-op. A server loads them after
each build, while it waits for the next request, and a build child takes the loaded objects
when each file still has the stat it had when the server read it: the objects are then exactly
what loading the files would give (the stat cache's racy-timestamp guard reads the cache file's
own mtime, not the clock). The child works on its own copy (the fork's), so nothing it changes
reaches the server or the next build except through the files it saves.

After a build that rewrote them, reading the files whole again costs the server ~0.1 s at
10,000 units (marshal and the shape checks), while the next build may already have asked: a
child that took the server's objects hands back what it changed instead (`changes`: the entries
touched since it took them, each object's `touched`), and the server applies that to its own
copy (`take_changes`) when its copy was the child's starting point and the files are the ones
the child saved, as their stamps say; otherwise it reads the files (warm.py `on_reply`).

In process (no server) the build simply opens the files (engine/build/memory.py).
"""
from __future__ import annotations

import os
import warnings

from mcpp.cas import journal
from mcpp.cas.statcache import StatCache

from ..build.memory import open_state
from ..state.incremental import BuildState, ScanCache

Paths = tuple[str, str, str, str]  # stat cache, action state, execroot, scan cache


def load(paths: Paths) -> tuple[StatCache, BuildState, ScanCache]:
    return open_state(*paths)


def held(given: dict[Paths, tuple[tuple, tuple]], paths: Paths) -> tuple | None:
    """The objects the server loaded for `paths`, when each file still has the stat it had then."""
    kept = given.get(paths)
    if kept is not None and kept[0] == stamps(paths):
        return kept[1]
    return None


def reopen(given: dict[Paths, tuple[tuple, tuple]], paths: Paths) -> tuple[StatCache, BuildState, ScanCache]:
    """The state files `paths` as they are now, where the objects the server loaded no longer
    describe them (`held` gave none): the target directory was removed (`rm -rf target`), or a
    build outside the server rewrote them. The action records and scans are the files' alone;
    the stat cache also takes what the server's knew of files it does not (`StatCache.adopt`),
    each still proven by its stat: a rebuild after `rm -rf target` then stats its sources
    instead of reading and hashing every one of them again (10,000 sources: about a second)."""
    objects = load(paths)
    kept = given.get(paths)
    if kept is not None:
        objects[0].adopt(kept[1][0])
    return objects


def stamps(paths: Paths) -> tuple:
    """Each state file's (inode, size, mtime, ctime), None where it is missing: the stamps a
    save appends to (cas/journal.py), in the order of the objects (stat cache, records, scans)."""
    out: list[journal.Stamp | None] = []
    for p in (paths[0], paths[1], paths[3]):
        try:
            out.append(journal.stamp(os.stat(p)))
        except OSError:
            out.append(None)
    return tuple(out)


def saved_stamps(given: tuple, objects: tuple) -> tuple:
    """The `stamps` of the files as `objects` last saved them, those they did not save as `given`."""
    return tuple(g if o.saved is None else journal.stamp(o.saved) for g, o in zip(given, objects, strict=True))


def preload(paths: Paths) -> tuple[tuple, tuple] | None:
    """(stamps, objects) for the server to give, or None when the files were changing or would
    warn (a damaged file is the build's to report, to the user, not the server's)."""
    before = stamps(paths)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            objects = load(paths)
        except Exception:  # noqa: BLE001 - the build opens the files itself and says what is wrong
            return None
    if caught or stamps(paths) != before:
        return None
    return before, objects


def taking(objects: tuple) -> tuple:
    """A child's start from the server's `objects`: what each touches is counted from here."""
    stats, state, scans = objects
    stats.touched.clear()
    state.touched.clear()
    for keys in scans.touched:
        keys.clear()
    for o in objects:
        o.saved = None
    return objects


# Changes handed back at most: this many entries, or a quarter of those held if more. A build
# that touched more (every action run again) would write, and the server apply, about what the
# files hold, before its reply: the server reads the files then, as after a build outside it.
FEW_CHANGES = 1024


def changes(objects: tuple) -> tuple | None:
    """What a copy of the objects `taking` started from needs to become what loading the files
    now gives (`take_changes`); None while one of them holds what is not saved, or when they
    changed too much for that to be worth it (`FEW_CHANGES`)."""
    stats, state, scans = objects
    touched = len(stats.touched) + len(state.touched) + sum(len(keys) for keys in scans.touched)
    held = len(stats) + len(state.actions) + len(scans.scans) + len(scans.include_scans) + len(scans.preprocessed)
    if touched > max(FEW_CHANGES, held // 4):
        return None
    found = tuple(o.changes() for o in objects)
    return None if None in found else found


def take_changes(objects: tuple, found: tuple, saved: tuple) -> None:
    """Apply a child's `changes` to the objects it started from; `saved`: the files' `stamps`
    as that child left them, which the objects then hold (a save appends to them: cas/journal.py)."""
    for o, changed, stamp in zip(objects, found, saved, strict=True):
        o.take_changes(changed)
        o.stamp = stamp
