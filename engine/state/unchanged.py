"""What a warm server knows has not changed since the previous build of the same request.

An action is fresh when the key computed now equals the key of its last run (incremental.py).
Computing that key means a digest per input and a blake3 over a length-prefixed encoding of the
command, every input and every tool: tens of microseconds per action, which at thousands of
actions is most of an edit's overhead, although nearly every key comes out as it was.

A server build hands the next build of the same request (same command line, directory,
environment; the same plan) what it ended with: the key each action had when the build was done
with it (`Knowledge.validated`), and the digest of every file those keys were computed from
(`Knowledge.digests`: sources, headers, system headers, other actions' outputs) and of every
tool. An action whose recorded key is its validated key, and each of whose inputs (declared,
discovered, tools) has the digest it had then, has that key still: nothing the key encodes
changed.

Which files still have those digests is asked once per build, for all of them together
(`Unchanged.proven`): one `stat` per file, compared with the stamp the stat cache recorded the
digest under, as a full check takes; only the encoding and the hashing are saved, and the
per-file work is one tight loop instead of a walk through the key's layers per action. A file
the watcher saw rewritten since the previous build (`touched`) makes the actions reading it
compute their keys at once, before that loop runs: the edited unit's compile is not held up.
A server that kept watching the files after the previous build (server/known_watch.py) hands
over those it proved then and still saw no event for: only the others are stat'ed here.
Anything not known (a plan made anew, an in-process build, a path never seen, a stat cache
entry dropped as racy) counts as changed, and the key is computed as always.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable

from mcpp.cas.digest import Digest
from mcpp.cas.statcache import StatCache


@dataclass
class Knowledge:
    """What one server build leaves for the next build of the same request."""
    validated: dict[str, str] = field(default_factory=dict)  # action id -> key it ended the build with
    digests: dict[str, str] = field(default_factory=dict)  # input path -> digest the keys used
    tools: dict[str, str] = field(default_factory=dict)  # tool path -> digest
    execroot: str = ""  # what the input paths are relative to
    # [(path, absolute path, blake3 bytes)]: what `StatCache.holding` checks, made once per
    # knowledge, by the server while it waits for the next request (warm.py)
    _files: list[tuple[str, str, bytes]] | None = field(default=None, repr=False, compare=False)

    def files(self) -> list[tuple[str, str, bytes]]:
        if self._files is None:
            # `os.path.join(execroot, rel)` by concatenation: the same strings (an absolute path,
            # a system header's, stays as it is), a third of the time over thousands of paths,
            # taken while the next command of a script may already be starting.
            root = os.fspath(self.execroot)
            prefix = root if not root or root.endswith("/") else root + "/"
            self._files = [(rel, rel if rel.startswith("/") else prefix + rel, bytes.fromhex(d.partition("/")[0]))
                           for rel, d in self.digests.items()]
        return self._files


class Unchanged:
    def __init__(self, previous: Knowledge, touched: frozenset[str] | set[str] = frozenset(),
                 watched: tuple[dict[str, str], set[str]] | None = None):
        self.previous = previous
        # the files the watcher saw rewritten since the previous build began, as actions name
        # them (execroot-relative; system headers absolute)
        self.touched = touched
        # files the server proved after the previous build and kept watching, and those of them
        # an event may have touched since (server/known_watch.py)
        self.watched = watched
        self._proven: dict[str, str] | None = None
        self._tools: dict[str, bool] = {}

    def validated(self, action_id: str) -> str | None:
        return self.previous.validated.get(action_id)

    def proven(self, stats: StatCache) -> dict[str, str]:
        """Path -> digest of every known file that still has the digest the previous build
        keyed (checked on the first call, for all files at once)."""
        if self._proven is None:
            digests, files = self.previous.digests, self.previous.files()
            proven: dict[str, str] = {}
            if self.watched is not None:
                proven, touched = self.watched
                if touched:
                    proven = {rel: d for rel, d in proven.items() if rel not in touched}
                files = [f for f in files if f[0] not in proven]
            self._proven = {**proven, **{rel: digests[rel] for rel in stats.holding(files)}}
        return self._proven

    def tool(self, path: str, digest_now: Callable[[str], Digest]) -> bool:
        same = self._tools.get(path)
        if same is None:
            was = self.previous.tools.get(path)
            same = self._tools[path] = was is not None and str(digest_now(path)) == was
        return same


def learn(execroot: str, validated: dict[str, str], produced: dict[str, Digest], settled: dict[str, Digest],
          tools: dict[str, Digest], proven: dict[str, str] | None = None) -> Knowledge:
    """The knowledge a build leaves: its validated keys and the digests they were computed from
    (`proven`: the files this build found unchanged without computing their digests)."""
    digests = dict(proven or ())
    digests.update((rel, str(d)) for rel, d in settled.items())
    digests.update((rel, str(d)) for rel, d in produced.items())
    return Knowledge(validated, digests, {t: str(d) for t, d in tools.items()}, execroot)
