"""A directory as one content-addressed value: the REAPI `Tree` of `Directory` messages.

An action may declare a directory output whose files it decides itself (`mcpp.action(outputs =
["gen/docs/"])`, docs/rules.md). Such an output is stored like a remote-execution server stores
one: every file is a blob, every directory a `Directory` message (files, subdirectories and
symlinks, each list sorted by name, as REAPI requires for a canonical encoding), and the whole a
`Tree` message (root plus every distinct child directory) whose digest names the output. The
digests inside are the local store's (blake3, REAPI's `BLAKE3` digest function), so the same
bytes can be handed to a remote cache as an `OutputDirectory.tree_digest`.

Capturing never follows a symlink. A symlink inside the directory is kept as a symlink, and
only when its target is relative and stays inside the directory (resolved component by
component from the link's own directory): a link to `/etc` or `../../x` would make the output's
meaning depend on the machine it is restored on, or let a later action read outside its inputs.
Anything but regular files, directories and such links (a device, a socket, a hard link to a
file the action did not write) is refused with `TreeError` naming the path.
"""
from __future__ import annotations

import os
import posixpath
import stat
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Callable, Protocol

from .blobstore import BlobStore
from .digest import Digest, digest_bytes

if TYPE_CHECKING:
    # protobuf ships no types and the REAPI classes are built at run time
    # (cas/remote/protocol.py): a message is `Any` to the type checker, named here for the reader.
    from google.protobuf.message import Message


def _pb() -> ModuleType:
    """The REAPI messages, imported on first use: importing protobuf is a cost that a build
    without tree outputs (a no-op above all) should not pay."""
    from .remote import protocol

    return protocol


class TreeError(Exception):
    """A directory that cannot be stored as a tree output; the message names the path."""


@dataclass(frozen=True)
class TreeEntry:
    """One leaf of a tree, by its path relative to the tree's root."""

    path: str
    digest: Digest | None  # None for a symlink
    executable: bool = False
    target: str | None = None  # a symlink's (relative) target


class TreeSink(Protocol):
    """What `capture` writes through: a `BlobStore`, or `_HashOnly` that keeps nothing."""

    def put(self, data: bytes) -> Digest: ...

    def put_file(self, path: str) -> Digest: ...


def capture(root: str, store: TreeSink) -> Digest:
    """Store every file of `root` and the tree describing it; returns the tree's digest."""
    children: dict[Digest, bytes] = {}
    top = _directory(root, "", store, children)
    pb = _pb()
    tree = pb.Tree(root=top)
    for data in (children[d] for d in sorted(children)):
        tree.children.add().ParseFromString(data)
    return store.put(_encode(tree))


def _encode(message: Message) -> bytes:
    data: bytes = message.SerializeToString(deterministic=True)
    return data


def _directory(path: str, rel: str, store: TreeSink, children: dict[Digest, bytes]) -> Message:
    pb = _pb()
    directory = pb.Directory()
    for name in sorted(os.listdir(path)):
        full, sub = os.path.join(path, name), posixpath.join(rel, name) if rel else name
        st = os.lstat(full)
        if stat.S_ISDIR(st.st_mode):
            child = _directory(full, sub, store, children)
            data = _encode(child)
            d = digest_bytes(data)
            children[d] = data
            directory.directories.add(name=name, digest=pb.Digest(hash=d.hash, size_bytes=d.size))
        elif stat.S_ISREG(st.st_mode):
            if st.st_nlink != 1:
                raise TreeError(f"{sub} is a hard link ({st.st_nlink} names)")
            d = store.put_file(full)
            directory.files.add(name=name, digest=pb.Digest(hash=d.hash, size_bytes=d.size),
                                is_executable=bool(st.st_mode & 0o111))
        elif stat.S_ISLNK(st.st_mode):
            target = os.readlink(full)
            if not stays_inside(rel, target):
                raise TreeError(f"{sub} is a symbolic link to `{target}`, which leaves the directory "
                                f"(a link inside a tree output must be relative and stay inside it)")
            directory.symlinks.add(name=name, target=target)
        else:
            raise TreeError(f"{sub} is not a regular file, a directory or a symbolic link")
    return directory


def stays_inside(link_dir: str, target: str) -> bool:
    """Whether a link in `link_dir` (relative to the tree's root) to `target` resolves inside the
    tree, read lexically: the tree holds no link that could lead elsewhere, so `..` steps are
    the only way out."""
    if not target or target.startswith("/"):
        return False
    depth = len([p for p in link_dir.split("/") if p])
    for part in target.split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return False
        elif part not in ("", "."):
            depth += 1
    return True


def read_tree(d: Digest, store: BlobStore) -> Message:
    from google.protobuf.message import DecodeError  # with _pb(): only when a tree is read

    tree = _pb().Tree()
    try:
        tree.ParseFromString(store.get(d))
    except DecodeError:
        raise TreeError(f"tree {d.short} is not a REAPI Tree") from None
    return tree


def entries(d: Digest, store: BlobStore) -> list[TreeEntry]:
    """Every file and symlink of the tree `d`, sorted by path."""
    tree = read_tree(d, store)
    by_digest = {digest_bytes(_encode(c)): c for c in tree.children}
    out: list[TreeEntry] = []

    def walk(directory: Message, rel: str) -> None:
        for node in [*directory.files, *directory.directories, *directory.symlinks]:
            _check_name(d, rel, node.name)  # a tree may come from a remote cache: trust no name
        for s in directory.symlinks:
            if not stays_inside(rel, s.target):
                raise TreeError(f"tree {d.short}: {posixpath.join(rel, s.name)} links to `{s.target}`, outside the tree")
        for f in directory.files:
            out.append(TreeEntry(posixpath.join(rel, f.name) if rel else f.name,
                                 Digest(f.digest.hash, f.digest.size_bytes), f.is_executable))
        for s in directory.symlinks:
            out.append(TreeEntry(posixpath.join(rel, s.name) if rel else s.name, None, target=s.target))
        for sub in directory.directories:
            child = by_digest.get(Digest(sub.digest.hash, sub.digest.size_bytes))
            if child is None:
                raise TreeError(f"tree {d.short}: directory {sub.name} is missing from the tree")
            walk(child, posixpath.join(rel, sub.name) if rel else sub.name)

    walk(tree.root, "")
    return sorted(out, key=lambda e: e.path)


def _check_name(d: Digest, rel: str, name: str) -> None:
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise TreeError(f"tree {d.short}: `{rel}` holds an entry named {name!r}")


def blobs(d: Digest, store: BlobStore) -> list[Digest]:
    """The file blobs a tree needs, for a missing-blob check before restoring it."""
    return sorted({e.digest for e in entries(d, store) if e.digest is not None})


def materialize(d: Digest, store: BlobStore, dest: str,
                copy_into: Callable[[Digest, str, bool], None] | None = None) -> None:
    """Recreate the tree `d` at `dest` (replaced whole: nothing of an older content stays).
    `copy_into(digest, path, executable)` writes a file (the store's materializer, whose copies
    share nothing with the store); by default the blob is read from `store`."""
    listing = entries(d, store)
    if os.path.lexists(dest):
        if os.path.isdir(dest) and not os.path.islink(dest):
            import shutil
            shutil.rmtree(dest)
        else:
            os.unlink(dest)
    os.makedirs(dest)
    for tree_dir in _directories(d, store):
        os.makedirs(os.path.join(dest, tree_dir), exist_ok=True)
    for e in listing:
        path = os.path.join(dest, e.path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if e.digest is None:
            assert e.target is not None, "an entry without a digest is a symlink"
            os.symlink(e.target, path)
        elif copy_into is not None:
            copy_into(e.digest, path, e.executable)
        else:
            with open(path, "wb") as f:
                f.write(store.get(e.digest))
            os.chmod(path, 0o755 if e.executable else 0o644)


def _directories(d: Digest, store: BlobStore) -> list[str]:
    """Every directory of the tree, empty ones included (entries() lists only leaves)."""
    tree = read_tree(d, store)
    by_digest = {digest_bytes(_encode(c)): c for c in tree.children}
    out: list[str] = []

    def walk(directory: Message, rel: str) -> None:
        for sub in directory.directories:
            path = posixpath.join(rel, sub.name) if rel else sub.name
            out.append(path)
            child = by_digest.get(Digest(sub.digest.hash, sub.digest.size_bytes))
            if child is not None:
                walk(child, path)

    walk(tree.root, "")
    return out


class _HashOnly:
    """A store that keeps nothing: `capture` through it gives the digest a tree would have."""

    def put(self, data: bytes) -> Digest:
        return digest_bytes(data)

    def put_file(self, path: str) -> Digest:
        from .digest import digest_file
        return digest_file(path)


def digest_of_directory(path: str) -> Digest:
    """The digest `capture(path, store)` would return, storing nothing (a freshness check)."""
    return capture(path, _HashOnly())

