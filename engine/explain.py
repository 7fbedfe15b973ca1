"""`mcpp explain ACTION`: why an action ran.

Every time an action runs or is restored from the cache, the inputs of its key are logged
(command, environment, input and tool digests, platform); the log keeps the last two records
per action, so `explain` can show the key of the last run and what changed since the one
before. The log is only read and written when something ran: a no-op build never touches it.

The log is a directory with one small file per action (named by a digest of the action's id),
so a build that ran one compile and the link reads and writes two files, not the records of
every action of the project: an edit costs the same with 10 or 10,000 units.
"""
from __future__ import annotations

import marshal
import os

from mcpp.cas.action import Action
from mcpp.cas.atomic import write_atomic
from mcpp.cas.digest import digest_bytes
from mcpp.cas.remote.trust import describe as describe_origin

from .errors import McppError

_FORMAT = "mcpp-explain-2"


class ExplainLog:
    def __init__(self, path: str, platform: str):
        self.dir = path
        self.platform = platform
        self._histories: dict[str, list[dict]] = {}  # the actions read or recorded by this build
        self._dirty: set[str] = set()

    def _history(self, action_id: str) -> list[dict]:
        history = self._histories.get(action_id)
        if history is None:
            found = _read(_file(self.dir, action_id))
            history = found[1] if found is not None and found[0] == action_id and isinstance(found[1], list) else []
            self._histories[action_id] = history
        return history

    def record(self, action: Action, key: str, inputs: dict, keys, origin: dict | None = None,
               outputs: dict[str, str] | None = None) -> None:
        rec = {
            "key": key,
            "argv": list(action.argv),
            "env": dict(action.env),
            "inputs": {p: str(d) for p, d in inputs.items()},
            "tools": {t: str(keys.tool_digest(t)) for t in action.tools},
            "platform": self.platform,
            "origin": origin,  # where the result came from (cas/remote/trust.py)
            "outputs": outputs or {},  # output path -> digest
        }
        history = self._history(action.id)
        if history and history[-1].get("key") == key:
            if (history[-1].get("origin"), history[-1].get("outputs")) != (origin, rec["outputs"]):
                history[-1].update(origin=origin, outputs=rec["outputs"])  # same key, result restored anew
                self._dirty.add(action.id)
            return
        history.append(rec)
        del history[:-2]
        self._dirty.add(action.id)

    def save(self) -> None:
        if not self._dirty:
            return
        if os.path.isfile(self.dir):  # the single-file log of earlier versions
            os.unlink(self.dir)
        for action_id in sorted(self._dirty):
            write_atomic(_file(self.dir, action_id),
                         marshal.dumps((_FORMAT, action_id, self._histories[action_id])))
        self._dirty.clear()


def _file(directory: str, action_id: str) -> str:
    return os.path.join(directory, digest_bytes(action_id.encode()).hash[:32])


def _read(path: str) -> tuple[str, object] | None:
    """(action id, history) of one action's file; None when it is missing or unreadable."""
    try:
        with open(path, "rb") as f:
            fmt, action_id, history = marshal.load(f)
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if fmt != _FORMAT or not isinstance(action_id, str):
        return None
    return action_id, history


def load_records(path: str) -> dict[str, list[dict]]:
    """Every action's history in the log at `path` (a history of the wrong shape is returned as
    it is: the caller names the log as damaged when it cannot read it)."""
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return {}
    records = {}
    for name in names:
        if name.startswith("."):
            continue
        found = _read(os.path.join(path, name))
        if found is not None:
            records[found[0]] = found[1]
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
    return [f"actions that can be explained (`mcpp explain ACTION`, any unique part of the name):",
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
