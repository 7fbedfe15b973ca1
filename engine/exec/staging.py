"""How an action's input reaches a sandbox that stages inputs: as the materialization area's
file of its content (cas/materialize.py), resolved once per build."""
from __future__ import annotations

import os
from typing import Callable

from mcpp.cas.digest import Digest

from .stores import Stores


class ChangedSinceHashed(OSError):
    """A file's bytes are no longer those of the digest it was hashed to (`strict` staging)."""


def input_stager(execroot: str, digest_of: Callable[[str], Digest], stores: Stores,
                 seen: dict[str, tuple[int, int]], strict: bool = False,
                 changed: set[str] | None = None) -> Callable[[str], str]:
    """`stage(rel) -> area path` for an execroot-relative input, by its digest (`digest_of`);
    `seen` collects the area files' identities for prepared trees (`SandboxSpec.input_ids`).
    One file has one content during a build, so each is resolved once. A file changed since it
    was hashed (an edit saved during the build) is refused, `strict` (`ChangedSinceHashed`: a
    run begun ahead is keyed by the digests it was staged by), else staged as it is now and
    added to `changed`: a run that reads it is not the run its key names, and is not cached
    (`SandboxRunner.run`, `ActionPipeline._finish_run`)."""
    staged: dict[str, str] = {}
    store, mat = stores.blobs, stores.mat

    def stage(rel: str) -> str:
        path = staged.get(rel)
        if path is None:
            d = digest_of(rel)
            full = os.path.join(execroot, rel)
            # A binary an earlier action made stays runnable by a later one, and packs the same.
            exe = _is_executable(full)
            path = mat.publish_file(d, full, executable=exe, seen=seen)
            if path is None:  # changed since it was hashed: take what is there now
                if strict:
                    raise ChangedSinceHashed(f"{rel} changed since it was hashed")
                path = mat.path(store.put_file(full), executable=exe)
                if changed is not None:
                    changed.add(rel)
            staged[rel] = path
        return path

    return stage


def _is_executable(path: str) -> bool:
    try:
        return bool(os.stat(path).st_mode & 0o111)
    except OSError:
        return False
