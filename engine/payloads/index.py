"""Payload indexes: where descriptors and archives are read from.

An index is a directory, a `file://` URL or an `http(s)://` URL holding `index.toml` and one
descriptor per package, `pkgs/<namespace>/<name>.toml` (docs/payloads.md). The indexes a build
consults are, in order: `MCPP_PAYLOAD_INDEX` (comma-separated), `[payloads] index = [...]` in
`$MCPP_HOME/config.toml`, then the index shipped with mcpp (it adopts installations the built-in
rule packages need). The first index that describes a package is the one used for it.

Nothing is read before a payload is needed: a build that declares none never contacts an index.
A missing descriptor (a 404, a missing file) means "not in this index"; any other failure is
one error naming the URL, since a half-reachable index would make the environment depend on
which server answered.

The channel decides what is believed. A directory, a `file://` URL and `https://` are trusted
as they are. Plain `http://` is not (anyone on the path could rewrite a descriptor and the
archive digest it carries; a loopback host is no exception): such an index is refused unless
every descriptor read from it is signed by a key of `[payloads] trusted-keys` /
`MCPP_PAYLOAD_TRUSTED_KEYS` (signature.py), or the user accepts it unverified with
`MCPP_PAYLOAD_INDEX_INSECURE=1`, which is warned about every time it is consulted.
"""
from __future__ import annotations

import os
import stat
import time
import tomllib
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, Callable, Mapping

import blake3

from mcpp import starlark_rules
from mcpp.cas.switch import SPELLINGS, parse_switch

from ..core.config_file import ConfigError, ConfigFile
from .descriptor import Descriptor, parse_descriptor
from .errors import PayloadError

if TYPE_CHECKING:
    from ..core.settings import Settings
    from mcpp.cas.remote.signing import PublicKey

# Beside the engine's Starlark library, and shipped with it as package data (pyproject.toml).
SHIPPED = os.path.join(os.path.dirname(os.path.abspath(starlark_rules.__file__)), "payload-index")
ENV = "MCPP_PAYLOAD_INDEX"
KEYS_ENV = "MCPP_PAYLOAD_TRUSTED_KEYS"
INSECURE_ENV = "MCPP_PAYLOAD_INDEX_INSECURE"
TIMEOUT_S = 30
MAX_DOCUMENT = 16 << 20  # an index.toml, a descriptor or its signatures: text far smaller


@dataclass(frozen=True)
class Trust:
    """What an index read over plain http must show: a signature by one of `keys` (None: none
    configured), unless `insecure`; `warn` says so when an index is accepted unverified."""
    keys: tuple[PublicKey, ...] | None = None
    insecure: bool = False
    warn: Callable[[str], None] | None = None


class NotFound(Exception):
    pass


def fetch(url: str) -> bytes:
    """The bytes at `url` (a path, `file://` or `http(s)://`): an `index.toml`, a descriptor or
    its signatures; `NotFound` when there is none. These are small texts, so what is read is
    bounded, in bytes (`MAX_DOCUMENT`) and in time (`TIMEOUT_S` for the whole document, not per
    read): a server that answers without end, or a byte at a time, is refused, not waited on."""
    deadline = time.monotonic() + TIMEOUT_S
    out = bytearray()
    with open_url(url) as r:
        read = getattr(r, "read1", r.read)  # what has arrived, so the deadline is looked at between reads
        try:
            while chunk := read(min(1 << 16, MAX_DOCUMENT + 1 - len(out))):
                out += chunk
                if len(out) > MAX_DOCUMENT:
                    raise PayloadError(f"payload index: {url}: larger than {MAX_DOCUMENT} bytes, which no index "
                                       f"file or descriptor is; nothing of it was used")
                if time.monotonic() > deadline:
                    raise PayloadError(f"payload index unreachable: {url}: not received within {TIMEOUT_S}s")
        except stream_errors(url) as e:
            raise read_failed(url, e) from None
    return bytes(out)


def open_url(url: str) -> BinaryIO:
    """A stream of the bytes at `url`, for reading without holding them all (an archive);
    `NotFound` when there is none. A failure while reading it is `read_failed(url, e)` for
    the exceptions `stream_errors(url)` names."""
    scheme = urllib.parse.urlsplit(url).scheme
    if scheme in ("http", "https"):
        # Imported here: the HTTP client (http.client, ssl, email) would add to every build's
        # start-up, and only an index on a server needs it.
        from http.client import HTTPException
        from urllib.error import HTTPError, URLError
        from urllib.request import urlopen

        try:
            return urlopen(url, timeout=TIMEOUT_S)
        except HTTPError as e:
            if e.code in (404, 410):
                raise NotFound(url) from None
            raise PayloadError(f"payload index: {url}: HTTP {e.code} {e.reason}") from None
        except (URLError, OSError, HTTPException) as e:
            raise read_failed(url, e) from None
    path = urllib.parse.unquote(urllib.parse.urlsplit(url).path) if scheme == "file" else url
    try:
        # Non-blocking, so that a fifo or a terminal is refused below instead of waited on.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        raise NotFound(url) from None
    except OSError as e:
        raise PayloadError(f"payload index: {url}: {e.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise PayloadError(f"payload index: {url}: not a regular file (a device, fifo or directory is never "
                           f"part of an index)")
    return open(fd, "rb")


def stream_errors(url: str) -> tuple[type[BaseException], ...]:
    """What reading an `open_url` stream raises when the transfer fails."""
    if urllib.parse.urlsplit(url).scheme in ("http", "https"):
        from http.client import HTTPException

        return OSError, HTTPException
    return (OSError,)


def read_failed(url: str, e: BaseException) -> PayloadError:
    if urllib.parse.urlsplit(url).scheme not in ("http", "https") and isinstance(e, OSError):
        return PayloadError(f"payload index: {url}: {e.strerror}")
    reason = getattr(e, "reason", None) or e.__class__.__name__
    return PayloadError(f"payload index unreachable: {url}: {reason}")


def is_url(location: str) -> bool:
    return urllib.parse.urlsplit(location).scheme in ("http", "https", "file")


class Index:
    """One index; its `index.toml` is read (and checked) the first time it is consulted."""

    def __init__(self, location: str, trust: Trust | None = None, owner: str | None = None):
        self.location = location.rstrip("/") if is_url(location) else os.path.abspath(location)
        self.trust = trust or Trust()
        # The package whose manifest ships this index (`[payloads] index`), None for a configured
        # one. A package's index is confined (`url`, `_confine`) and what it installs is stored
        # apart (`origin`), so it can neither reach into this machine nor stand in for a payload
        # of a configured index.
        self.owner = owner
        self._origins: dict[tuple[str, str], str] = {}
        self.verify = False  # descriptors must carry a trusted signature (plain http)
        self._checked = False
        self.name = ""
        self._descriptors: dict[tuple[str, str], Descriptor | None] = {}
        self.consulted: list[str] = []  # every location read, found or not: what resolution read

    def descriptors(self) -> list[Descriptor]:
        """The descriptors read so far."""
        return [d for d in self._descriptors.values() if d is not None]

    def _fetch(self, where: str) -> bytes:
        self.consulted.append(where)
        return fetch(where)

    def url(self, rel: str) -> str:
        """`rel` resolved against the index (an absolute URL stays as written). An index on a
        server names nothing on this machine: a `file://` URL (or a path) from it is refused,
        so a remote descriptor cannot make mcpp read a local file or device as an archive."""
        local = not is_url(rel) or urllib.parse.urlsplit(rel).scheme == "file"
        if self.owner is not None and local and (is_url(rel) or rel.startswith("/") or ".." in rel.split("/")):
            raise PayloadError(f"the payload index of package `{self.owner}` ({self.location}) names `{rel}`, "
                               f"outside the index; a package's own index may name only its own files or "
                               f"http(s) URLs")
        if local and (is_url(rel) or rel.startswith("/")) and self._remote():
            raise PayloadError(f"payload index {self.location} names `{rel}`, a file on this machine; an index on "
                               f"a server may name only its own files or other http(s) URLs")
        if is_url(rel) or rel.startswith("/"):
            return rel
        return f"{self.location}/{rel}" if is_url(self.location) else os.path.join(self.location, rel)

    def _remote(self) -> bool:
        return urllib.parse.urlsplit(self.location).scheme in ("http", "https")

    def local_path(self, rel: str) -> str | None:
        """A path on this machine for `rel` when the index is local (a `dir` source must be)."""
        target = self.url(rel)
        if urllib.parse.urlsplit(target).scheme == "file":
            return urllib.parse.unquote(urllib.parse.urlsplit(target).path)
        return None if is_url(target) else target

    def _check(self) -> None:
        if self._checked:
            return
        if urllib.parse.urlsplit(self.location).scheme == "http":
            self._admit_plain_http()
        where = self.url("index.toml")
        try:
            doc = tomllib.loads(self._fetch(where).decode())
        except NotFound:
            raise PayloadError(f"payload index {self.location}: no index.toml at {where}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise PayloadError(f"payload index {where}: not valid TOML ({e})") from None
        table = doc.get("index")
        if not isinstance(table, dict) or table.get("format") != 1:
            raise PayloadError(f"payload index {where}: expected `[index]` with `format = 1`")
        self.name = str(table.get("name", ""))
        self._checked = True

    def _admit_plain_http(self) -> None:
        """Refuse this plain-http index, or say how it is accepted (see the module's docstring)."""
        if self.trust.insecure:
            if self.trust.warn is not None:
                self.trust.warn(f"payload index {self.location} is plain http and {INSECURE_ENV}=1 accepts it "
                                f"unverified: anyone on the network path can change what it installs")
            return
        if not self.trust.keys:
            raise PayloadError(
                f"payload index {self.location} is plain http, which is refused: anyone on the network path "
                f"could rewrite its descriptors and the archive digests they carry",
                notes=[f"help: serve it over https://; or sign its descriptors (`mcpp payload sign --key "
                       f"NAME.secret INDEX_DIR`) and trust that key in `[payloads] trusted-keys` or {KEYS_ENV}; "
                       f"or set {INSECURE_ENV}=1 to accept it unverified"])
        self.verify = True

    def descriptor(self, namespace: str, name: str) -> Descriptor | None:
        ident = (namespace, name)
        if ident not in self._descriptors:
            self._check()
            rel = f"pkgs/{namespace}/{name}.toml"
            where = self.url(rel)
            try:
                data = self._fetch(where)
                text = data.decode()
            except NotFound:
                self._descriptors[ident] = None
            except UnicodeDecodeError:
                raise PayloadError(f"payload descriptor {where}: not UTF-8 text") from None
            else:
                if self.verify:
                    self._verify(rel, where, data)
                desc = parse_descriptor(text, where, namespace, name)
                if self.owner is not None:
                    self._confine(desc)
                    self._origins[ident] = "pkg-" + blake3.blake3(
                        self.location.encode() + b"\0" + data).hexdigest()[:32]
                self._descriptors[ident] = desc
        return self._descriptors[ident]

    def origin(self, namespace: str, name: str) -> str:
        """What a payload of this index is stored apart under ("" for a configured index): a
        package's index installs into `<version>@pkg-<digest of the index and the descriptor>`,
        a name no release of any index can spell (`@` is not part of a version), so a payload
        installed from it is never found in place of one of the configured indexes."""
        return self._origins.get((namespace, name), "")

    def _confine(self, desc: Descriptor) -> None:
        """A package's own index installs what it ships or downloads; it adopts nothing of this
        machine (`system`), and its archives are this index's files or http(s) URLs (`url`)."""
        for release in desc.releases:
            for platform, source in release.sources.items():
                if source.kind == "system":
                    raise PayloadError(
                        f"payload descriptor {desc.location}: release `{release.version}`, `{platform}` adopts "
                        f"`{source.system}` of this machine (`system`), which the payload index of package "
                        f"`{self.owner}` may not do: a package's own index installs only archives and "
                        f"directories it ships or names",
                        notes=["help: an installation of this machine is adopted through an index the user "
                               "configures (MCPP_PAYLOAD_INDEX or `[payloads] index` in config.toml)"])
                if source.kind == "archive":
                    self.url(source.url)

    def _verify(self, rel: str, where: str, data: bytes) -> None:
        from . import signature

        try:
            sig_text = fetch(where + signature.SUFFIX).decode(errors="replace")
        except NotFound:
            sig_text = None
        signer, why = signature.verify(rel, data, sig_text, self.trust.keys or ())
        if signer is None:
            detail = {signature.MISMATCH: " (the descriptor changed after it was signed, or the download was "
                                          "altered)",
                      signature.UNSIGNED: f" (no {where + signature.SUFFIX})"}.get(why, "")
            raise PayloadError(f"payload descriptor {where} is refused: {why}{detail}; a plain-http index is "
                               f"believed only for descriptors a trusted key signed",
                               notes=["help: sign the index with a key in `[payloads] trusted-keys` "
                                      "(`mcpp payload sign`), or serve it over https://"])


def _table(config: ConfigFile) -> dict:
    """The `[payloads]` table of config.toml ({} when there is none)."""
    try:
        return config.table("payloads")
    except ConfigError as e:
        raise PayloadError(e.message) from None


def configured(home_root: str, environ: Mapping[str, str], config: ConfigFile) -> list[str]:
    """The index locations in search order (the shipped index last): `MCPP_PAYLOAD_INDEX` in
    `environ`, then `[payloads] index` of `config` (relative paths: to `home_root`)."""
    out = [p.strip() for p in environ.get(ENV, "").split(",") if p.strip()]
    listed = _table(config).get("index", [])
    if isinstance(listed, str):
        listed = [listed]
    if not (isinstance(listed, list) and all(isinstance(x, str) for x in listed)):
        raise PayloadError(f"{config.path}: `[payloads] index` must be a list of directories or URLs")
    out += [x if is_url(x) or os.path.isabs(x) else os.path.join(home_root, x) for x in listed]
    out.append(SHIPPED)
    return out


def trust(environ: Mapping[str, str], config: ConfigFile, warn=None) -> Trust:
    """The keys a plain-http index must be signed with, and whether it is accepted unverified."""
    from mcpp.cas.remote.signing import SigningKeyError, parse_public_key

    insecure = parse_switch(environ.get(INSECURE_ENV, ""))
    if insecure is None:
        raise PayloadError(f"{INSECURE_ENV}={environ[INSECURE_ENV]!r}: expected {SPELLINGS}")
    if environ.get(KEYS_ENV, "").strip():
        texts, origin = [t for t in environ[KEYS_ENV].split(",") if t.strip()], KEYS_ENV
    else:
        origin = f"{config.path}: `[payloads] trusted-keys`"
        listed = _table(config).get("trusted-keys")
        if listed is None:
            return Trust(None, insecure, warn)
        if not (isinstance(listed, list) and all(isinstance(t, str) for t in listed)):
            raise PayloadError(f"{origin} must be a list of public keys")
        texts = listed
    try:
        keys = tuple(parse_public_key(t) for t in texts)
    except SigningKeyError as e:
        raise PayloadError(f"{origin}: {e}") from None
    return Trust(keys, insecure, warn)


def open_indexes(settings: Settings, warn=None) -> IndexSet:
    """The indexes of one command, as its settings configure them, with the trust they are read under."""
    return IndexSet(configured(str(settings.home.root), settings.env, settings.config),
                    trust(settings.env, settings.config, warn))


class IndexSet:
    """The indexes of one command, consulted in order, each at most once per package."""

    def __init__(self, locations: list[str], trust: Trust | None = None):
        self.trust = trust or Trust()
        self.indexes = [Index(loc, self.trust) for loc in dict.fromkeys(locations)]

    def find(self, namespace: str, name: str) -> tuple[Index, Descriptor] | None:
        for index in self.indexes:
            d = index.descriptor(namespace, name)
            if d is not None:
                return index, d
        return None

    def describe(self) -> str:
        return ", ".join(i.location for i in self.indexes)

    def consulted(self) -> tuple[list[str], bool]:
        return consulted_files(self.indexes)


def consulted_files(indexes: list[Index]) -> tuple[list[str], bool]:
    """(the local files resolution read from `indexes`, found or not; whether it read anything
    that is not a local file, which no stat can show unchanged)."""
    files, elsewhere = [], False
    for index in indexes:
        for where in index.consulted:
            scheme = urllib.parse.urlsplit(where).scheme
            if scheme == "file":
                files.append(urllib.parse.unquote(urllib.parse.urlsplit(where).path))
            elif is_url(where):
                elsewhere = True
            else:
                files.append(where)
    return files, elsewhere
