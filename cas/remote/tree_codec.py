"""Re-encoding a REAPI `Tree` under another digest function (cas/tree.py stores tree outputs
with blake3 digests; a remote cache may name blobs by SHA-256). The file bytes never change, so
only the names do: every file digest is mapped, every Directory is named again by the new
function. It lives in the remote layer, which uses it, and needs nothing but the messages."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from . import protocol as pb

if TYPE_CHECKING:
    # protobuf ships no types, and the REAPI classes are built at run time (protocol.py): to
    # the type checker a message is `Any`; the name says which kind of value it is.
    from google.protobuf.message import Message


def encode(message: Message) -> bytes:
    """The canonical bytes of a Tree (or Directory) message, as its digest covers them."""
    data: bytes = message.SerializeToString(deterministic=True)
    return data


def recode(tree: Message, dir_key: Callable[[bytes], tuple[str, int]], file_digest: Callable[[str, int], tuple[str, int]],
           new_dir_digest: Callable[[bytes], tuple[str, int]]) -> Message:
    """The same tree under another digest function (the local store's blake3 <-> a remote
    cache's): `dir_key(bytes)` names a child Directory as `tree` names it, `file_digest(hash,
    size)` maps a file's digest, `new_dir_digest(bytes)` names a recoded Directory. Returns the
    new `Tree` message; the files' bytes are unchanged, so only their names move."""
    children = {dir_key(encode(c)): c for c in tree.children}
    done: dict[tuple[str, int], Message] = {}

    def convert(directory: Message) -> Message:
        new = pb.Directory()
        for f in directory.files:
            h, size = file_digest(f.digest.hash, f.digest.size_bytes)
            new.files.add(name=f.name, digest=pb.Digest(hash=h, size_bytes=size), is_executable=f.is_executable)
        for sub in directory.directories:
            key = (sub.digest.hash, sub.digest.size_bytes)
            if key not in done:
                child = children.get(key)
                if child is None:
                    raise ValueError(f"directory {sub.name} is missing from the tree")
                done[key] = convert(child)
            h, size = new_dir_digest(encode(done[key]))
            new.directories.add(name=sub.name, digest=pb.Digest(hash=h, size_bytes=size))
        for s in directory.symlinks:
            new.symlinks.add(name=s.name, target=s.target)
        return new

    out = pb.Tree(root=convert(tree.root))
    unique = {new_dir_digest(encode(c)): c for c in done.values()}
    for key in sorted(unique):
        out.children.add().CopyFrom(unique[key])
    return out


def file_digests(tree: Message) -> list[tuple[str, int]]:
    """Every file digest (hash, size) a Tree message names, in any digest function."""
    out = []
    for directory in [tree.root, *tree.children]:
        out += [(f.digest.hash, f.digest.size_bytes) for f in directory.files]
    return sorted(set(out))

