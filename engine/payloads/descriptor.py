"""A payload descriptor, `pkgs/<namespace>/<name>.toml` of an index (docs/payloads.md).

It names the package's `bins` (paths relative to the installed root) and, per release, one
source per host platform (`linux-x86_64`, ...) or, for a library (engine/registry/), one
`source` archive for all of them, and may be `yanked`: an archive by URL with its blake3 and size, a
directory inside the index, or a `system` root adopted in place when its probe answers the
release's version (the probe's program must be a path inside that root: system.py). A descriptor is checked whole when it is read, so a typo in a release nobody
asked for is still reported, with the descriptor's location.
"""
from __future__ import annotations

import posixpath
import re
import tomllib
from dataclasses import dataclass

from .errors import PayloadError

_HEX64 = re.compile(r"^[0-9a-f]{64}$")
# A release's version names its directory in the store (`payloads/<ns>/<name>/<version>/`) and its
# lock, so it is one plain path component: no `/`, never `.` or `..`, nothing absolute.
_VERSION = re.compile(r"^[0-9A-Za-z][0-9A-Za-z._+-]{0,127}$")
_ARCHIVE_SUFFIXES = (".tar.zst", ".tar.gz", ".tgz", ".zip")


# Programs that run whatever their arguments say: a probe asks the installation itself.
LAUNCHERS = frozenset({"sh", "bash", "dash", "ash", "zsh", "ksh", "mksh", "csh", "tcsh", "fish", "busybox",
                       "env", "nohup", "xargs", "sudo", "su", "python", "python3", "perl", "ruby", "node"})


def probe_shape_error(root: str, probe: tuple[str, ...]) -> str | None:
    """Why a `system` source's root and probe are refused as written, or None."""
    program = probe[0]
    if not posixpath.normpath(root).strip("/"):
        return "`system` must be the installation's own directory, not `/`"
    if any("\0" in word for word in probe):
        return "`probe` contains a NUL byte"
    if not program or program.startswith("/"):
        return (f"the probe's program `{program}` must be a path inside the `system` root (such as "
                f"`bin/tool`), not an absolute path")
    if ".." in program.split("/"):
        return f"the probe's program `{program}` has a `..` component; it must lie inside the `system` root"
    if posixpath.basename(program) in LAUNCHERS:
        return (f"the probe's program `{program}` is a shell or launcher; a probe runs the installation's own "
                f"program (such as `bin/tool --version`)")
    return None


@dataclass(frozen=True)
class Source:
    kind: str  # "archive" | "dir" | "system"
    url: str = ""  # archive: relative to the index or absolute
    blake3: str = ""
    size: int | None = None
    strip: int = 0
    unpacked_size: int | None = None  # archive: the most its members may add up to (limits.py)
    dir: str = ""  # dir: relative to the index
    system: str = ""  # system: the absolute root adopted
    probe: tuple[str, ...] = ()  # system: argv, its first word a program inside the root (system.py)
    match: str = ""  # system: regex whose first group is the version


# A release's key for a library's sources (engine/registry/): one archive for every platform.
LIBRARY_SOURCE = "source"


@dataclass(frozen=True)
class Release:
    version: str
    sources: dict  # platform key (or LIBRARY_SOURCE) -> Source
    yanked: bool = False  # never picked for a new lock (engine/registry/resolver.py)

    @property
    def library(self) -> Source | None:
        """The release's library sources, when the package is a library."""
        return self.sources.get(LIBRARY_SOURCE)


@dataclass(frozen=True)
class Descriptor:
    namespace: str
    name: str
    description: str
    bins: tuple[str, ...]
    releases: tuple[Release, ...]
    location: str  # where it was read from, for messages

    def versions_for(self, platform: str) -> list[str]:
        return [r.version for r in self.releases if platform in r.sources]

    def source(self, version: str, platform: str) -> Source | None:
        for r in self.releases:
            if r.version == version:
                return r.sources.get(platform)
        return None


def parse_descriptor(text: str, location: str, namespace: str, name: str) -> Descriptor:
    def fail(msg: str) -> PayloadError:
        return PayloadError(f"payload descriptor {location}: {msg}")

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise fail(f"not valid TOML ({e})") from None
    pkg = doc.get("package")
    if not isinstance(pkg, dict):
        raise fail("has no [package] table")
    if pkg.get("name", name) != name or pkg.get("namespace", namespace) != namespace:
        raise fail(f"describes `{pkg.get('namespace', namespace)}:{pkg.get('name', name)}`, but its path says "
                   f"`{namespace}:{name}`")
    bins = pkg.get("bins", [])
    if not (isinstance(bins, list) and all(isinstance(b, str) and b and not b.startswith("/") and ".." not in
                                           b.split("/") for b in bins)):
        raise fail("`bins` must be a list of paths relative to the payload root")
    releases = []
    seen = set()
    for i, rel in enumerate(doc.get("release", [])):
        if not isinstance(rel, dict) or not isinstance(rel.get("version"), str) or not rel["version"]:
            raise fail(f"[[release]] #{i + 1} has no `version`")
        version = rel["version"]
        if not _VERSION.match(version):
            raise fail(f"[[release]] #{i + 1}: version `{version}` is not a version (letters, digits, `.`, `+`, "
                       f"`-`, `_`, starting with a letter or digit): it names the payload's directory in the store")
        if version in seen:
            raise fail(f"release `{version}` is listed twice")
        seen.add(version)
        sources = {}
        yanked = rel.get("yanked", False)
        if not isinstance(yanked, bool):
            raise fail(f"release `{version}`: `yanked` must be true or false")
        for platform, spec in rel.items():
            if platform in ("version", "yanked"):
                continue
            sources[platform] = _source(spec, lambda m: fail(f"release `{version}`, `{platform}`: {m}"))
        library = sources.get(LIBRARY_SOURCE)
        if library is not None and library.kind != "archive":
            raise fail(f"release `{version}`: a library's `source` is an archive (`{{ url = ..., blake3 = ... }}`)")
        releases.append(Release(version, sources, yanked))
    return Descriptor(namespace, name, str(pkg.get("description", "")), tuple(bins), tuple(releases), location)


def _source(spec, fail) -> Source:
    if not isinstance(spec, dict):
        raise fail("must be a table `{ url = ... }`, `{ dir = ... }` or `{ system = ... }`")
    kinds = [k for k in ("url", "dir", "system") if k in spec]
    if len(kinds) != 1:
        raise fail("names exactly one source: `url` (an archive), `dir` (a directory of the index) or "
                   "`system` (an installation adopted in place)")
    kind = kinds[0]
    if kind == "url":
        url, digest, size = spec["url"], spec.get("blake3"), spec.get("size")
        if not isinstance(url, str) or not url.endswith(_ARCHIVE_SUFFIXES):
            raise fail(f"`url` must name a {', '.join(_ARCHIVE_SUFFIXES)} archive")
        if url.startswith("/"):
            raise fail("`url` is relative to the index or a full URL; a file on this machine is `file:///...`")
        if not isinstance(digest, str) or not _HEX64.match(digest):
            raise fail("an archive needs its `blake3` (64 lowercase hex digits)")
        if size is not None and (not isinstance(size, int) or size < 0):
            raise fail("`size` must be a byte count")
        strip = spec.get("strip", 0)
        if not isinstance(strip, int) or strip < 0:
            raise fail("`strip` must be a number of leading path components")
        unpacked = spec.get("unpacked-size")
        if unpacked is not None and (not isinstance(unpacked, int) or isinstance(unpacked, bool) or unpacked < 0):
            raise fail("`unpacked-size` must be a byte count")
        return Source("archive", url=url, blake3=digest, size=size, strip=strip, unpacked_size=unpacked)
    if kind == "dir":
        d = spec["dir"]
        if not isinstance(d, str) or not d or d.startswith("/") or ".." in d.split("/"):
            raise fail("`dir` must be a path inside the index")
        return Source("dir", dir=d)
    root, probe, match = spec["system"], spec.get("probe"), spec.get("match")
    if not isinstance(root, str) or not root.startswith("/"):
        raise fail("`system` must be an absolute directory")
    if not (isinstance(probe, list) and probe and all(isinstance(p, str) for p in probe)):
        raise fail("a `system` source needs `probe`, the argv that prints its version")
    refused = probe_shape_error(root, tuple(probe))
    if refused is not None:
        raise fail(refused)
    if not isinstance(match, str):
        raise fail("a `system` source needs `match`, a regex whose first group is the version")
    try:
        if re.compile(match).groups < 1:
            raise fail("`match` must have a group capturing the version")
    except re.error as e:
        raise fail(f"`match` is not a regex ({e})") from None
    return Source("system", system=root, probe=tuple(probe), match=match)
