"""Signed descriptors: what lets a payload index be served over plain http.

Over plain http anyone on the network path can rewrite a descriptor, and with it the blake3
that is the only check on the archive it names. A signature moves the trust from the channel to
a key, as for the remote cache (cas/remote/signing.py): the index's publisher signs each
descriptor with an ed25519 secret key (`mcpp cache keygen NAME`), and mcpp accepts a descriptor
read over http only when a key listed in `[payloads] trusted-keys` (or
`MCPP_PAYLOAD_TRUSTED_KEYS`) signed exactly its bytes, at exactly its path. The archives need no
signature of their own: the signed descriptor carries their blake3 and size.

*What is signed* (`signed_text`): three lines,

    mcpp-payload-descriptor-v1
    path pkgs/<namespace>/<name>.toml
    blake3 <hex of the descriptor's bytes>

so a signed descriptor cannot be served under another package's path.

*Where it travels*: `pkgs/<namespace>/<name>.toml.sig` beside the descriptor, one signature per
line (several keys may sign, for a rotation), each the compact JSON
`{"key": NAME, "public": <base64 public key>, "sig": <base64 signature>}` of the remote cache.
Keys are compared by their bytes, never by name.
"""
from __future__ import annotations

import os
from typing import Iterable

from mcpp.cas.remote.signing import MISMATCH, UNSIGNED, UNTRUSTED, PublicKey, SecretKey, envelope, opened, signs

FORMAT = "mcpp-payload-descriptor-v1"
SUFFIX = ".sig"

__all__ = ["FORMAT", "SUFFIX", "MISMATCH", "UNSIGNED", "UNTRUSTED", "signed_text", "signature_line", "verify",
           "sign_index"]


def signed_text(rel: str, data: bytes) -> bytes:
    """The bytes a signature covers: the descriptor's path in the index and its blake3."""
    import blake3

    return f"{FORMAT}\npath {rel}\nblake3 {blake3.blake3(data).hexdigest()}\n".encode()


def signature_line(rel: str, data: bytes, key: SecretKey) -> str:
    return envelope(key, signed_text(rel, data)) + "\n"


def verify(rel: str, data: bytes, sig_text: str | None, trusted: Iterable[PublicKey]) -> tuple[PublicKey | None, str]:
    """(the trusted key that signed exactly `data` at `rel`, or None; why not: UNSIGNED,
    UNTRUSTED or MISMATCH)."""
    by_raw = {k.raw: k for k in trusted}
    reason = UNSIGNED
    for line in (sig_text or "").splitlines():
        envelope_ = opened(line)
        if envelope_ is None:
            continue  # a malformed line is no signature
        raw, sig = envelope_
        key = by_raw.get(raw)
        if key is None:
            reason = UNTRUSTED if reason == UNSIGNED else reason
            continue
        if not signs(raw, sig, signed_text(rel, data)):
            reason = MISMATCH
            continue
        return key, ""
    return None, reason


def sign_index(index_dir: str, key: SecretKey) -> list[str]:
    """Write `<descriptor>.toml.sig` beside every descriptor of the local index at `index_dir`
    (replacing an older signature); returns the descriptors signed, relative to the index."""
    from mcpp.cas.atomic import PUBLIC, write_atomic

    signed = []
    pkgs = os.path.join(index_dir, "pkgs")
    for namespace in sorted(os.listdir(pkgs)) if os.path.isdir(pkgs) else ():
        ns_dir = os.path.join(pkgs, namespace)
        if not os.path.isdir(ns_dir):
            continue
        for name in sorted(os.listdir(ns_dir)):
            if not name.endswith(".toml"):
                continue
            rel = f"pkgs/{namespace}/{name}"
            with open(os.path.join(ns_dir, name), "rb") as f:
                data = f.read()
            write_atomic(os.path.join(ns_dir, name + SUFFIX), signature_line(rel, data, key), mode=PUBLIC)
            signed.append(rel)
    return signed
