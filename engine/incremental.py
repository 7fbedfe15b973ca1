"""Deciding whether an action must run, from action keys rather than timestamps.

Per action the state file remembers the key of its last successful run, the inputs its depfile
reported (headers), and the digests of its outputs. An action is fresh when the key computed
now (argv, env, input digests, discovered-input digests, tools, platform) equals the recorded
one and every output still holds the recorded bytes. File digests come from the stat cache, so
a no-op build stats every input once and hashes nothing.

The state lives in `target/<profile>/.mcpp/`: losing it only costs a rebuild (or, with the
action cache, a restore); it is written atomically at the end of every build, also a failed one.
"""
from __future__ import annotations

import marshal
import os
import tempfile

from mcpp.cas.action import Action, Platform, action_key
from mcpp.cas.digest import Digest, digest_bytes
from mcpp.cas.statcache import StatCache, discard

from .modules.scanner import ModuleUnit, scan_source
from .plan.include_scan import parse_includes

_FORMAT = "mcpp-state-2"
_MISSING = Digest("missing", 0)


class BuildState:
    def __init__(self, state_dir: str, execroot: str):
        self.dir = state_dir
        self.execroot = execroot
        self.file = os.path.join(state_dir, "actions")
        self.stats = StatCache(os.path.join(state_dir, "stat"))
        # id -> (key, discovered tuple, {output: digest str})
        self.actions: dict[str, tuple[str, tuple[str, ...], dict[str, str]]] = {}
        self.scans: dict[str, tuple] = {}  # source digest -> ModuleUnit fields
        self.include_scans: dict[str, tuple | None] = {}  # file digest -> include directives
        self._dirty = False
        try:
            with open(self.file, "rb") as f:
                fmt, actions, scans, include_scans = marshal.load(f)
            if fmt == _FORMAT and _well_formed(actions, scans, include_scans):
                self.actions, self.scans, self.include_scans = actions, scans, include_scans
            elif fmt == _FORMAT:
                discard(self.file, "wrong-shaped")
        except FileNotFoundError:
            pass
        except (OSError, EOFError, ValueError, TypeError):
            discard(self.file, "unreadable")

    # -- digests ---------------------------------------------------------------------------------
    def digest(self, rel: str) -> Digest:
        try:
            return self.stats.digest(os.path.join(self.execroot, rel))
        except (FileNotFoundError, NotADirectoryError):
            return _MISSING

    def tool_digest(self, path: str) -> Digest:
        try:
            return self.stats.digest(path)
        except (FileNotFoundError, NotADirectoryError):
            return _MISSING

    # -- module scan cache --------------------------------------------------------------------------
    def scan(self, abs_path: str) -> ModuleUnit:
        d = self.stats.digest(abs_path)
        hit = self.scans.get(d.hash)
        if hit is not None:
            return ModuleUnit(*hit)
        with open(abs_path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        unit = scan_source(text, os.path.relpath(abs_path))
        self.scans[d.hash] = (unit.module, unit.exported, unit.imports, unit.global_fragment, unit.import_lines)
        self._dirty = True
        return unit

    def includes(self, abs_path: str):
        """The `#include` directives of a file (engine/plan/include_scan.py), cached by digest."""
        d = self.stats.digest(abs_path)
        if d.hash in self.include_scans:
            return self.include_scans[d.hash]
        with open(abs_path, "rb") as f:
            directives = parse_includes(f.read())
        self.include_scans[d.hash] = directives
        self._dirty = True
        return directives

    # -- action records ----------------------------------------------------------------------------
    def discovered(self, action_id: str) -> tuple[str, ...]:
        rec = self.actions.get(action_id)
        return rec[1] if rec else ()

    def record(self, action_id: str, key: str, discovered: tuple[str, ...], outputs: dict[str, str]) -> None:
        self.actions[action_id] = (key, discovered, outputs)
        self._dirty = True

    def forget(self, action_id: str) -> None:
        if self.actions.pop(action_id, None) is not None:
            self._dirty = True

    def recorded(self, action_id: str):
        return self.actions.get(action_id)

    def save(self) -> None:
        self.stats.save()
        if not self._dirty:
            return
        os.makedirs(self.dir, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=self.dir)
        with open(fd, "wb") as f:
            marshal.dump((_FORMAT, self.actions, self.scans, self.include_scans), f)
        os.replace(tmp, self.file)
        self._dirty = False


class KeyComputer:
    """Computes action keys with digests from the state and from outputs produced this build."""

    def __init__(self, state: BuildState, platform: Platform, generated: dict[str, bytes]):
        self.state = state
        self.platform = platform
        self.produced: dict[str, Digest] = {}  # outputs of actions settled in this build
        self.generated = {path: digest_bytes(data) for path, data in generated.items()}

    def digest_of(self, rel: str) -> Digest:
        d = self.produced.get(rel) or self.generated.get(rel)
        return d if d is not None else self.state.digest(rel)

    def key(self, action: Action, discovered: tuple[str, ...]) -> str:
        return action_key(action, self.platform, self.digest_of, self.state.tool_digest, discovered)

    def fresh(self, action: Action) -> bool:
        """True when the last run's key still holds and its outputs are intact."""
        rec = self.state.recorded(action.id)
        if rec is None:
            return False
        key, discovered, outputs = rec
        if self.key(action, discovered) != key:
            return False
        for out in action.outputs:
            want = outputs.get(out)
            if want is None or str(self.state.digest(out)) != want:
                return False
        for out in action.outputs:
            self.produced[out] = Digest.parse(outputs[out])
        return True


def _well_formed(actions, scans, include_scans) -> bool:
    """A state file of the right format can still hold the wrong shapes (another version, a
    hand edit): then it is dropped whole, and the actions' keys are checked again."""
    def str_dict(d, value_ok) -> bool:
        return isinstance(d, dict) and all(isinstance(k, str) and value_ok(v) for k, v in d.items())

    return (str_dict(actions, lambda r: isinstance(r, tuple) and len(r) == 3 and isinstance(r[0], str)
                     and isinstance(r[1], tuple) and all(isinstance(x, str) for x in r[1])
                     and str_dict(r[2], lambda d: isinstance(d, str)))
            and str_dict(scans, lambda u: isinstance(u, tuple) and len(u) == 5)
            and str_dict(include_scans, lambda t: t is None or isinstance(t, tuple)))
