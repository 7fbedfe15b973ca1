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
"""
from __future__ import annotations

import os
import tomllib
import urllib.parse
from typing import Mapping

from mcpp import starlark_rules

from .descriptor import Descriptor, parse_descriptor
from .errors import PayloadError

# Beside the engine's Starlark library, and shipped with it as package data (pyproject.toml).
SHIPPED = os.path.join(os.path.dirname(os.path.abspath(starlark_rules.__file__)), "payload-index")
CONFIG_FILE = "config.toml"
ENV = "MCPP_PAYLOAD_INDEX"
TIMEOUT_S = 30


class NotFound(Exception):
    pass


def fetch(url: str) -> bytes:
    """The bytes at `url` (a path, `file://` or `http(s)://`); `NotFound` when there is none."""
    scheme = urllib.parse.urlsplit(url).scheme
    if scheme in ("http", "https"):
        # Imported here: the HTTP client (http.client, ssl, email) costs every build 13 ms of
        # start-up, and only an index on a server needs it.
        from http.client import HTTPException
        from urllib.error import HTTPError, URLError
        from urllib.request import urlopen

        try:
            with urlopen(url, timeout=TIMEOUT_S) as r:
                return r.read()
        except HTTPError as e:
            if e.code in (404, 410):
                raise NotFound(url) from None
            raise PayloadError(f"payload index: {url}: HTTP {e.code} {e.reason}") from None
        except (URLError, OSError, HTTPException) as e:
            reason = getattr(e, "reason", None) or e.__class__.__name__
            raise PayloadError(f"payload index unreachable: {url}: {reason}") from None
    path = urllib.parse.unquote(urllib.parse.urlsplit(url).path) if scheme == "file" else url
    try:
        with open(path, "rb") as f:
            return f.read()
    except (FileNotFoundError, NotADirectoryError):
        raise NotFound(url) from None
    except OSError as e:
        raise PayloadError(f"payload index: {url}: {e.strerror}") from None


def is_url(location: str) -> bool:
    return urllib.parse.urlsplit(location).scheme in ("http", "https", "file")


class Index:
    """One index; its `index.toml` is read (and checked) the first time it is consulted."""

    def __init__(self, location: str):
        self.location = location.rstrip("/") if is_url(location) else os.path.abspath(location)
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
        """`rel` resolved against the index (an absolute URL stays as written)."""
        if is_url(rel) or rel.startswith("/"):
            return rel
        return f"{self.location}/{rel}" if is_url(self.location) else os.path.join(self.location, rel)

    def local_path(self, rel: str) -> str | None:
        """A path on this machine for `rel` when the index is local (a `dir` source must be)."""
        target = self.url(rel)
        if urllib.parse.urlsplit(target).scheme == "file":
            return urllib.parse.unquote(urllib.parse.urlsplit(target).path)
        return None if is_url(target) else target

    def _check(self) -> None:
        if self._checked:
            return
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

    def descriptor(self, namespace: str, name: str) -> Descriptor | None:
        ident = (namespace, name)
        if ident not in self._descriptors:
            self._check()
            where = self.url(f"pkgs/{namespace}/{name}.toml")
            try:
                text = self._fetch(where).decode()
            except NotFound:
                self._descriptors[ident] = None
            except UnicodeDecodeError:
                raise PayloadError(f"payload descriptor {where}: not UTF-8 text") from None
            else:
                self._descriptors[ident] = parse_descriptor(text, where, namespace, name)
        return self._descriptors[ident]


def configured(home_root: str, environ: Mapping[str, str] | None = None) -> list[str]:
    """The index locations in search order (the shipped index last)."""
    env = os.environ if environ is None else environ
    out = [p.strip() for p in env.get(ENV, "").split(",") if p.strip()]
    path = os.path.join(home_root, CONFIG_FILE)
    try:
        with open(path, "rb") as f:
            table = tomllib.load(f).get("payloads", {})
    except FileNotFoundError:
        table = {}
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise PayloadError(f"{path}: cannot be read ({e})") from None
    listed = table.get("index", []) if isinstance(table, dict) else []
    if isinstance(listed, str):
        listed = [listed]
    if not (isinstance(listed, list) and all(isinstance(x, str) for x in listed)):
        raise PayloadError(f"{path}: `[payloads] index` must be a list of directories or URLs")
    out += [x if is_url(x) or os.path.isabs(x) else os.path.join(home_root, x) for x in listed]
    out.append(SHIPPED)
    return out


class IndexSet:
    """The indexes of one command, consulted in order, each at most once per package."""

    def __init__(self, locations: list[str]):
        self.indexes = [Index(loc) for loc in dict.fromkeys(locations)]

    def find(self, namespace: str, name: str) -> tuple[Index, Descriptor] | None:
        for index in self.indexes:
            d = index.descriptor(namespace, name)
            if d is not None:
                return index, d
        return None

    def describe(self) -> str:
        return ", ".join(i.location for i in self.indexes)

    def consulted(self) -> tuple[list[str], bool]:
        """(the local files resolution read, found or not; whether it read anything that is not
        a local file, which no stat can show unchanged)."""
        files, elsewhere = [], False
        for index in self.indexes:
            for where in index.consulted:
                scheme = urllib.parse.urlsplit(where).scheme
                if scheme == "file":
                    files.append(urllib.parse.unquote(urllib.parse.urlsplit(where).path))
                elif is_url(where):
                    elsewhere = True
                else:
                    files.append(where)
        return files, elsewhere
