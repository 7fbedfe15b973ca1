"""The payload store, `$MCPP_HOME/payloads/<namespace>/<name>/<version>/`.

A payload is installed once per machine and then only read. Installing is all-or-nothing: the
archive is fetched whole, its size and blake3 compared with the descriptor's *before* anything
is unpacked, the members checked (archive.py), the tree built in a temporary directory under
`payloads/.tmp/` and renamed into place. The version directory therefore exists only complete:
a killed install leaves a temporary directory (`mcpp cache gc` sweeps it) and the next build
installs again. A lock per payload makes two builds that need it at the same time install it
once: the second waits, then finds the directory.

A `dir` source (a directory inside a local index) is copied the same way, so what a build reads
does not change when the index's checkout does. A `system` source is not installed at all: the
installation is adopted in place (system.py).
"""
from __future__ import annotations

import fcntl
import os
import shutil

import blake3

from mcpp.cas.atomic import TMP_PREFIX

from . import archive, system
from .descriptor import Descriptor, Source
from .errors import PayloadError
from .index import Index, NotFound, fetch

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


def installed(payloads_root: str, namespace: str, name: str, version: str) -> str | None:
    d = store_dir(payloads_root, namespace, name, version)
    return d if os.path.isdir(d) else None


def install(payloads_root: str, index: Index, desc: Descriptor, version: str, source: Source,
            status=None, prober: system.Prober | None = None) -> str:
    """The directory of the installed payload, installing it when it is not there yet. A
    `system` source is adopted through `prober` (one that may run probes)."""
    address = f"{desc.namespace}:{desc.name}"
    if source.kind == "system":
        prober = prober or system.Prober(os.path.join(payloads_root, system.PROBES), may_run=True)
        adoption = system.adopt(source, version, prober, f"payload `{address}` {version}")
        if adoption.root is None:
            raise PayloadError(f"payload `{address}` {version} is adopted from `{source.system}` on this machine, "
                               f"but {adoption.why} (descriptor {desc.location})")
        return adoption.root
    final = store_dir(payloads_root, desc.namespace, desc.name, version)
    lock = lock_path(payloads_root, desc.namespace, desc.name, version)
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
        tmp = os.path.join(tmp_root, TMP_PREFIX + os.urandom(6).hex())
        os.makedirs(tmp)
        try:
            if source.kind == "archive":
                _unpack(index, desc, source, tmp)
            else:
                _copy_dir(index, desc, source, tmp)
            os.makedirs(os.path.dirname(final), exist_ok=True)
            os.rename(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return final
    finally:
        os.close(fd)


def _unpack(index: Index, desc: Descriptor, source: Source, tmp: str) -> None:
    url = index.url(source.url)
    try:
        data = fetch(url)
    except NotFound:
        raise PayloadError(f"payload `{desc.namespace}:{desc.name}`: archive {url} is not there "
                           f"(descriptor {desc.location})") from None
    if source.size is not None and len(data) != source.size:
        raise PayloadError(f"payload archive {url}: size mismatch: the descriptor says {source.size} bytes, "
                           f"{len(data)} were read; nothing was installed")
    actual = blake3.blake3(data).hexdigest()
    if actual != source.blake3:
        raise PayloadError(f"payload archive {url}: blake3 mismatch: expected {source.blake3}, got {actual}; "
                           f"nothing was installed (the archive changed after the descriptor was written, or "
                           f"the download was altered)")
    archive.extract(data, url, tmp, source.strip)


def _copy_dir(index: Index, desc: Descriptor, source: Source, tmp: str) -> None:
    src = index.local_path(source.dir)
    if src is None:
        raise PayloadError(f"payload `{desc.namespace}:{desc.name}`: a `dir` source needs a local index "
                           f"(a directory or file:// URL), and {index.location} is remote; publish an archive")
    if not os.path.isdir(src):
        raise PayloadError(f"payload `{desc.namespace}:{desc.name}`: directory {src} of the index does not exist "
                           f"(descriptor {desc.location})")
    real_root = os.path.realpath(src)
    for dirpath, dirs, files in os.walk(src):
        for f in dirs + files:  # a link to a directory is listed with the directories
            p = os.path.join(dirpath, f)
            if os.path.islink(p) and not os.path.realpath(p).startswith(real_root + "/"):
                raise PayloadError(f"payload `{desc.namespace}:{desc.name}`: {p} is a link out of the payload "
                                   f"directory; nothing was installed")
    shutil.copytree(src, tmp, symlinks=True, dirs_exist_ok=True)
