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
changed. The digests are the stat cache's, one `stat` per file per build as the full check
takes; only the encoding and the hashing are saved. Outputs are still checked by the caller.
Anything not known (a plan made anew, an in-process build, a path never seen) counts as
changed, and the key is computed as always.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from mcpp.cas.digest import Digest


@dataclass
class Knowledge:
    """What one server build leaves for the next build of the same request."""
    validated: dict[str, str] = field(default_factory=dict)  # action id -> key it ended the build with
    digests: dict[str, str] = field(default_factory=dict)  # input path -> digest the keys used
    tools: dict[str, str] = field(default_factory=dict)  # tool path -> digest


class Unchanged:
    def __init__(self, previous: Knowledge):
        self.previous = previous
        self.seen: dict[str, bool] = {}  # path -> answered `path()` this build
        self._tools: dict[str, bool] = {}

    def validated(self, action_id: str) -> str | None:
        return self.previous.validated.get(action_id)

    def path(self, rel: str, digest_now: Callable[[str], Digest]) -> bool:
        """Whether input `rel` has the digest the previous build keyed. Only for a file no action
        rewrites later in this build (the caller's check)."""
        return _same(self.seen, self.previous.digests, rel, digest_now)

    def tool(self, path: str, digest_now: Callable[[str], Digest]) -> bool:
        return _same(self._tools, self.previous.tools, path, digest_now)


def _same(answers: dict[str, bool], before: dict[str, str], path: str, digest_now: Callable[[str], Digest]) -> bool:
    """Whether `path` has the digest `before` holds for it, asked once per build (`answers`)."""
    same = answers.get(path)
    if same is None:
        was = before.get(path)
        same = answers[path] = was is not None and str(digest_now(path)) == was
    return same


def learn(validated: dict[str, str], produced: dict[str, Digest], settled: dict[str, Digest],
          tools: dict[str, Digest]) -> Knowledge:
    """The knowledge a build leaves: its validated keys and the digests they were computed from."""
    digests = {rel: str(d) for rel, d in settled.items()}
    digests.update((rel, str(d)) for rel, d in produced.items())
    return Knowledge(validated, digests, {t: str(d) for t, d in tools.items()})
