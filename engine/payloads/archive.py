"""Unpacking a payload archive (`.tar.zst`, `.tar.gz`, `.zip`) without trusting it.

The archive is read from a file as a stream, one member at a time, and each member goes into a
`Tree` (tree.py), which never writes through a link, never lets a member replace another,
resolves every symlink by walking the finished tree, and counts bytes and members against the
payload's `Limits` as they are written. Here are the archive-level refusals: an absolute path or
a `..` component (in a name or a hard link's target), a device, fifo or sparse member, and tar
metadata blocks (long names, pax headers) larger than a path could need, which `tarfile` would
otherwise read whole into memory. `strip` drops leading path components (a release usually
unpacks to `gen-2.0.0/...`).

A refusal raises `PayloadError` naming the archive and the member; the caller unpacks into a
private temporary directory and removes it, so a refused archive installs nothing.
"""
from __future__ import annotations

import stat
import tarfile
import zipfile
import zlib

import zstandard

from .errors import PayloadError
from .tree import MAX_LINK_TEXT, Limits, Tree

# A pax header or GNU long name holds paths and a few numbers; anything larger is not a payload.
MAX_METADATA = 1 << 20
_METADATA_TYPES = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE, tarfile.XGLTYPE,
                   tarfile.SOLARIS_XHDTYPE)
_TAR_ERRORS = (tarfile.TarError, zstandard.ZstdError, EOFError, zlib.error)
_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError)


class _Unsupported(Exception):
    """A tar header this unpacker will not process; `why` completes "member `<name>` ..."."""

    def __init__(self, name: str, why: str):
        super().__init__(why)
        self.name, self.why = name, why


class _BoundedInfo(tarfile.TarInfo):
    """A `TarInfo` that refuses, before `tarfile` reads them, metadata blocks over
    `MAX_METADATA` and sparse members (whose maps `tarfile` reads without bound)."""

    def _proc_member(self, tarfile_):
        if self.type in _METADATA_TYPES and self.size > MAX_METADATA:
            raise _Unsupported(self.name, f"has a {self.size}-byte metadata block (a long name or pax header)")
        return super()._proc_member(tarfile_)

    def _proc_sparse(self, tarfile_):
        raise _Unsupported(self.name, "is a sparse file")

    def _proc_gnusparse_10(self, next_, pax_headers, tarfile_):
        raise _Unsupported(next_.name, "is a sparse file")


def _refuser(url: str, shown: dict[str, str] | None = None):
    """Makes the error for a member; `shown` maps a member's name after `strip` back to its
    name in the archive, which is what the message names."""
    def refuse(member: str, why: str) -> PayloadError:
        member = (shown or {}).get(member, member)
        return PayloadError(f"payload archive {url}: member `{member}` {why}; nothing was installed")
    return refuse


def _relative(url: str, raw: str, strip: int, what: str = "") -> str | None:
    """The member path after `strip`, or None when strip consumes it; refuses escapes."""
    if raw.startswith("/") or (len(raw) > 1 and raw[1] == ":"):
        raise _refuser(url)(raw, f"has an absolute {what}path")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise _refuser(url)(raw, f"has a `..` component in its {what}path")
    parts = parts[strip:]
    return "/".join(parts) if parts else None


def extract(path: str, url: str, dest: str, strip: int = 0, limits: Limits | None = None) -> None:
    """Unpack the archive file at `path` (fetched from `url`) into `dest`, a directory this
    creates; `PayloadError` naming the archive when any member is refused or a limit passed."""
    shown: dict[str, str] = {}
    with Tree(dest, _refuser(url, shown), limits) as tree, open(path, "rb") as f:
        if url.endswith(".zip"):
            _unzip(f, url, tree, strip, limits, shown)
        else:
            _untar(f, url, tree, strip, shown)
        tree.finish()


def _unreadable(url: str, e: BaseException | str) -> PayloadError:
    return PayloadError(f"payload archive {url}: not a readable archive ({e or type(e).__name__}); "
                        f"nothing was installed")


def _untar(f, url: str, tree: Tree, strip: int, shown: dict[str, str]) -> None:
    gz = url.endswith((".gz", ".tgz"))
    try:
        stream = zstandard.ZstdDecompressor().stream_reader(f) if url.endswith(".zst") else f
        with tarfile.open(fileobj=stream, mode="r|gz" if gz else "r|", tarinfo=_BoundedInfo) as t:
            while (info := t.next()) is not None:
                t.members.clear()  # a stream is read once: a member's header is not kept after it
                _tar_member(t, info, url, tree, strip, shown)
    except _Unsupported as e:
        raise _refuser(url)(e.name, e.why) from None
    except _TAR_ERRORS as e:
        raise _unreadable(url, e) from None
    except RecursionError:  # tarfile reads a run of pax headers recursively
        raise _unreadable(url, "too many consecutive pax headers") from None


def _tar_member(t: tarfile.TarFile, info: tarfile.TarInfo, url: str, tree: Tree, strip: int,
                shown: dict[str, str]) -> None:
    name = _relative(url, info.name, strip)
    if name is not None:
        shown[name] = info.name
    if info.sparse is not None:
        raise _Unsupported(info.name, "is a sparse file")
    if not info.isreg() and info.size > 0:
        # Data on a link or directory is skipped, but skipping decompresses it: it counts.
        tree.charge(name or info.name, info.size)
    if info.islnk():
        target = _relative(url, info.linkname, strip, "link ")
        if name is not None:
            if target is None:
                raise _refuser(url)(info.name, f"is a hard link to `{info.linkname}`, which is not an earlier "
                                               f"file of the payload")
            tree.add_hardlink(name, target)
        return
    if name is None:
        return
    if info.issym():
        tree.add_symlink(name, info.linkname)
    elif info.isdir():
        tree.add_dir(name)
    elif info.isreg():
        tree.add_file(name, t.extractfile(info), info.mode & 0o777)
    else:
        raise tree.refuse_special(info.name)


def _unzip(f, url: str, tree: Tree, strip: int, limits: Limits | None, shown: dict[str, str]) -> None:
    try:
        z = zipfile.ZipFile(f)
    except _ZIP_ERRORS as e:
        raise _unreadable(url, e) from None
    with z:
        infos = z.infolist()
        if limits is not None and len(infos) > limits.max_members:
            raise PayloadError(f"payload archive {url}: has {len(infos)} members, more than "
                               f"{limits.max_members}, {limits.members_origin}; nothing was installed")
        try:
            for info in infos:
                name = _relative(url, info.filename, strip)
                if name is None:
                    continue
                shown[name] = info.filename
                mode = (info.external_attr >> 16) & 0xFFFF
                if stat.S_ISLNK(mode):
                    with z.open(info) as link:
                        text = link.read(MAX_LINK_TEXT + 1)
                    try:
                        tree.add_symlink(name, text.decode())
                    except UnicodeDecodeError:
                        raise _refuser(url)(info.filename, "is a link with no usable target") from None
                elif info.is_dir() or stat.S_ISDIR(mode):
                    tree.add_dir(name)
                elif stat.S_IFMT(mode) in (0, stat.S_IFREG):
                    with z.open(info) as content:
                        tree.add_file(name, content, mode & 0o777 or 0o644)
                else:
                    raise tree.refuse_special(info.filename)
        except _ZIP_ERRORS as e:
            raise _unreadable(url, e) from None
