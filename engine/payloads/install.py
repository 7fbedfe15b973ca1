"""The payload store, `$MCPP_HOME/payloads/<namespace>/<name>/<version>/`.

A payload is installed once per machine and then only read. Installing is all-or-nothing: the
archive is streamed to a file in a private temporary directory under `payloads/.tmp/`, its size
and blake3 compared with the descriptor's *before* anything is unpacked, then unpacked beside
it (archive.py, tree.py: no member written through a link, every link resolved inside, bytes
and members bounded) and the tree renamed into place. The version directory therefore exists
only complete: a refused archive leaves nothing, a killed install leaves a temporary directory
(`mcpp cache gc` sweeps it) and the next build installs again. A lock per payload makes two
builds that need it at the same time install it once: the second waits, then finds the directory.

A `dir` source (a directory inside a local index) is copied the same way, through a `Tree` with
the same limits as an archive, so what a build reads does not change when the index's checkout
does, nothing outside the index is copied, and a huge (or sparse) file in it cannot fill the disk. A `system` source is not installed at all: the installation is adopted in
place (system.py).
"""
from __future__ import annotations

import errno
import fcntl
import os
import shutil
import stat
import tempfile
from typing import Mapping

import blake3

from mcpp.cas.atomic import TMP_PREFIX

from . import archive, system
from ..core import containment
from .descriptor import Descriptor, Source
from .errors import PayloadError
from .index import Index, NotFound, open_url, read_failed, stream_errors
from .limits import limits_for
from .tree import CHUNK, Limits, Tree, open_dir

LOCKS = ".locks"
TMP = ".tmp"


def store_dir(payloads_root: str, namespace: str, name: str, version: str) -> str:
    return os.path.join(payloads_root, namespace, name, version)


def lock_path(payloads_root: str, namespace: str, name: str, version: str) -> str:
    """The payload's lock, whose mtime also records its last use (for `mcpp cache gc`)."""
    return os.path.join(payloads_root, LOCKS, f"{namespace}+{name}+{version}.lock")


def _stamp_use(path: str) -> None:
    try:
        os.utime(path)
    except OSError:
        pass


def stored_version(version: str, platform: str = "", origin: str = "") -> str:
    """The store's name of a release: its version, with `+<platform>` for a platform other than
    the host's (a cross build's target-axis payload), so the two never share a directory, and
    `@<origin>` for a release of a package's own index (`Index.origin`), which no version spells."""
    return (f"{version}+{platform}" if platform else version) + (f"@{origin}" if origin else "")


def installed(payloads_root: str, namespace: str, name: str, version: str, platform: str = "",
              origin: str = "") -> str | None:
    d = store_dir(payloads_root, namespace, name, stored_version(version, platform, origin))
    return d if os.path.isdir(d) else None


def install(payloads_root: str, index: Index, desc: Descriptor, version: str, source: Source,
            status=None, prober: system.Prober | None = None, environ: Mapping[str, str] | None = None,
            platform: str = "") -> str:
    """The directory of the installed payload, installing it when it is not there yet. A
    `system` source is adopted through `prober` (one that may run probes); `environ` holds the
    command's `MCPP_PAYLOAD_MAX_*` limits (engine/core/settings.py; none: the defaults);
    `platform`: the release's platform where it is not the host's (`stored_version`)."""
    environ = {} if environ is None else environ
    address = f"{desc.namespace}:{desc.name}"
    if source.kind == "system":
        prober = prober or system.Prober(os.path.join(payloads_root, system.PROBES), may_run=True)
        adoption = system.adopt(source, version, prober, f"payload `{address}` {version}")
        if adoption.root is None:
            raise PayloadError(f"payload `{address}` {version} is adopted from `{source.system}` on this machine, "
                               f"but {adoption.why} (descriptor {desc.location})")
        return adoption.root
    stored = stored_version(version, platform, index.origin(desc.namespace, desc.name))
    final = store_dir(payloads_root, desc.namespace, desc.name, stored)
    lock = lock_path(payloads_root, desc.namespace, desc.name, stored)
    if os.path.isdir(final):
        _stamp_use(lock)
        return final
    os.makedirs(os.path.join(payloads_root, LOCKS), exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if os.path.isdir(final):  # another build installed it while this one waited
            return final
        if status is not None:
            status("Installing", f"{address} {version}")
        tmp_root = os.path.join(payloads_root, TMP)
        os.makedirs(tmp_root, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=TMP_PREFIX, dir=tmp_root)  # private (0700) while it is built
        try:
            root = os.path.join(tmp, "root")
            if source.kind == "archive":
                _unpack(index, desc, source, tmp, root, limits_for(source, environ))
            else:
                _copy_dir(index, desc, source, root, limits_for(source, environ))
            os.makedirs(os.path.dirname(final), exist_ok=True)
            os.rename(root, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return final
    finally:
        os.close(fd)


def _unpack(index: Index, desc: Descriptor, source: Source, tmp: str, root: str, limits: Limits) -> None:
    url = index.url(source.url)
    path = os.path.join(tmp, "archive")
    _download(url, path, desc, source, limits)
    archive.extract(path, url, root, source.strip, limits)


def _download(url: str, path: str, desc: Descriptor, source: Source, limits: Limits) -> None:
    """Stream the archive at `url` into `path`, hashing it on the way; its size and blake3
    must be the descriptor's. The download is bounded by the descriptor's `size`, else by twice
    the bytes it may unpack to (headers and padding never double a compressed archive)."""
    cap = source.size if source.size is not None else 2 * limits.max_bytes + CHUNK
    try:
        stream = open_url(url)
    except NotFound:
        raise PayloadError(f"payload `{desc.namespace}:{desc.name}`: archive {url} is not there "
                           f"(descriptor {desc.location})") from None
    digest, n = blake3.blake3(), 0
    with stream, open(path, "wb") as out:
        while True:
            try:
                chunk = stream.read(CHUNK)
            except stream_errors(url) as e:
                raise read_failed(url, e) from None
            if not chunk:
                break
            n += len(chunk)
            if n > cap:
                if source.size is not None:
                    raise PayloadError(f"payload archive {url}: size mismatch: the descriptor says {source.size} "
                                       f"bytes, more were read; nothing was installed")
                raise PayloadError(f"payload archive {url}: the download passed {cap} bytes, more than an "
                                   f"archive that may unpack to {limits.max_bytes} bytes ({limits.bytes_origin}) "
                                   f"can be; nothing was installed")
            digest.update(chunk)
            out.write(chunk)
    if source.size is not None and n != source.size:
        raise PayloadError(f"payload archive {url}: size mismatch: the descriptor says {source.size} bytes, "
                           f"{n} were read; nothing was installed")
    actual = digest.hexdigest()
    if actual != source.blake3:
        raise PayloadError(f"payload archive {url}: blake3 mismatch: expected {source.blake3}, got {actual}; "
                           f"nothing was installed (the archive changed after the descriptor was written, or "
                           f"the download was altered)")


def _copy_dir(index: Index, desc: Descriptor, source: Source, root: str, limits: Limits) -> None:
    """Copy the index's directory `source.dir` into the new tree `root`. The directory is
    resolved by walking from the index's root and must stay inside the index; it is then read
    without following any link, and its own symlinks are copied as links that must resolve
    inside the payload (tree.py), so nothing outside the index reaches the store."""
    address = f"{desc.namespace}:{desc.name}"
    src = index.local_path(source.dir)
    index_root = index.local_path(".")
    if src is None or index_root is None:
        raise PayloadError(f"payload `{address}`: a `dir` source needs a local index "
                           f"(a directory or file:// URL), and {index.location} is remote; publish an archive")
    src, index_root = os.path.normpath(src), os.path.normpath(index_root)
    try:
        real = containment.check(src, index_root)
    except containment.SymlinkEscape as e:
        raise PayloadError(f"payload `{address}`: directory {src} of the index leads outside the index "
                           f"({index_root}): `{e.symlink}` is a symlink to `{e.target}`; nothing was installed "
                           f"(descriptor {desc.location})") from None
    real_root = os.path.realpath(index_root)
    rel = os.path.relpath(real, real_root)
    parts = [] if rel == "." else rel.split(os.sep)

    def refuse(member: str, why: str) -> PayloadError:
        return PayloadError(f"payload `{address}`: {os.path.join(src, member)} {why}; nothing was installed "
                            f"(descriptor {desc.location})")

    try:
        top = os.open(real_root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            base = open_dir(top, parts)
        finally:
            os.close(top)
    except OSError:
        raise PayloadError(f"payload `{address}`: directory {src} of the index does not exist "
                           f"(descriptor {desc.location})") from None
    try:
        with Tree(root, refuse, limits) as tree:
            _copy_tree(base, tree)
            tree.finish()
    finally:
        os.close(base)


def _copy_tree(base: int, tree: Tree) -> None:
    """Everything below directory `base` into `tree`, depth first, no link followed: each
    directory is opened from `base` component by component (`open_dir`), so the descriptors
    held at once do not grow with the tree."""
    pending = [""]
    while pending:
        prefix = pending.pop()
        fd = open_dir(base, prefix.split("/") if prefix else [])
        try:
            with os.scandir(fd) as it:
                entries = sorted((e.name, e.stat(follow_symlinks=False).st_mode) for e in it)
            for leaf, mode in entries:
                name = f"{prefix}/{leaf}" if prefix else leaf
                if stat.S_ISLNK(mode):
                    tree.add_symlink(name, os.readlink(leaf, dir_fd=fd))
                elif stat.S_ISDIR(mode):
                    tree.add_dir(name)
                    pending.append(name)
                elif stat.S_ISREG(mode):
                    with open(_open_file(leaf, fd, name, tree), "rb") as f:
                        tree.add_file(name, f, mode & 0o777)
                else:
                    raise tree.refuse_special(name)
        finally:
            os.close(fd)


def _open_file(leaf: str, dir_fd: int, name: str, tree: Tree) -> int:
    """Open the regular file `leaf` of `dir_fd` for copying. It was a regular file when the
    directory was listed; one replaced since by a link, a fifo or a device is refused, never
    followed or waited on (non-blocking open, then the descriptor itself is checked)."""
    try:
        fd = os.open(leaf, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise tree.refuse_special(name) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise tree.refuse_special(name)
    return fd
