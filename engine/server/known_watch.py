"""The files a build's knowledge names, kept proven by inotify between builds.

A server build hands the next build of the same request the digest of every file its keys were
computed from (engine/state/unchanged.py); the next build proves which files still have them, one
`stat` each: at a thousand units, three thousand stats, most of a no-op's time. The server does
that work between builds instead, the way it keeps a no-op record true (noop_watch.py): after
the build, it watches the directory of every file by name and each file by its inode (a write
through a name made elsewhere is an event there), then checks every file against the stat
cache; while no event names a file, the file still has the digest it was checked to have. The
next build stats only what an event named, the files the server could not watch by inode and
whatever the check could not prove; where anything may have changed (a queue overflow, an event
on a watched directory itself) it checks every file, as without a server.
"""
from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

from mcpp.cas.statcache import StatCache

from ..state.unchanged import Knowledge
from .noop_watch import NoopWatch


@dataclass
class Proof:
    armed: object  # the watch (noop_watch._Armed)
    proven: dict[str, str]  # path -> digest: the files the check after arming found unchanged
    rel_of: dict[str, str]  # absolute path -> execroot-relative path


def arm(watch: NoopWatch, key: str, knowledge: Knowledge, stats: StatCache) -> Proof | None:
    """Watch the knowledge's files, then check them (in that order: a change during the check
    is an event)."""
    files = knowledge.files()
    armed = watch.arm_files(key, [f[1] for f in files])
    if armed is None:
        return None
    digests = knowledge.digests
    return Proof(armed, {rel: digests[rel] for rel in stats.holding(files)}, {f[1]: f[0] for f in files})


def refreshing(watch: NoopWatch, proof: Proof, knowledge: Knowledge, stats: StatCache
               ) -> Generator[None, None, Proof | None]:
    """The proof of `knowledge` after another build of the same request: only the files an
    event may have touched since it was armed are watched and checked again. A no-op build
    leaves the knowledge it was given; an edit's build one a few digests apart (the source,
    its object: written, so named by events), whose other files stay proven, their inode
    watches standing. Arming and checking all its files again after each build would hold up
    the next request (~20 ms at 1,000 units). In steps (a generator that returns the proof):
    the named files are watched anew a slice at a time (`NoopWatch.rearming`), so a request
    that comes meanwhile waits for one slice. None: arm it afresh."""
    changed = watch.changed(proof.armed)
    if changed is None:
        return None
    armed = yield from watch.rearming(proof.armed, changed)  # events from where `changed` stopped: checked next
    if armed is None:
        return None
    changed |= {armed.paths[k] for k in armed.linked}  # no inode watch: checked, as every time after
    proven = {rel: d for rel, d in proof.proven.items() if knowledge.digests.get(rel) == d}
    rel_of = proof.rel_of
    suspects = {rel_of[p] for p in changed if p in rel_of}
    for rel in suspects:
        proven.pop(rel, None)
    recheck = [f for f in knowledge.files() if f[0] in suspects]
    digests = knowledge.digests
    proven.update((rel, digests[rel]) for rel in stats.holding(recheck))
    return Proof(armed, proven, rel_of)


def given(watch: NoopWatch, proof: Proof) -> tuple[dict[str, str], set[str]] | None:
    """(files proven at arming, those of them an event may have touched since), for the next
    build; None when anything may have changed."""
    changed = watch.changed(proof.armed)
    if changed is None:
        return None
    rel_of = proof.rel_of
    return proof.proven, {rel_of[p] for p in changed if p in rel_of}
