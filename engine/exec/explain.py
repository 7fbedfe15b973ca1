"""`mcpp explain ACTION`: why an action ran.

Every time an action runs or is restored from the cache, the inputs of its key are logged
(command, environment, input and tool digests, platform); `explain` shows the key of the last
run and what changed since the one before. A build writes to the log only when something ran
(a no-op build never touches it), and never reads it.

The log is append-only: a build appends the records of what it ran, in one write, and reads
nothing; an edit that ran a compile and the link costs two records, whatever the size of the
project (rewriting a log of every action grows with the project, and a file per action costs a
file creation per action restored). `explain` reads the whole
log and keeps, per action, the last two records with different keys (a record with the key of
the one before it replaces it: the same result, restored anew). When the log outgrows
`_COMPACT_BYTES`, a save rewrites it with only those.

Format: the line `mcpp-explain-3`, then frames: a 4-byte big-endian length and a `marshal`ed
`(action id, record)`. A frame cut short (a build killed mid-write) ends the log there.
"""
from __future__ import annotations

import marshal
import os
import shutil
import struct
from typing import Callable

from mcpp.cas.action import Action
from mcpp.cas.atomic import write_atomic
from mcpp.cas.remote.trust import describe as describe_origin

from ..core.errors import McppError

_MAGIC = b"mcpp-explain-3\n"
_FRAME = struct.Struct(">I")
_COMPACT_BYTES = 32 << 20
_AHEAD_SLICE = 500  # records encoded between two looks at `frame_ahead`'s stop: ~5 ms


class ExplainLog:
    def __init__(self, path: str, platform: str):
        self.file = path
        self.platform = platform
        self._new: list[tuple[str, dict]] = []  # what this build ran, in order
        self._framed: list[bytes] = []  # the frames of the first of them, made ahead (`frame_ahead`)

    def record(self, action: Action, key: str, inputs: dict, keys, origin: dict | None = None,
               outputs: dict[str, str] | None = None) -> None:
        self._new.append((action.id, {
            "key": key,
            "argv": list(action.argv),
            "env": dict(action.env),
            "inputs": {p: str(d) for p, d in inputs.items()},
            "tools": {t: str(keys.tool_digest(t)) for t in action.tools},
            "platform": self.platform,
            "origin": origin,  # where the result came from (cas/remote/trust.py)
            "outputs": outputs or {},  # output path -> digest
        }))

    def frame_ahead(self, stop: Callable[[], bool]) -> None:
        """Encode the records so far, a slice at a time until `stop()`: the build calls it while
        its last action runs, so that `save` after it encodes only that action's (a clean build of
        10,000 units: ~0.1 s after its link otherwise)."""
        while self._new and not stop():
            chunk, self._new = self._new[:_AHEAD_SLICE], self._new[_AHEAD_SLICE:]
            self._framed.append(b"".join(_frame(action_id, rec) for action_id, rec in chunk))

    def save(self) -> None:
        if not self._new and not self._framed:
            return
        data = b"".join(self._framed) + b"".join(_frame(action_id, rec) for action_id, rec in self._new)
        self._new, self._framed = [], []
        if os.path.isdir(self.file):  # a log of an earlier version: a directory of files
            shutil.rmtree(self.file)
        try:
            size = os.path.getsize(self.file)
            with open(self.file, "rb") as f:
                ours = f.read(len(_MAGIC)) == _MAGIC
        except OSError:
            size, ours = 0, False
        if not ours:  # absent, or another version's: start over
            write_atomic(self.file, _MAGIC + data)
            return
        with open(self.file, "ab") as f:
            f.write(data)
        if size + len(data) > _COMPACT_BYTES:
            records = load_records(self.file)
            write_atomic(self.file, _MAGIC + b"".join(
                _frame(action_id, rec) for action_id, history in records.items() for rec in history))


def _frame(action_id: str, rec: dict) -> bytes:
    body = marshal.dumps((action_id, rec))
    return _FRAME.pack(len(body)) + body


def load_records(path: str) -> dict[str, list[dict]]:
    """Per action, its last two records with different keys (see the module docstring). A
    record of the wrong shape is returned as it is: the caller names the log as damaged when
    it cannot read it."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return {}
    if not data.startswith(_MAGIC):
        return {}
    records: dict[str, list[dict]] = {}
    pos = len(_MAGIC)
    while pos + _FRAME.size <= len(data):
        (length,) = _FRAME.unpack_from(data, pos)
        body = data[pos + _FRAME.size: pos + _FRAME.size + length]
        if len(body) < length:
            break  # cut short by a build that was killed mid-write
        pos += _FRAME.size + length
        try:
            action_id, rec = marshal.loads(body)
        except (ValueError, EOFError, TypeError):
            break
        if not isinstance(action_id, str):
            continue
        history = records.setdefault(action_id, [])
        if history and isinstance(rec, dict) and isinstance(history[-1], dict) \
                and history[-1].get("key") == rec.get("key"):
            history[-1] = rec  # the same key restored anew: its origin and outputs
        else:
            history.append(rec)
            del history[:-2]
    return records


def find_action(records: dict[str, list[dict]], query: str) -> str:
    if query in records:
        return query
    matches = sorted(a for a in records if query in a)
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise McppError(f"no action matching `{query}` has run in this target directory",
                        notes=["help: actions are named like `compile <package>:<source>` and `link <package>:<binary>`"])
    raise McppError(f"`{query}` matches several actions: {', '.join(matches[:10])}")


def list_lines(records: dict[str, list[dict]], profile: str) -> list[str]:
    """What `mcpp explain` without an argument prints: every action it can explain."""
    if not records:
        return [f"no action has run in the `{profile}` build of this target directory yet; "
                f"build first, then `mcpp explain ACTION`"]
    return ["actions that can be explained (`mcpp explain ACTION`, any unique part of the name):",
            *(f"  {a}" for a in sorted(records))]


def explain_lines(action_id: str, history: list[dict]) -> list[str]:
    last = history[-1]
    lines = [f"action: {action_id}", f"key: {last['key']}", f"platform: {last['platform']}",
             "command: " + " ".join(last["argv"])]
    if last["env"]:
        lines.append("env: " + " ".join(f"{k}={v}" for k, v in sorted(last["env"].items())))
    lines.append("inputs:")
    lines += [f"  {p} {d}" for p, d in sorted(last["inputs"].items())]
    lines.append("tools:")
    lines += [f"  {t} {d}" for t, d in sorted(last["tools"].items())]
    lines.append("origin: " + describe_origin(last.get("origin")))
    if last.get("outputs"):
        lines.append("outputs:")
        lines += [f"  {p} {d}" for p, d in sorted(last["outputs"].items())]
    if len(history) < 2:
        lines.append("changed: nothing to compare with (this is the first recorded run)")
        return lines
    lines.append("changed since the run before:")
    changes = diff_records(history[-2], last)
    lines += [f"  {c}" for c in changes] or ["  nothing in the key (the outputs were missing or altered)"]
    return lines


def diff_records(old: dict, new: dict) -> list[str]:
    out: list[str] = []
    if old["platform"] != new["platform"]:
        out.append(f"platform: {old['platform']} -> {new['platform']}")
    if old["argv"] != new["argv"]:
        # Arguments that name inputs (a link's object files) are reported below as inputs,
        # not as flags.
        paths = set(old["inputs"]) | set(new["inputs"])
        removed = [a for a in old["argv"] if a not in new["argv"] and a not in paths]
        added = [a for a in new["argv"] if a not in old["argv"] and a not in paths]
        if removed or added:
            out += [f"flag removed: {a}" for a in removed] + [f"flag added: {a}" for a in added]
        elif [a for a in old["argv"] if a not in paths] != [a for a in new["argv"] if a not in paths]:
            out.append("command: same flags in a different order")
    for k in sorted(set(old["env"]) | set(new["env"])):
        if old["env"].get(k) != new["env"].get(k):
            out.append(f"env {k}: {old['env'].get(k)} -> {new['env'].get(k)}")
    for kind in ("inputs", "tools"):
        label = "input" if kind == "inputs" else "tool"
        before, after = old[kind], new[kind]
        for p in sorted(set(before) | set(after)):
            if p not in before:
                out.append(f"{label} added: {p} {after[p]}")
            elif p not in after:
                out.append(f"{label} removed: {p} {before[p]}")
            elif before[p] != after[p]:
                out.append(f"{label} changed: {p} {before[p]} -> {after[p]}")
    return out
