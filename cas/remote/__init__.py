"""A remote cache over the Remote Execution API v2 (gRPC): one more layer over the local stores.

One concept per module, lowest first:

- `protocol`: the REAPI/ByteStream/Status messages this client uses, declared in Python (no
  generated code) and the gRPC method paths;
- `digests`: `RemoteDigest` and the digest functions (BLAKE3 where the server offers it, else
  SHA-256), with ByteStream resource names;
- `side_index`: blake3 -> SHA-256 pairs kept in `$MCPP_HOME/remote/`, so nothing is hashed twice;
- `coalesce`: `Coalescer`, the blob reads and FindMissingBlobs of concurrent lookups as one call;
- `client`: `RemoteClient`, the gRPC conversation (capabilities, batches under the server's
  limit, ByteStream in 1 MiB chunks, the action cache);
- `store`: `RemoteStore`, the server's CAS as a `BlobStore` tied to the local store (fetch and
  verify, push what is missing);
- `actions`: an mcpp `Action` as REAPI `Command` + input-root `Directory` + `Action`, and the
  header manifests of the two-level lookup;
- `action_cache`: `RemoteActionCache` (blobs before results; manifests);
- `local_digests`: the blake3 digests of a result's outputs, carried (and signed) in the result, so
  outputs left on the server (`--remote-download toplevel|minimal`) still key their dependents;
- `signing`: ed25519 keys (`mcpp cache keygen`) and the signature a result carries: what it
  covers (`SIGNED_FIELDS`), how it travels (`execution_metadata.auxiliary_metadata`);
- `trust`: `SignaturePolicy` (which remote results a build accepts, by signature) and the *origin* recorded with
  every result (`mcpp explain`, JSON events);
- `cache`: `RemoteCache`, the engine's entry point (lazy connection, one warning and local
  building when the server fails, background uploads);
- `config`: `--remote` > `MCPP_REMOTE` > `[remote]` in `$MCPP_HOME/config.toml`.

Remote execution (`--remote-exec`, docs/remote.md "Remote execution"):

- `exec_protocol`: the Execution, long-running Operations and Bots (Remote Workers) messages;
- `exec_messages`: an mcpp `Action` as the `Command`, input root and `Action` a worker runs, with
  the platform properties BuildGrid schedules on (OS, ISA, each tool's digest);
- `execution`: `RemoteExecutor`, one action through `Execute` (FindMissingBlobs-only uploads,
  the operation stream, verified outputs), and the fall-back to local runs when the service fails;
- `worker_cas`: a worker's own cache of the server's blobs (`engine/bot/command.py` is the worker).

Importing this package (or `config`) does not import gRPC; the names below load on first use.
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "RemoteCache": "cache", "RemoteHit": "cache", "RemoteCounters": "cache",
    "RemoteClient": "client", "RemoteError": "client", "BlobMissing": "client", "ServerInfo": "client",
    "RemoteStore": "store", "RemoteCorrupt": "store",
    "RemoteActionCache": "action_cache",
    "RemoteAction": "actions", "remote_action": "actions", "manifest_action": "actions",
    "RemoteDigest": "digests", "DigestFunction": "digests", "SHA256": "digests", "BLAKE3": "digests",
    "SideIndex": "side_index",
    "RemoteSettings": "config", "RemoteConfigError": "config", "resolve_settings": "config",
    "parse_remote_url": "config",
    "SecretKey": "signing", "PublicKey": "signing", "SigningKeyError": "signing",
    "SignaturePolicy": "trust",
}


def __getattr__(name: str) -> Any:  # typed where it is defined: import it from its submodule
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mcpp.cas.remote' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = sorted(_EXPORTS)
