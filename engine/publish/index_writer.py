"""`mcpp publish --index DIR`: add a packaged release to a directory index.

The index is the payload index's format (docs/payloads.md): `index.toml`, one descriptor per
package at `pkgs/<namespace>/<name>.toml`, archives beside them. Publishing copies the archive
to `archives/<name>-<version>.tar.zst` and appends

    [[release]]
    version = "1.2.0"
    source = { url = "archives/greet-1.2.0.tar.zst", blake3 = "<hex>", size = 1234, strip = 1, unpacked-size = 5678 }

to the descriptor (created with `[package] name, namespace, description` when the package is
new; `index.toml` with `[index] name, format = 1` when the directory is). The descriptor that is
there is read with the payload index's own reader first (engine/payloads/index.py), so a
damaged index is reported rather than appended to; the release is appended to its text, so what
is there stays byte for byte, and the result is parsed again before it is written.

Every file is written to a temporary name and renamed, in an order where each step leaves a
usable index: `index.toml`, then the archive, then the descriptor that names it. The directory
is locked while it is written, so two publishes into one index do not lose a release. A version
already published is refused; so is an archive name already holding other bytes (another
namespace's package of the same name and version), which is never overwritten.
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import shutil

from mcpp.cas.atomic import PUBLIC, atomic_file, write_atomic

from ..core.errors import McppError, display_path
from ..payloads.errors import PayloadError
from ..payloads.descriptor import parse_descriptor
from ..payloads.index import Index
from ..payloads.signature import SUFFIX as SIGNATURE_SUFFIX
from .package import Packaged

# A namespace and a name become directory and file names of the index.
_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def _part(value: str, what: str) -> str:
    if not _PART.match(value) or ".." in value:
        raise McppError(f"cannot publish: {what} `{value}` is not a plain name (letters, digits, `-`, `_`, `.`)")
    return value


def publish(packaged: Packaged, index_dir: str) -> tuple[str, list[str]]:
    """Add `packaged` to the directory index `index_dir`; returns (the descriptor written,
    warnings to show)."""
    ns, name = _part(packaged.namespace, "namespace"), _part(packaged.name, "package name")
    version = _part(packaged.version, "version")
    index_dir = os.path.abspath(index_dir)
    if os.path.exists(index_dir) and not os.path.isdir(index_dir):
        raise McppError(f"--index {display_path(index_dir)} is not a directory")
    os.makedirs(index_dir, exist_ok=True)
    fd = os.open(index_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return _publish_locked(packaged, index_dir, ns, name, version)
    finally:
        os.close(fd)


def _publish_locked(packaged: Packaged, index_dir: str, ns: str, name: str, version: str) -> tuple[str, list[str]]:
    index_toml = os.path.join(index_dir, "index.toml")
    if not os.path.exists(index_toml):
        if any(not n.startswith(".") for n in os.listdir(index_dir)):
            raise McppError(f"--index {display_path(index_dir)} is not an index (no index.toml) and not empty; "
                            f"publish into an index or into a new directory")
        write_atomic(index_toml, f'[index]\nname = "{os.path.basename(index_dir)}"\nformat = 1\n', mode=PUBLIC)
    try:
        existing = Index(index_dir).descriptor(ns, name)
    except PayloadError as e:
        raise McppError(f"cannot publish into {display_path(index_dir)}: {e.message}") from None
    rel_descriptor = f"pkgs/{ns}/{name}.toml"
    descriptor = os.path.join(index_dir, rel_descriptor)
    if existing is not None and any(r.version == version for r in existing.releases):
        raise McppError(f"{ns}.{name} {version} is already published in {display_path(index_dir)} "
                        f"({rel_descriptor}); a published version never changes",
                        notes=["help: raise `version` in [package] and publish again"])
    rel_archive = f"archives/{name}-{version}.tar.zst"
    text = _descriptor_text(descriptor if existing is not None else None, packaged, ns, name, version, rel_archive)
    _copy_archive(packaged, os.path.join(index_dir, rel_archive), rel_archive)
    os.makedirs(os.path.dirname(descriptor), exist_ok=True)
    write_atomic(descriptor, text, mode=PUBLIC)
    warnings = []
    if os.path.exists(descriptor + SIGNATURE_SUFFIX):
        warnings.append(f"{rel_descriptor} changed, so its signature {rel_descriptor}{SIGNATURE_SUFFIX} no longer "
                        f"matches: sign the index again (`mcpp payload sign --key NAME.secret "
                        f"{display_path(index_dir)}`)")
    return descriptor, warnings


def _same_bytes(a: str, b: str) -> bool:
    if os.path.getsize(a) != os.path.getsize(b):
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(1 << 20), fb.read(1 << 20)
            if x != y:
                return False
            if not x:
                return True


def _copy_archive(packaged: Packaged, dest: str, rel: str) -> None:
    if os.path.lexists(dest):
        if os.path.isfile(dest) and not os.path.islink(dest) and _same_bytes(dest, packaged.path):
            return
        raise McppError(f"cannot publish: {rel} already exists in the index with other contents (a release of "
                        f"another package of the same name?); it is never overwritten")
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with atomic_file(dest, mode=PUBLIC) as out, open(packaged.path, "rb") as src:
        shutil.copyfileobj(src, out, 1 << 20)


def _quoted(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string


def _descriptor_text(path: str | None, packaged: Packaged, ns: str, name: str, version: str, url: str) -> str:
    """The descriptor with the release appended as text (what is there stays byte for byte),
    checked by the payload index's parser before it is written."""
    if path is None:
        text = (f"[package]\nname = {_quoted(name)}\nnamespace = {_quoted(ns)}\n"
                f"description = {_quoted(packaged.description)}\n")
    else:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        text = text if text.endswith("\n") else text + "\n"
    text += (f"\n[[release]]\nversion = {_quoted(version)}\n"
             f"source = {{ url = {_quoted(url)}, blake3 = {_quoted(packaged.blake3)}, size = {packaged.size}, "
             f"strip = 1, unpacked-size = {packaged.unpacked_size} }}\n")
    try:
        parsed = parse_descriptor(text, path or f"pkgs/{ns}/{name}.toml", ns, name)
    except PayloadError as e:
        raise McppError(f"cannot publish: the descriptor with the new release is refused: {e.message}") from None
    if not any(r.version == version for r in parsed.releases):
        raise McppError(f"cannot publish: appending a [[release]] to {path} does not add one (is `release` written "
                        f"as an inline array?); nothing was written")
    return text
