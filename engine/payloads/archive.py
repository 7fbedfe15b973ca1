"""Unpacking a payload archive (`.tar.zst`, `.tar.gz`, `.zip`) without trusting it.

Every member is checked before anything is written: an absolute path, a `..` component, a link
whose target leaves the payload, a device or fifo are refused with the member's name. Checking
first, rather than as members are extracted, means a refused archive writes nothing: the
install's temporary directory never holds half an archive that could be mistaken for a payload.
`strip` drops leading path components (a release usually unpacks to `gen-2.0.0/...`).
"""
from __future__ import annotations

import io
import os
import posixpath
import stat
import tarfile
import zipfile
from dataclasses import dataclass

import zstandard

from .errors import PayloadError


@dataclass(frozen=True)
class Member:
    name: str  # after strip, relative, normalized
    kind: str  # "file" | "dir" | "symlink" | "hardlink"
    mode: int
    link: str = ""  # symlink target as written; hardlink: the member it names (after strip)
    source: object = None  # the tarfile.TarInfo / zipfile.ZipInfo


def _refuse(url: str, member: str, why: str) -> PayloadError:
    return PayloadError(f"payload archive {url}: member `{member}` {why}; nothing was installed")


def _relative(url: str, raw: str, strip: int, what: str = "") -> str | None:
    """The member path after `strip`, or None when strip consumes it; refuses escapes."""
    if raw.startswith("/") or (len(raw) > 1 and raw[1] == ":"):
        raise _refuse(url, raw, f"has an absolute {what}path")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise _refuse(url, raw, f"has a `..` component in its {what}path")
    parts = parts[strip:]
    return "/".join(parts) if parts else None


def _inside(link_from: str, target: str) -> bool:
    """Whether symlink `link_from` -> `target` stays in the payload root."""
    if target.startswith("/"):
        return False
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(link_from), target))
    return resolved != ".." and not resolved.startswith("../") and resolved != "/"


def members(data: bytes, url: str, strip: int) -> tuple[list[Member], object]:
    """The checked members of the archive and the opened archive object."""
    if url.endswith(".zip"):
        z = zipfile.ZipFile(io.BytesIO(data))
        out = []
        for info in z.infolist():
            name = _relative(url, info.filename, strip)
            if name is None:
                continue
            mode = (info.external_attr >> 16) & 0xFFFF
            if stat.S_ISLNK(mode):
                target = z.read(info).decode()
                if not _inside(name, target):
                    raise _refuse(url, info.filename, f"is a link to `{target}`, outside the payload")
                out.append(Member(name, "symlink", 0o777, target, info))
            else:
                out.append(Member(name, "dir" if info.is_dir() else "file", mode & 0o777 or 0o644, "", info))
        return out, z
    raw = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)).read() if url.endswith(".zst") else data
    try:
        t = tarfile.open(fileobj=io.BytesIO(raw), mode="r:gz" if url.endswith((".gz", ".tgz")) else "r:")
    except (tarfile.TarError, OSError, EOFError) as e:
        raise PayloadError(f"payload archive {url}: not a readable archive ({e}); nothing was installed") from None
    out = []
    names = set()
    for info in t.getmembers():
        name = _relative(url, info.name, strip)
        if name is None:
            continue
        if info.issym():
            if not _inside(name, info.linkname):
                raise _refuse(url, info.name, f"is a link to `{info.linkname}`, outside the payload")
            out.append(Member(name, "symlink", 0o777, info.linkname, info))
        elif info.islnk():
            target = _relative(url, info.linkname, strip, "link ")
            if target is None or target not in names:
                raise _refuse(url, info.name, f"is a hard link to `{info.linkname}`, which is not an earlier "
                                              f"member of the payload")
            out.append(Member(name, "hardlink", info.mode & 0o777, target, info))
        elif info.isdir():
            out.append(Member(name, "dir", info.mode & 0o777, "", info))
        elif info.isfile():
            out.append(Member(name, "file", info.mode & 0o777, "", info))
        else:
            raise _refuse(url, info.name, "is a device, fifo or other special file")
        names.add(name)
    return out, t


def extract(data: bytes, url: str, dest: str, strip: int = 0) -> None:
    """Unpack into the existing, empty directory `dest`, after checking every member."""
    checked, archive = members(data, url, strip)
    # A member under a symlinked directory would be written through the link: refuse that too.
    links = {m.name for m in checked if m.kind == "symlink"}
    for m in checked:
        parent = m.name
        while "/" in parent:
            parent = parent.rsplit("/", 1)[0]
            if parent in links:
                raise _refuse(url, m.name, f"lies under the link `{parent}`")
    for m in checked:
        path = os.path.join(dest, m.name)
        if m.kind == "dir":
            os.makedirs(path, exist_ok=True)
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if m.kind == "symlink":
            os.symlink(m.link, path)
        elif m.kind == "hardlink":
            os.link(os.path.join(dest, m.link), path)
        else:
            if isinstance(archive, zipfile.ZipFile):
                content = archive.read(m.source)
            else:
                content = archive.extractfile(m.source).read()
            with open(path, "wb") as f:
                f.write(content)
            os.chmod(path, (m.mode | 0o444) & 0o755)
