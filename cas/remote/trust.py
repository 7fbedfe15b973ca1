"""Which remote results a build accepts, and where every result it used came from.

`SignaturePolicy` is the client's half of the signature model (signing.py): with trusted keys, a
remote result is accepted only when one of them signed exactly that result; anything else is a
miss (the action runs here) and the build says so once. Without trusted keys every result is
accepted (signing is opt-in), and the build notes once that nothing was verified.

*Origin* is recorded with every result the engine uses, so that `mcpp explain` and the JSON
events can say where an output came from, and so that the local action cache cannot launder a
remote result: an entry copied from the remote keeps `{"kind": "remote-cache", "server": URL,
"action": REAPI action digest, "signed-by": "NAME:<key>" | None}`, and when trusted keys are configured a local entry that came
from the remote unsigned (or signed by a key no longer trusted) is not used either.

This module imports neither gRPC nor cryptography at load time: the engine reads origins on
every build.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Callable, Iterable

if TYPE_CHECKING:
    from google.protobuf.message import Message  # protobuf ships no types: `Any`

    from .signing import PublicKey

# Where a result came from (`ActionEntry.origin`): "kind" and, by kind, "server", "action",
# "signed-by", "fetched-from"; a value is None where it is unknown or unsigned.
Origin = dict[str, str | None]

EXECUTED = "executed"
LOCAL_CACHE = "local-cache"
REMOTE_CACHE = "remote-cache"


def remote_origin(server: str, action_digest: object, signer: object | None) -> Origin:
    """The origin of the result stored on `server` under `action_digest` (the REAPI Action's
    digest, `hash/size`), signed by `signer` (a PublicKey) or unverified (None)."""
    return {"kind": REMOTE_CACHE, "server": server, "action": str(action_digest),
            "signed-by": None if signer is None else str(signer)}


def event_origin(status: str, entry_origin: Origin | None, worker: str = "") -> Origin:
    """The `origin` of an `action-finished` event: `status` is "executed", "cached" or "remote";
    `entry_origin` the origin stored with the action cache entry used (None: built here);
    `worker` the remote worker that executed it (`--remote-exec`), "" for a local run."""
    if status == "executed":
        return {"kind": EXECUTED, "worker": worker} if worker else {"kind": EXECUTED}
    if status == "remote" and entry_origin:
        return dict(entry_origin)
    if entry_origin and entry_origin.get("kind") == REMOTE_CACHE:
        # A local hit on an entry that was once fetched: the bytes still came from that server.
        return {"kind": LOCAL_CACHE, "fetched-from": entry_origin.get("server"),
                "action": entry_origin.get("action"), "signed-by": entry_origin.get("signed-by")}
    return {"kind": LOCAL_CACHE}


def describe(origin: Origin | None) -> str:
    """One line for `mcpp explain`."""
    if not origin:
        return "unknown (recorded before mcpp kept origins)"
    kind = origin.get("kind")
    if kind == EXECUTED:
        return f"executed remotely on {origin['worker']}" if origin.get("worker") else "executed here"
    if kind == REMOTE_CACHE:
        return f"remote cache {origin.get('server')} (action {origin.get('action')}), {_signer(origin)}"
    if origin.get("fetched-from"):
        return f"local cache (fetched earlier from remote cache {origin['fetched-from']}, {_signer(origin)})"
    return "local cache (built on this machine)"


def _signer(origin: Origin) -> str:
    key = origin.get("signed-by")
    return f"signed by {key}" if key else "unverified (no signature checked)"


class SignaturePolicy:
    """Which remote results one build accepts, by who signed them. The build's other trust
    decisions (which results are shared at all) are engine/trust/policy.py's `TrustPolicy`."""

    def __init__(self, server: str, trusted: Iterable[PublicKey] | None, warn: Callable[[str], None],
                 note: Callable[[str], None] | None = None) -> None:
        """`trusted`: the PublicKeys to require, or None to accept results unverified; `note`
        shows the once-per-build remark that nothing is verified (none: stay silent)."""
        self.server = server
        self.trusted = None if trusted is None else tuple(trusted)
        self._trusted_text = trusted_names(self.trusted)
        self.warn = warn
        self.note = note
        self._lock = threading.Lock()
        self._warned = False
        self._noted = False
        self.refused: dict[str, int] = {}  # why -> how many results this build refused
        self.refused_keys: set[str] = set()  # the key names the refused signatures claimed

    def accept(self, action_id: str, action_digest: object, result: Message) -> Origin | None:
        """The origin to record for `result` (the answer to `action_digest`), or None when it
        is refused. The first refusal of a build is a warning naming the action and why."""
        if self.trusted is None:
            with self._lock:
                first, self._noted = not self._noted, True
            if first and self.note is not None:
                self.note(f"results from remote cache at {self.server} are not verified: no trusted keys are "
                          "configured (`trusted-keys` under [remote]; see docs/remote.md)")
            return remote_origin(self.server, action_digest, None)
        from .signing import claimed_signers, verify

        verdict = verify(result, action_digest, self.trusted)
        if verdict.signer is not None:
            return remote_origin(self.server, action_digest, verdict.signer)
        self._count_refusal(verdict.reason, claimed_signers(result))
        with self._lock:
            first, self._warned = not self._warned, True
        if first:
            self.warn(f"refused the result of `{action_id}` from remote cache at {self.server} "
                      f"({verdict.reason}); the action runs locally")
        return None

    def accept_quietly(self, action_digest: object, result: Message) -> bool:
        """For header manifests: only hints of which keys to look up, so an unverified one is
        skipped without a warning (the lookups it would lead to are checked themselves); it is
        counted with the refused results, since the compile it stood for is refused with it."""
        if self.trusted is None:
            return True
        from .signing import claimed_signers, verify

        verdict = verify(result, action_digest, self.trusted)
        if verdict.signer is None:
            self._count_refusal(verdict.reason, claimed_signers(result))
        return verdict.signer is not None

    def _count_refusal(self, reason: str | None, claimed: list[str]) -> None:
        with self._lock:
            why = reason or "refused"
            self.refused[why] = self.refused.get(why, 0) + 1
            self.refused_keys.update(claimed)

    def accepts_local(self, origin: Origin | None) -> bool:
        """Whether a local action cache entry with `origin` may be used: with trusted keys, one
        copied from a remote must have been signed by a key still trusted."""
        return local_entry_accepted(origin, self._trusted_text)


def trusted_names(trusted: Iterable[PublicKey] | None) -> frozenset[str] | None:
    """The trusted keys as an origin's `signed-by` names them (None: none required)."""
    return None if trusted is None else frozenset(str(k) for k in trusted)


def local_entry_accepted(origin: Origin | None, trusted: frozenset[str] | None) -> bool:
    """Whether a local action cache entry with `origin` may be used when the keys named
    `trusted` are required (`trusted_names`): one copied from a remote must have been signed by
    a key still trusted; one built on this machine always may."""
    if trusted is None or not origin or origin.get("kind") != REMOTE_CACHE:
        return True
    return origin.get("signed-by") in trusted
