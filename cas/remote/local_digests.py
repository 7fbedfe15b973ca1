"""The local (blake3) digests of a result's output files, carried inside the `ActionResult`.

Why: local keys name inputs by blake3 (`cas/digest.py`), and a server that speaks only SHA-256
(BuildGrid) names outputs by SHA-256. A reader that leaves an output on the server
(`--remote-download toplevel|minimal`) still has to key the actions that read it, without its
bytes. The writer hashed those bytes both ways, so it says both: one `google.protobuf.Any`
with type URL `LOCAL_DIGESTS_TYPE_URL` in `execution_metadata.auxiliary_metadata`, whose
value is compact JSON `{"<output path>": "<blake3 hex>/<size>"}` (paths as in `output_files`).

The signed payload covers these digests (`signing.py`, the `blake3` lines), so a reader that
trusts only signed results keys its dependents on digests a trusted writer vouched for; and
an output fetched later is verified against both its SHA-256 and this blake3 before it is
used (`RemoteCache.fetch_outputs`). A result with none, or with a malformed or repeated entry,
claims nothing: its outputs are downloaded as with `--remote-download all`.
"""
from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Mapping

from ..digest import Digest

if TYPE_CHECKING:
    from google.protobuf.message import Message  # protobuf ships no types: `Any`

LOCAL_DIGESTS_TYPE_URL = "type.googleapis.com/mcpp.remote.LocalDigests.v1"
_DIGEST = re.compile(r"([0-9a-f]{64})/(0|[1-9][0-9]{0,15})")


def attach(result: Message, digests: Mapping[str, Digest]) -> None:
    """Put `digests` (output path, as `output_files` names it -> blake3) into `result`."""
    if digests:
        value = json.dumps({p: str(d) for p, d in sorted(digests.items())}, separators=(",", ":")).encode()
        result.execution_metadata.auxiliary_metadata.add(type_url=LOCAL_DIGESTS_TYPE_URL, value=value)


def claimed(result: Message) -> dict[str, Digest]:
    """The blake3 digests `result` claims for its output files; {} when it claims none or its
    claim is malformed (not JSON of well-formed digests, or more than one entry)."""
    found = [a.value for a in result.execution_metadata.auxiliary_metadata if a.type_url == LOCAL_DIGESTS_TYPE_URL]
    if len(found) != 1:
        return {}
    try:
        obj = json.loads(found[0])
    except ValueError:
        return {}
    if not isinstance(obj, dict):
        return {}
    out: dict[str, Digest] = {}
    for path, text in obj.items():
        m = _DIGEST.fullmatch(text) if isinstance(text, str) else None
        if m is None:
            return {}
        out[path] = Digest(m.group(1), int(m.group(2)))
    return out
