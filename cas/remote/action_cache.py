"""`RemoteActionCache`: the server's action cache, and the header manifests kept in it.

Two rules live here so no caller can break them:

- *Blobs before results.* `record` uploads every blob an `ActionResult` names (and the Action
  and Command messages) and only then calls `UpdateActionResult`; a reader can never see a
  result whose outputs the server does not hold because of us.
- *Manifests are results too.* The header sets of a compile (see `actions.py`) are stored as the
  one output of a synthetic Action. Updating one is read-merge-write without a lock: two
  machines recording different header sets at the same moment may lose one set, which costs one
  remote miss, never a wrong hit (every set is only a candidate whose full key is then looked up).
  With a signing key, manifests are signed like any result; with trusted keys, an unsigned one
  is ignored (it could only point lookups at other keys, each of which is checked itself).
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Iterable

from ..digest import Digest
from .actions import (MANIFEST_SETS, RemoteAction, decode_manifest, encode_manifest, manifest_action,
                      manifest_blob_of, manifest_result, merge_manifest)
from .client import RemoteClient
from .digests import RemoteDigest
from .signing import SecretKey, sign
from .store import RemoteStore
from .trust import SignaturePolicy

if TYPE_CHECKING:
    # protobuf ships no types, and the REAPI classes are built at run time (protocol.py): to
    # the type checker a message is `Any`; the name says which kind of value it is.
    from google.protobuf.message import Message


class RemoteActionCache:
    def __init__(self, client: RemoteClient, store: RemoteStore, sign_key: SecretKey | None = None,
                 trust: SignaturePolicy | None = None) -> None:
        self.client = client
        self.store = store
        self.sign_key = sign_key
        self.trust = trust
        # Manifest blobs by digest: many compiles of one package share a header set, so the
        # same small blob would otherwise be downloaded once per compile.
        self._manifests: dict[RemoteDigest, list[tuple[str, ...]]] = {}
        self._lock = threading.Lock()

    # --- results --------------------------------------------------------------------------

    def get(self, action: RemoteAction, inline: Iterable[str] = ()) -> Message | None:
        """The `ActionResult` cached for `action`, or None."""
        return self.client.get_action_result(action.digest, inline)

    def record(self, action: RemoteAction, result: Message, blobs: Iterable[Digest],
               headers: tuple[RemoteAction, tuple[str, ...]] | None = None) -> None:
        """Upload `blobs` (the local digests the result names) and the action's own messages,
        then the result. With `headers` = (first-level action, header set), also record the set
        in that action's manifest: its blob goes in the same upload, its result last."""
        extra = dict(action.blobs)
        manifest = self._merged_manifest(*headers) if headers else None
        if manifest is not None:
            synthetic, blob, data, _ = manifest
            extra[blob] = data
            extra.update(synthetic.blobs)
        self.store.push(blobs, extra)
        self.client.update_action_result(action.digest, result)
        if manifest is not None:
            self._put_manifest(*manifest)

    # --- manifests ------------------------------------------------------------------------

    def get_manifest(self, first_level: RemoteAction) -> list[tuple[str, ...]]:
        """The header sets recorded for a compile's first-level action, most recent first."""
        synthetic = manifest_action(first_level, self.client.digest_function)
        result = self.client.get_action_result(synthetic.digest)
        if result is None or result.exit_code != 0:
            return []
        if self.trust is not None and not self.trust.accept_quietly(synthetic.digest, result):
            return []
        blob = manifest_blob_of(result, self.client.digest_function)
        if blob is None:
            return []
        with self._lock:
            cached = self._manifests.get(blob)
        if cached is not None:
            return cached
        data = self.client.download([blob])[blob]
        if self.client.digest_function.mismatch(blob, data):
            return []  # a corrupt manifest only costs this lookup
        sets = decode_manifest(data)
        with self._lock:
            self._manifests[blob] = sets
        return sets

    def add_manifest(self, first_level: RemoteAction, discovered: tuple[str, ...]) -> bool:
        """Record `discovered` as the most recent header set; False when it already was."""
        manifest = self._merged_manifest(first_level, discovered)
        if manifest is None:
            return False
        synthetic, blob, data, _ = manifest
        self.store.push((), {blob: data, **synthetic.blobs})
        self._put_manifest(*manifest)
        return True

    def _merged_manifest(self, first_level: RemoteAction, discovered: tuple[str, ...]
                         ) -> tuple[RemoteAction, RemoteDigest, bytes, list[tuple[str, ...]]] | None:
        """(synthetic action, blob digest, blob, sets) of the manifest with `discovered` first,
        or None when it already has that set first."""
        sets = self.get_manifest(first_level)
        merged = merge_manifest(sets, discovered)
        if merged == sets[:MANIFEST_SETS]:
            return None
        fn = self.client.digest_function
        data = encode_manifest(merged)
        return manifest_action(first_level, fn), fn.of_bytes(data), data, merged

    def _put_manifest(self, synthetic: RemoteAction, blob: RemoteDigest, data: bytes,
                      sets: list[tuple[str, ...]]) -> None:
        result = manifest_result(blob)
        if self.sign_key is not None:
            sign(result, synthetic.digest, self.sign_key)
        self.client.update_action_result(synthetic.digest, result)
        with self._lock:
            self._manifests[blob] = sets
