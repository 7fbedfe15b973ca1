"""The action: one command of the build graph, and the key that names its result.

An action is argv (never a shell string), a fixed environment, declared inputs, declared tools
and declared outputs, all as paths relative to the *execroot* (the directory every action runs
under) except tools, which are absolute paths of binaries outside the project. Keeping the
project's paths relative is what lets a copy of the checkout in another directory hit the same
cache entries: no absolute path of the checkout or of `$MCPP_HOME` enters a key.

`action_key` is the single place that decides what a cache key covers. `KEY_FIELDS` and
`EXCLUDED_FIELDS` classify every field of `Action`; a unit test fails when a new field is in
neither set, so adding a field forces a decision about caching.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Callable, Iterable

import blake3

from .digest import Digest

# Bump when the encoding below changes so old entries can never be mistaken for new ones.
# v2: a compile's key covers the system headers its depfile names (engine/depfile.py); a v1
# entry, keyed without them, must not be trusted after a header under /usr changed.
KEY_VERSION = "mcpp-action-v2"
_VERSION_PART = f"7:version{len(KEY_VERSION)}:{KEY_VERSION}"


@dataclass(frozen=True, slots=True)
class Platform:
    """What the action's outputs depend on beyond its inputs: the toolchain and the host."""

    toolchain: str  # e.g. "gcc 12.2.0 x86_64-linux-gnu" (+ compiler digest, see engine.toolchain.compilers)
    host: str  # host triple
    # Non-empty for results the sandbox could not prove hermetic (any under `--sandbox off`; a
    # link or a rule action under `dir`): their keys live in a namespace of their own, so no
    # hermetic build is ever served one (engine/trust/policy.py decides it from the sandbox's promises).
    namespace: str = ""


class ActionKind(StrEnum):
    """What an action is, for people (status lines, JSON events, `mcpp explain`), and for
    engine/trust/policy.py: whether a sandbox that does not confine reads proves what it read (a
    compile's depfile does). Never keyed itself."""

    COMPILE = "compile"
    ARCHIVE = "archive"
    LINK = "link"
    RULE = "rule"  # declared by a build program (`mcpp.action`)
    ACTION = "action"  # anything else


@dataclass(frozen=True, slots=True)
class Action:
    """One step of a build: a command, the inputs it reads and the outputs it writes."""
    id: str  # stable, human-readable identity, e.g. "compile hello:src/main.cpp"
    argv: tuple[str, ...]
    outputs: tuple[str, ...]
    inputs: tuple[str, ...] = ()  # always read; their digests enter the key
    may_read: tuple[str, ...] = ()  # may be read (headers); only those the depfile names are keyed
    tools: tuple[str, ...] = ()  # absolute paths of binaries the action executes
    env: tuple[tuple[str, str], ...] = ()
    cwd: str = "."  # relative to the execroot
    depfile: str | None = None  # a make-style depfile the action writes: discovered inputs
    kind: ActionKind = ActionKind.ACTION
    description: str = ""  # display: the line shown to the user
    timeout: float | None = None  # seconds; does not change what the action produces
    # Keyed by what its tools are, not where they lie: each tool enters the key by its digest
    # alone, a tool's path in argv by a placeholder naming that digest, and the platform's
    # toolchain only through the tools the action declares (a build program's actions: a tool
    # rebuilt into another store path with the same bytes, or another compiler the action never
    # runs, leaves the key as it was).
    content_keyed: bool = False


# Every field of Action is in exactly one of these sets (enforced by tests/unit/test_action_key.py).
KEY_FIELDS = frozenset({"argv", "outputs", "inputs", "tools", "env", "cwd", "depfile", "content_keyed"})
EXCLUDED_FIELDS = {
    "id": "a name for humans and for `mcpp explain`; two actions with one command are one result",
    "may_read": "only the subset the depfile reports is keyed (passed as `discovered`)",
    "kind": "display, and the trust decision that chooses `Platform.namespace` (engine/trust/policy.py)",
    "description": "display only",
    "timeout": "a limit on running, not a property of the result",
}


def encoded_input(path: str, digest: Digest | str) -> str:
    """One input's part of the key encoding: `put("input", path, digest)` spelled out."""
    d = str(digest)
    return f"5:input{len(path)}:{path}{len(d)}:{d}"


def action_key(
    action: Action,
    platform: Platform,
    digest_of: Callable[[str], Digest],
    tool_digest_of: Callable[[str], Digest],
    discovered: Iterable[str] = (),
    encoded: Callable[[str], str] | None = None,
) -> str:
    """blake3 over a canonical, length-prefixed encoding of everything the result depends on.

    `digest_of(path)` answers an execroot-relative input's digest; `tool_digest_of(path)` an
    absolute tool's. `discovered` are inputs reported by the action's previous depfile.
    `encoded(path)`, when given, answers `encoded_input(path, digest_of(path))` (a caller that
    keys hundreds of actions over the same headers keeps those strings instead of remaking them).
    """
    # Each value is prefixed by its length, so no two different field lists encode alike. The
    # fields are spelled out inline (not through a helper per field): a no-op build keys every
    # action of the plan.
    if action.content_keyed:
        parts = [_VERSION_PART, "13:platform-host", f"{len(platform.host)}:{platform.host}"]
    else:
        parts = [_VERSION_PART, "8:platform", f"{len(platform.toolchain)}:{platform.toolchain}",
                 f"{len(platform.host)}:{platform.host}"]
    if platform.namespace:  # absent for hermetic results, so their keys stay as they were
        parts += ("9:namespace", f"{len(platform.namespace)}:{platform.namespace}")
    argv = action.argv
    n = str(len(argv))
    parts += ("3:cwd", f"{len(action.cwd)}:{action.cwd}", "4:argv", f"{len(n)}:{n}")
    if action.content_keyed:
        tool_digests = {t: str(tool_digest_of(t)) for t in action.tools}
        argv = tuple(content_argv(argv, tool_digests))
    parts += [f"{len(v)}:{v}" for v in argv]
    for k, v in sorted(action.env):
        parts += ("3:env", f"{len(k)}:{k}", f"{len(v)}:{v}")
    # A compile has a hundred or more inputs with its system headers: this loop is most of a
    # no-op build's key computation.
    paths = sorted(set(action.inputs).union(discovered))
    if encoded is not None:
        parts += map(encoded, paths)
    else:
        parts += [encoded_input(path, digest_of(path)) for path in paths]
    if action.content_keyed:
        for d in sorted(tool_digests.values()):
            parts += ("12:tool-content", f"{len(d)}:{d}")
    else:
        for tool in sorted(action.tools):
            d = str(tool_digest_of(tool))
            parts += ("4:tool", f"{len(tool)}:{tool}", f"{len(d)}:{d}")
    for out in sorted(action.outputs):
        parts += ("6:output", f"{len(out)}:{out}")
    depfile = action.depfile or ""
    parts += ("7:depfile", f"{len(depfile)}:{depfile}")
    return blake3.blake3("".join(parts).encode()).hexdigest()


TOOL_PLACEHOLDER = "@@TOOL:{}@@"


def content_argv(argv: Iterable[str], tool_digests: dict[str, str]) -> list[str]:
    """`argv` with each tool path (a whole word, or part of one: `--plugin=gen=/x/bin/gen`)
    replaced by a placeholder naming the tool's digest; longer paths first, so a path that
    extends another is replaced whole."""
    order = sorted(tool_digests, key=len, reverse=True)
    out = []
    for word in argv:
        for tool in order:
            if tool in word:
                word = word.replace(tool, TOOL_PLACEHOLDER.format(tool_digests[tool]))
        out.append(word)
    return out
