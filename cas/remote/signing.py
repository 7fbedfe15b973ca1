"""Ed25519 signatures over remote action results: who vouches for a result, and for what exactly.

A shared REAPI cache lets anyone who can write to it replace any result. A signature moves the
trust from the server to a key: the machine that built the result (CI) signs it with a secret
key, and a client accepts it only when a key it trusts signed exactly that result. A compromised
or shared server can then withhold results, but cannot forge one. (This is the Nix model:
`nix key generate-secret`, `secret-key-files`, `trusted-public-keys`.)

Key files are one line of text, `NAME:<base64>`: the secret file holds the 32-byte ed25519
seed, the public file the 32-byte public key. NAME is a label for people (`ci`,
`ci-2026`); what is trusted is the key itself.

*What is signed* is `signed_payload(action_digest, result)`, a canonical text built from the
fields of `SIGNED_FIELDS`: every field of a REAPI `ActionResult` that mcpp reads when it restores
a result, plus the digest of the `Action` the result answers (so a valid result cannot be moved
under another action's key). `tests/unit/remote/test_remote_signing.py` tampers with each field in
turn and fails when one is not covered.

*Where it travels*: inside the `ActionResult` itself, as one `google.protobuf.Any` (type URL
`SIGNATURE_TYPE_URL`) in `execution_metadata.auxiliary_metadata`, a field REAPI servers store
untouched, so no server support is needed. Its value is compact JSON: the key name, the public
key and the signature.
"""
from __future__ import annotations

import base64
import binascii
import functools
import json
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from .local_digests import claimed

if TYPE_CHECKING:  # cryptography is imported on first use (see `_private`)
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
    from google.protobuf.message import Message  # protobuf ships no types: `Any`

SIGNATURE_TYPE_URL = "type.googleapis.com/mcpp.remote.ResultSignature.v1"
# v2 covers output directories (`tree` lines), v3 the outputs' blake3 digests (`blake3` lines).
# An older signature never verifies as the current version (the first line differs), so a result
# signed before a field was covered is refused and rebuilt, never trusted for what it did not
# vouch for. Key files and the signature's envelope are unchanged.
PAYLOAD_VERSION = "mcpp-signed-result-v3"

# Why a remote result was refused (the words the build's warning uses).
UNSIGNED = "unsigned"
UNTRUSTED = "signed by an untrusted key"
MISMATCH = "signature does not match"

# Every part of a result that the client acts on, and how the payload covers it.
SIGNED_FIELDS = {
    "action_digest": "`action <hash>/<size>`: the Action the result answers",
    "output_files.path": "`output <json path> ...`, one line per output file, sorted by path",
    "output_files.digest": "`output ... <hash>/<size> ...`",
    "output_files.is_executable": "`output ... x` or `-`",
    "output_directories.path": "`tree <json path> ...`, one line per output directory, sorted by path",
    "output_directories.tree_digest": "`tree ... <hash>/<size>`: the REAPI Tree naming every file below it",
    "stdout_digest": "`stdout <hash>/<size>` (`-` when absent; `raw <len>` when only inlined)",
    "stderr_digest": "`stderr <hash>/<size>` (as stdout)",
    "exit_code": "`exit <code>`",
    "execution_metadata": "`blake3 <json path> <hash>/<size>`, one line per output file the result's "
                          "`LocalDigests` entry names (local_digests.py; `blake3 -` when it names none)",
}

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")


class SigningKeyError(ValueError):
    """A key file or key text that cannot be used; the message says what is expected."""


@dataclass(frozen=True, slots=True)
class PublicKey:
    name: str
    raw: bytes  # 32 bytes

    def __str__(self) -> str:
        return f"{self.name}:{base64.b64encode(self.raw).decode()}"


@dataclass(frozen=True, slots=True)
class SecretKey:
    name: str
    seed: bytes  # 32 bytes

    @property
    def public(self) -> PublicKey:
        return PublicKey(self.name, _public_raw(self.seed))

    def sign(self, data: bytes) -> bytes:
        return _private(self.seed).sign(data)

    def __str__(self) -> str:
        return f"{self.name}:{base64.b64encode(self.seed).decode()}"

    def __repr__(self) -> str:  # never print the seed by accident
        return f"SecretKey({self.name!r})"


# Loading a key costs about as much as a signature: a build signs or checks every result with
# the same few keys, so each is loaded once per process.
@functools.lru_cache(maxsize=8)
def _private(seed: bytes) -> Ed25519PrivateKey:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey.from_private_bytes(seed)


@functools.lru_cache(maxsize=8)
def _public_raw(seed: bytes) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return _private(seed).public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


@functools.lru_cache(maxsize=32)
def _verifier(raw: bytes) -> Ed25519PublicKey:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    return Ed25519PublicKey.from_public_bytes(raw)


def generate(name: str) -> SecretKey:
    if not _NAME.fullmatch(name):
        raise SigningKeyError(f"invalid key name `{name}`: use letters, digits, `.`, `_`, `+` or `-` (at most 64)")
    return SecretKey(name, os.urandom(32))


def _split(text: str, what: str) -> tuple[str, bytes]:
    name, sep, b64 = text.strip().partition(":")
    try:
        raw = base64.b64decode(b64, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if not sep or not _NAME.fullmatch(name) or len(raw) != 32:
        raise SigningKeyError(f"invalid {what} `{_shorten(text)}`: expected NAME:<base64 of 32 bytes> "
                        "as written by `mcpp cache keygen NAME`")
    return name, raw


def parse_public_key(text: str) -> PublicKey:
    return PublicKey(*_split(text, "public key"))


def parse_secret_key(text: str) -> SecretKey:
    name, seed = _split(text, "secret key")
    return SecretKey(name, seed)


def load_secret_key(path: str | os.PathLike[str]) -> SecretKey:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise SigningKeyError(f"cannot read signing key {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise SigningKeyError(f"signing key {path} is not a key file written by `mcpp cache keygen`") from None
    try:
        return parse_secret_key(text)
    except SigningKeyError:
        raise SigningKeyError(f"signing key {path} is not a secret key written by `mcpp cache keygen` "
                        "(expected one line NAME:<base64>)") from None


def write_key_pair(stem: str) -> tuple[str, str, PublicKey]:
    """`mcpp cache keygen NAME`: write `NAME.secret` (mode 0600, never overwritten) and
    `NAME.public`; the key's name is the last component of NAME."""
    key = generate(os.path.basename(stem))
    secret_path, public_path = f"{stem}.secret", f"{stem}.public"
    try:
        fd = os.open(secret_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise SigningKeyError(f"{secret_path} already exists; remove it first or choose another NAME") from None
    except OSError as e:
        raise SigningKeyError(f"cannot create {secret_path}: {e.strerror}") from None
    with open(fd, "w", encoding="utf-8") as f:
        f.write(f"{key}\n")
    with open(public_path, "w", encoding="utf-8") as f:
        f.write(f"{key.public}\n")
    return secret_path, public_path, key.public


# --- the signed payload ----------------------------------------------------------------------

def signed_payload(action_digest: object, result: Message) -> bytes:
    """The exact bytes a signature covers (see `SIGNED_FIELDS`). `action_digest` is a
    `RemoteDigest` (anything whose str() is `hash/size`); `result` a REAPI `ActionResult`."""
    lines = [PAYLOAD_VERSION, f"action {action_digest}"]
    for f in sorted(result.output_files, key=lambda f: f.path):
        lines.append(f"output {json.dumps(f.path)} {f.digest.hash}/{f.digest.size_bytes} "
                     f"{'x' if f.is_executable else '-'}")
    for d in sorted(result.output_directories, key=lambda d: d.path):
        lines.append(f"tree {json.dumps(d.path)} {d.tree_digest.hash}/{d.tree_digest.size_bytes}")
    for name in ("stdout", "stderr"):
        if result.HasField(f"{name}_digest"):
            d = getattr(result, f"{name}_digest")
            lines.append(f"{name} {d.hash}/{d.size_bytes}")
        elif getattr(result, f"{name}_raw"):
            # Inlined bytes without a digest: nothing a signer produces, so it can never match.
            lines.append(f"{name} raw {len(getattr(result, f'{name}_raw'))}")
        else:
            lines.append(f"{name} -")
    lines.append(f"exit {result.exit_code}")
    local = claimed(result)
    lines += [f"blake3 {json.dumps(p)} {d}" for p, d in sorted(local.items())] or ["blake3 -"]
    return ("\n".join(lines) + "\n").encode()


def envelope(key: SecretKey, message: bytes) -> str:
    """`key`'s signature of `message` as it travels (a remote result's metadata, a payload
    descriptor's `.sig` line): compact JSON of the signer's name, public key and signature."""
    return json.dumps({"key": key.name, "public": base64.b64encode(key.public.raw).decode(),
                       "sig": base64.b64encode(key.sign(message)).decode()}, separators=(",", ":"))


def opened(text: str | bytes) -> tuple[bytes, bytes] | None:
    """(public key bytes, signature) of an `envelope`, or None for a malformed one (no signature)."""
    try:
        obj = json.loads(text)
        return base64.b64decode(obj["public"], validate=True), base64.b64decode(obj["sig"], validate=True)
    except (ValueError, KeyError, TypeError, binascii.Error):
        return None


def signs(raw: bytes, sig: bytes, message: bytes) -> bool:
    """Whether `sig` is the signature of `message` by the public key `raw`."""
    from cryptography.exceptions import InvalidSignature

    try:
        _verifier(raw).verify(sig, message)
    except (InvalidSignature, ValueError):
        return False
    return True


def sign(result: Message, action_digest: object, key: SecretKey) -> None:
    """Attach `key`'s signature of `result` (for `action_digest`) to `result`, in place."""
    value = envelope(key, signed_payload(action_digest, result)).encode()
    result.execution_metadata.auxiliary_metadata.add(type_url=SIGNATURE_TYPE_URL, value=value)


@dataclass(frozen=True, slots=True)
class Verdict:
    signer: PublicKey | None  # the trusted key that signed exactly this result
    reason: str | None  # why not, when `signer` is None: UNSIGNED, UNTRUSTED or MISMATCH


def verify(result: Message, action_digest: object, trusted: Iterable[PublicKey]) -> Verdict:
    """Whether a trusted key signed exactly `result` for `action_digest`.

    Keys are compared by their bytes, never by name: a result signed by another key that is
    also called `ci` is "signed by an untrusted key"."""
    by_raw = {k.raw: k for k in trusted}
    signatures = [a for a in result.execution_metadata.auxiliary_metadata if a.type_url == SIGNATURE_TYPE_URL]
    if not signatures:
        return Verdict(None, UNSIGNED)
    payload = None
    reason = UNTRUSTED
    for a in signatures:
        envelope_ = opened(a.value)
        if envelope_ is None:
            continue  # a malformed signature is no signature
        raw, sig = envelope_
        key = by_raw.get(raw)
        if key is None:
            continue
        if payload is None:
            payload = signed_payload(action_digest, result)
        if not signs(raw, sig, payload):
            reason = MISMATCH
            continue
        return Verdict(key, None)
    return Verdict(None, reason)


def claimed_signers(result: Message) -> list[str]:
    """The key names the signatures on `result` claim, for a report of what was refused. A name
    is whatever the writer put there (nothing proves it): only `[A-Za-z0-9._-]`, at most 40
    characters, are kept, so that no server can put text of its choosing in a build's output."""
    names = []
    for a in result.execution_metadata.auxiliary_metadata:
        if a.type_url != SIGNATURE_TYPE_URL:
            continue
        try:
            name = json.loads(a.value).get("key")
        except (ValueError, AttributeError):
            continue
        if isinstance(name, str):
            clean = re.sub(r"[^A-Za-z0-9._-]", "", name)[:40]
            if clean:
                names.append(clean)
    return names


def _shorten(text: str) -> str:
    text = text.strip()
    return text if len(text) <= 60 else text[:57] + "..."
