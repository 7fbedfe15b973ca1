"""Deciding whether an action must run, from action keys rather than timestamps.

Per action the state file remembers the key of its last successful run, the inputs its depfile
reported (headers), and the digests of its outputs. An action is fresh when the key computed
now (argv, env, input digests, discovered-input digests, tools, platform) equals the recorded
one and every output still holds the recorded bytes. File digests come from the stat cache, so
a no-op build stats every input once and hashes nothing.

The state lives in `target/<profile>/.mcpp/` (engine/package/layout.py): losing it only costs a rebuild
(or, with the action cache, a restore); it is saved at the end of every build, also a failed one,
by appending what the build changed (cas/journal.py).
"""
from __future__ import annotations

import os
from dataclasses import replace
from typing import Callable, Container, Iterable, Mapping

from mcpp.cas.action import Action, Platform, action_key, encoded_input
from mcpp.cas import journal
from mcpp.cas.atomic import read_file
from mcpp.cas.digest import Digest, digest_bytes
from mcpp.cas.journal import Stamp, take_touched, touched_of
from mcpp.cas.statcache import StatCache, discard
from mcpp.cas.tree import TreeError, digest_of_directory

from ..core.errors import ScanError
from ..modules.p1689 import PreprocessScan, run_scan
from ..modules.scanner import ModuleUnit, NeedsPreprocessor, scan_source
from ..plan.include_scan import parse_includes
from .unchanged import Unchanged

_FORMAT = "mcpp-state-4"
_SCAN_FORMAT = "mcpp-scans-3"
_MISSING = Digest("missing", 0)


def _load(path: str, fmt: str, empty: tuple, well_formed: Callable[..., bool]) -> tuple[tuple, Stamp | None]:
    """The dictionaries a state file of format `fmt` holds, else `empty`, and the file's stamp
    where a save may append to it (cas/journal.py). Missing or written by another
    version both mean "start over" quietly; a file of this format that cannot be read or holds the
    wrong shapes (a hand edit, a damaged disk) is discarded with a warning, and the actions' keys
    are checked again."""
    try:
        found = journal.load(path, fmt, len(empty), well_formed)
    except journal.Foreign:
        return empty, None
    except journal.Unusable as e:
        discard(path, e.why)
        return empty, None
    return (empty, None) if found is None else (found.payload, found.stamp)


class BuildState:
    """Each action's last successful run: key, discovered inputs, output digests."""

    def __init__(self, path: str, execroot: str, stats: StatCache):
        self.file = path
        self.execroot = execroot
        self.stats = stats
        # id -> (key, discovered tuple, {output: digest str})
        self.actions: dict[str, tuple[str, tuple[str, ...], dict[str, str]]]
        # `stamp`, as StatCache's: the file's, where it holds what this object started from or last saved
        (self.actions,), self.stamp = _load(path, _FORMAT, ({},), _well_formed_actions)
        self._dirty = False
        self.touched: set[str] = set()  # the actions recorded or forgotten since (StatCache.touched)
        self.saved: os.stat_result | None = None  # the file's stat when this object last wrote it

    # -- digests ---------------------------------------------------------------------------------
    def digest(self, rel: str) -> Digest:
        """The digest of an execroot-relative file, or a fixed "missing" digest. A path ending in
        `/` is a tree output: the digest of its REAPI tree (cas/tree.py)."""
        if rel.endswith("/"):
            try:
                return digest_of_directory(os.path.join(self.execroot, rel))
            except (OSError, TreeError):
                return _MISSING
        return self.tool_digest(os.path.join(self.execroot, rel))

    def tool_digest(self, path: str) -> Digest:
        try:
            return self.stats.digest(path)
        except (FileNotFoundError, NotADirectoryError):
            return _MISSING

    def remember_output(self, rel: str, digest: Digest) -> None:
        """An output just written or restored has `digest`: the next build stats it, never hashes."""
        if rel.endswith("/"):
            return  # a tree is hashed again when checked (the stat cache knows files only)
        self.stats.remember(os.path.join(self.execroot, rel), digest)

    @property
    def files_hashed(self) -> int:
        return self.stats.hashed

    # -- action records ----------------------------------------------------------------------------
    def discovered(self, action_id: str) -> tuple[str, ...]:
        rec = self.actions.get(action_id)
        return rec[1] if rec else ()

    def record(self, action_id: str, key: str, discovered: tuple[str, ...], outputs: dict[str, str]) -> None:
        self.actions[action_id] = (key, discovered, outputs)
        self.touched.add(action_id)
        self._dirty = True

    def forget(self, action_id: str) -> None:
        if self.actions.pop(action_id, None) is not None:
            self.touched.add(action_id)
            self._dirty = True

    def recorded(self, action_id: str):
        return self.actions.get(action_id)

    def save(self) -> None:
        """Write the stat cache and the records (each only when it changed)."""
        self.stats.save()
        if self._dirty:
            self.saved = journal.save(self.file, _FORMAT, (self.actions,), (self.touched,), self.stamp)
            self.stamp = journal.stamp(self.saved)
            self._dirty = False

    def changes(self) -> tuple | None:
        """Each touched action's record and those forgotten (`touched_of`), for a copy of the starting point to
        take (`take_changes`); None while a record is not saved yet. The stat cache's are its own."""
        return None if self._dirty else touched_of(self.actions, self.touched)

    def take_changes(self, changes: tuple) -> None:
        take_touched(self.actions, changes)


class ScanCache:
    """What the planner learns by reading sources, cached by content digest: each C++ source's
    module declarations and each file's `#include` directives. A file whose digest is unchanged
    is not read again; `digest(abs_path)` comes from the stat cache, so that costs a stat.
    `read`, where given (`StatCache.digest_and_bytes`), answers a file's digest with the bytes
    it hashed when it had to read them: a new file is then read once, not once to hash and
    again to scan, and what is scanned is the content its digest names."""

    def __init__(self, path: str, digest: Callable[[str], Digest],
                 read: Callable[[str], tuple[Digest, bytes | None]] | None = None):
        self.file = path
        self._digest = digest
        self._read = read if read is not None else lambda p: (digest(p), None)
        self.scans: dict[str, tuple]  # source digest -> ModuleUnit fields
        self.include_scans: dict[str, tuple | None]  # file digest -> include directives
        # scan key -> (ModuleUnit fields, ((path, digest), ...) of every file the scan read)
        self.preprocessed: dict[str, tuple]
        (self.scans, self.include_scans, self.preprocessed), self.stamp = _load(
            path, _SCAN_FORMAT, ({}, {}, {}), _well_formed_scans)
        self._dirty = False
        # the keys set since, of each of the three (StatCache.touched)
        self.touched: tuple[set[str], set[str], set[str]] = (set(), set(), set())
        self.saved: os.stat_result | None = None  # as BuildState's

    def scan(self, abs_path: str, preprocess: PreprocessScan | None = None) -> ModuleUnit:
        """The module unit of a C++ source (engine/modules/scanner.py). A source the own
        scanner cannot answer without the preprocessor is scanned with `preprocess`
        (engine/modules/p1689.py) when given, else refused. A source read for its scan has
        its `#include` directives parsed from the same bytes (`includes` then reads nothing)."""
        d, data = self._read(abs_path)
        hit = self.scans.get(d.hash)
        if hit is not None:
            return ModuleUnit(*hit)
        if data is None:
            data = read_file(abs_path)
        if d.hash not in self.include_scans:
            self.include_scans[d.hash] = parse_includes(data)
            self.touched[1].add(d.hash)
            self._dirty = True
        try:
            unit = _scan_text(_text(data), abs_path)
        except NeedsPreprocessor as e:
            if preprocess is None:
                raise
            return self._preprocessed(abs_path, d, preprocess, e.partial)
        self.scans[d.hash] = (unit.module, unit.exported, unit.imports, unit.global_fragment, unit.import_lines)
        self.touched[0].add(d.hash)
        self._dirty = True
        return unit

    def _preprocessed(self, abs_path: str, source: Digest, req: PreprocessScan,
                      partial: ModuleUnit) -> ModuleUnit:
        """A preprocessing scan, cached under the source, the request (flags, compiler) and the
        scanner binary, and trusted while every file it read still has the digest it had."""
        tool = self._digest(os.path.realpath(req.tool)).hash
        key = digest_bytes("\0".join((source.hash, tool, req.key)).encode()).hash
        hit = self.preprocessed.get(key)
        if hit is not None and all(str(self._digest(p)) == want for p, want in hit[1]):
            return ModuleUnit(*hit[0])
        unit, read = run_scan(req, os.path.relpath(abs_path), partial)
        files = tuple((p, str(self._digest(p))) for p in dict.fromkeys([abs_path, *read]))
        self.preprocessed[key] = ((unit.module, unit.exported, unit.imports, unit.global_fragment,
                                   unit.import_lines), files)
        self.touched[2].add(key)
        self._dirty = True
        return unit

    def includes(self, abs_path: str):
        """The `#include` directives of a file (engine/plan/include_scan.py)."""
        d, data = self._read(abs_path)
        if d.hash in self.include_scans:
            return self.include_scans[d.hash]
        directives = parse_includes(data if data is not None else read_file(abs_path))
        self.include_scans[d.hash] = directives
        self.touched[1].add(d.hash)
        self._dirty = True
        return directives

    def save(self) -> None:
        if self._dirty:
            self.saved = journal.save(self.file, _SCAN_FORMAT, self._kept(), self.touched, self.stamp)
            self.stamp = journal.stamp(self.saved)
            self._dirty = False

    def changes(self) -> tuple | None:
        """As `BuildState.changes`, for each of the three."""
        if self._dirty:
            return None
        return tuple(touched_of(d, keys) for d, keys in zip(self._kept(), self.touched))

    def take_changes(self, changes: tuple) -> None:
        for d, touched in zip(self._kept(), changes, strict=True):
            take_touched(d, touched)

    def _kept(self) -> tuple[dict, dict, dict]:
        return self.scans, self.include_scans, self.preprocessed


def _scan_text(text: str, abs_path: str) -> ModuleUnit:
    """`scan_source`, an error naming the file relative to the working directory. The name
    appears only in an error, so it is made only for one: the scan is run again with it, and
    fails the same way."""
    try:
        return scan_source(text, abs_path)
    except ScanError:
        return scan_source(text, os.path.relpath(abs_path))


def _text(data: bytes) -> str:
    """A source's bytes as `open(path, encoding="utf-8", errors="replace").read()` reads them:
    undecodable bytes replaced, and `\\r\\n` and `\\r` line ends read as `\\n`."""
    text = data.decode("utf-8", errors="replace")
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


class KeyComputer:
    """Computes action keys with digests from the state and from outputs produced this build."""

    def __init__(self, state: BuildState, platform: Platform, generated: dict[str, bytes],
                 unchanged: Unchanged | None = None, memo: bool = True,
                 namespace_of: Callable[[Action], str] | None = None):
        self.state = state
        self.platform = platform
        # The namespace each action's result is keyed in (engine/trust/policy.py); None: `platform`'s.
        self.namespace_of = namespace_of
        self._platforms: dict[str, Platform] = {platform.namespace: platform}
        # What a warm server knows did not change since the last build (engine/state/unchanged.py)
        self.unchanged = unchanged
        self.produced: dict[str, Digest] = {}  # outputs of actions settled in this build
        self.rewritten: set[str] = set()  # of those, the ones an action wrote or restored
        self.generated = {path: digest_bytes(data) for path, data in generated.items()}
        # Files no action of this build writes (sources, headers, system headers), by path: each is
        # stat'ed once per build, not once per action that reads it (hundreds of compiles read
        # the same headers), and its part of the key encoding is made once.
        self.settled: dict[str, Digest] = {}
        self.encoded: dict[str, str] = {}
        self.tools: dict[str, Digest] = {}
        # Known files found unchanged this build, by path (their digests as text), and the paths
        # an action may take as unchanged: those plus the plan's own generated files (the plan
        # is the previous build's when there is knowledge). Filled on the first known check.
        self.proven: dict[str, str] = {}
        self._same: set[str] | None = None
        self._tools_same: dict[tuple[str, ...], bool] = {}
        # Keys computed this build, by (action, discovered inputs): a check asks for the same key
        # twice (is the last one still right; the key to look up) and the finish a third time,
        # and a link's key hashes a thousand inputs. See `key` for why a key cannot go stale.
        self._keys: dict[tuple[str, tuple[str, ...]], str] = {}
        # Off where an action may read a file no prerequisite of its writes (`--sandbox off`):
        # another action may still rewrite it after the first key was computed.
        self._memo = memo

    def digest_of(self, rel: str) -> Digest:
        d = self.produced.get(rel) or self.generated.get(rel)
        if d is not None:
            return d
        d = self.settled.get(rel)
        if d is None:
            known = self.proven.get(rel)  # stat'ed once this build already
            d = self.settled[rel] = Digest.parse(known) if known is not None else self.state.digest(rel)
        return d

    def _encoded(self, rel: str) -> str:
        # A file's part is made with the digest `digest_of` answers now; one an action produces
        # later leaves `encoded` then (`_produced`), so a hit is always the file's part. A
        # produced output's part is kept too: a clean build's link is keyed when checked and
        # again when it ends, over every object.
        part = self.encoded.get(rel)
        if part is None:
            part = self.encoded[rel] = encoded_input(rel, self.digest_of(rel))
        return part

    def encode_ahead(self, rels: Iterable[str]) -> None:
        """Make now the key-encoding parts of files a later action's key will read (the fresh
        objects of an edit-one build's link, while the edited compile runs: `ActionPipeline.idle`);
        `key` then finds them made. The parts are those `key` would make: a file produced later
        in the build leaves `encoded` then (`_produced`)."""
        for rel in rels:
            self._encoded(rel)

    def _produced(self, rel: str, digest: Digest) -> None:
        self.produced[rel] = digest
        self.encoded.pop(rel, None)

    def tool_digest(self, path: str) -> Digest:
        d = self.tools.get(path)
        if d is None:
            d = self.tools[path] = self.state.tool_digest(path)
        return d

    def platform_of(self, action: Action) -> Platform:
        """The platform `action` is keyed under: this build's, in the action's namespace."""
        if self.namespace_of is None:
            return self.platform
        ns = self.namespace_of(action)
        platform = self._platforms.get(ns)
        if platform is None:
            platform = self._platforms[ns] = replace(self.platform, namespace=ns)
        return platform

    def key(self, action: Action, discovered: tuple[str, ...]) -> str:
        """The action's key over its inputs' digests this build. An action is first asked for
        once its prerequisites have finished, and within a build an input's digest changes only
        when its producer settles it, so the key stays right for the rest of the build; except
        for an action that rewrites one of its own inputs, whose key after it ran differs."""
        memo = (action.id, discovered)
        k = self._keys.get(memo)
        if k is None:
            k = action_key(action, self.platform_of(action), self.digest_of, self.tool_digest, discovered, self._encoded)
            if self._memo and not _rewrites_an_input(action, discovered):
                self._keys[memo] = k
        return k

    def hashed_as(self, digests: Mapping[str, Digest]) -> None:
        """Files this build hashed and already acted on (the inputs a head start staged by these
        digests, engine/exec/head_start.py): the keys use these digests, not the file as a later
        stat finds it. A file saved in between is then keyed as what the run read, and the next
        build sees its new stat."""
        self.settled.update(digests)

    def outputs_settled(self, outputs: Mapping[str, Digest], absent: Container[str] = ()) -> None:
        """Outputs an action just produced or restored: the keys of the actions that read them
        use these digests, and the stat cache learns them (the next build hashes nothing).
        `absent`: those not on disk: left on a remote server (`--remote-download`), or still
        being written (engine/exec/restore_writer.py), whose stat is learnt once written."""
        for rel, digest in outputs.items():
            if rel not in absent:
                self.state.remember_output(rel, digest)
            self._produced(rel, digest)
            self.rewritten.add(rel)

    def fresh(self, action: Action) -> bool:
        """True when the last run's key still holds and its outputs are intact."""
        rec = self.state.actions.get(action.id)
        if rec is None:
            return False
        key, discovered, outputs = rec
        if not self._known_unchanged(action, key, discovered) and self.key(action, discovered) != key:
            return False
        proven = self.proven
        checked = []  # outputs found intact through the stat cache, not the proof: their digests are produced
        for out in action.outputs:
            want = outputs.get(out)
            if want is None:
                return False
            if proven.get(out) != want:
                if str(self.state.digest(out)) != want:
                    return False
                checked.append(out)
        for out in checked:
            self._produced(out, Digest.parse(outputs[out]))
        return True

    def _known_unchanged(self, action: Action, key: str, discovered: tuple[str, ...]) -> bool:
        """True when the server's knowledge proves `key` still is the action's key."""
        known = self.unchanged
        if known is None or known.validated(action.id) != key:
            return False
        inputs = action.inputs
        touched, rewritten = known.touched, self.rewritten  # the watcher saw it written; an action wrote it
        if touched and not (touched.isdisjoint(inputs) and touched.isdisjoint(discovered)):
            return False
        if rewritten and not (rewritten.isdisjoint(inputs) and rewritten.isdisjoint(discovered)):
            return False
        same = self._same
        if same is None:
            self.proven = known.proven(self.state.stats)
            same = self._same = {*self.proven, *self.generated}
        if not (same.issuperset(inputs) and same.issuperset(discovered)):
            return False
        tools = action.tools  # hundreds of actions share one tuple of tools: asked once
        ok = self._tools_same.get(tools)
        if ok is None:
            ok = self._tools_same[tools] = all(known.tool(t, self.tool_digest) for t in tools)
        return ok


def _rewrites_an_input(action: Action, discovered: tuple[str, ...]) -> bool:
    outputs = set(action.outputs)
    return not (outputs.isdisjoint(action.inputs) and outputs.isdisjoint(discovered))


def _str_dict(d, value_ok) -> bool:
    return isinstance(d, dict) and all(isinstance(k, str) and value_ok(v) for k, v in d.items())


def _well_formed_actions(actions) -> bool:
    return _str_dict(actions, lambda r: isinstance(r, tuple) and len(r) == 3 and isinstance(r[0], str)
                     and isinstance(r[1], tuple) and all(isinstance(x, str) for x in r[1])
                     and _str_dict(r[2], lambda d: isinstance(d, str)))


def _well_formed_scans(scans, include_scans, preprocessed) -> bool:
    return (_str_dict(scans, lambda u: isinstance(u, tuple) and len(u) == 5)
            and _str_dict(include_scans, lambda t: t is None or isinstance(t, tuple))
            and _str_dict(preprocessed, lambda e: isinstance(e, tuple) and len(e) == 2
                          and isinstance(e[0], tuple) and len(e[0]) == 5 and isinstance(e[1], tuple)
                          and all(isinstance(f, tuple) and len(f) == 2 for f in e[1])))
