"""Which actions printed something on their last run, so that a later build can say it again.

Cargo shows the warnings of every unit on every build, also when nothing was rebuilt: a warning
that vanishes once its file compiled is a warning nobody fixes. The output itself lives with the
action's cache entry; this small record, kept beside the build state under `target/`, names the
entries that have any, so a no-op build reads only those (not one entry per action).
"""
from __future__ import annotations

import marshal

from mcpp.cas.atomic import atomic_file

_FORMAT = "mcpp-warned-actions-1"


class WarnedActions:
    def __init__(self, path: str):
        self.file = path
        self._dirty = False
        self.keys: dict[str, str] = {}  # action id -> key of the entry whose output to replay
        try:
            with open(path, "rb") as f:
                fmt, keys = marshal.loads(f.read())  # one read: `load` reads a file piece by piece
            if fmt == _FORMAT and isinstance(keys, dict):
                self.keys = {k: v for k, v in keys.items() if isinstance(k, str) and isinstance(v, str)}
        except (OSError, EOFError, ValueError, TypeError):
            pass  # missing or damaged: the next build that runs or restores an action fills it again

    def set(self, action_id: str, key: str, printed: bool) -> None:
        """Record whether the result now in `target/` for `action_id` (cache key `key`) printed output."""
        if printed:
            if self.keys.get(action_id) != key:
                self.keys[action_id] = key
                self._dirty = True
        elif self.keys.pop(action_id, None) is not None:
            self._dirty = True

    def key_of(self, action_id: str) -> str | None:
        return self.keys.get(action_id)

    def save(self) -> None:
        if self._dirty:
            with atomic_file(self.file) as f:
                marshal.dump((_FORMAT, self.keys), f)
            self._dirty = False
