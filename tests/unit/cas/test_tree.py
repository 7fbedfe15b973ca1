"""Tree outputs in the store (cas/tree.py): a directory becomes a REAPI `Tree` whose digest names
it; restoring gives back the same files, modes, empty directories and inner symlinks, and a
symlink that leaves the directory is refused."""
from __future__ import annotations

import os

import pytest

from mcpp.cas import tree
from mcpp.cas.materialize import Materializer
from mcpp.cas.remote import protocol as pb


def make(root, files: dict[str, str], exe=(), links=None, empty=()):
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        if rel in exe:
            p.chmod(0o755)
    for rel, target in (links or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, root / rel)
    for rel in empty:
        (root / rel).mkdir(parents=True)
    return root


def snapshot(root) -> dict:
    out = {}
    for dirpath, dirs, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for d in dirs:
            out[os.path.normpath(os.path.join(rel, d)) + "/"] = "dir"
        for f in files:
            p = os.path.join(dirpath, f)
            key = os.path.normpath(os.path.join(rel, f))
            out[key] = ("link", os.readlink(p)) if os.path.islink(p) else \
                (open(p).read(), bool(os.stat(p).st_mode & 0o111))
    return out


def test_a_directory_round_trips_with_modes_empty_dirs_and_inner_links(tmp_path, store, home):
    src = make(tmp_path / "src", {"a.txt": "A", "sub/b.sh": "#!/bin/sh\n", "sub/deep/c": "C"},
               exe={"sub/b.sh"}, links={"sub/to_a": "../a.txt"}, empty=("void",))
    d = tree.capture(str(src), store)
    assert [e.path for e in tree.entries(d, store)] == ["a.txt", "sub/b.sh", "sub/deep/c", "sub/to_a"]
    for copy_into in (None, Materializer(store, home.mat).copy_into):
        dest = tmp_path / f"dest-{copy_into is None}"
        dest.mkdir()
        (dest / "stale").write_text("old")  # replaced whole
        tree.materialize(d, store, str(dest), copy_into)
        assert snapshot(dest) == snapshot(src)


def test_the_digest_depends_on_content_and_modes_not_on_where_or_when(tmp_path, store):
    one = tree.capture(str(make(tmp_path / "one", {"x/y": "1", "z": "2"})), store)
    two = tree.capture(str(make(tmp_path / "two", {"z": "2", "x/y": "1"})), store)
    assert one == two
    three = make(tmp_path / "three", {"x/y": "1", "z": "2"}, exe={"z"})
    assert tree.capture(str(three), store) != one


def test_the_stored_value_is_a_reapi_tree(tmp_path, store):
    d = tree.capture(str(make(tmp_path / "t", {"a": "A", "s/b": "B"})), store)
    message = pb.Tree()
    message.ParseFromString(store.get(d))
    assert [f.name for f in message.root.files] == ["a"]
    assert [s.name for s in message.root.directories] == ["s"]
    assert [f.name for f in message.children[0].files] == ["b"]
    assert tree.blobs(d, store) == sorted({e.digest for e in tree.entries(d, store)})


@pytest.mark.parametrize("link_at,target", [
    ("out", "/etc/passwd"),
    ("out", "../outside"),
    ("sub/out", "../../outside"),
    ("sub/out", "../sub/../../x"),
])
def test_a_symlink_that_leaves_the_directory_is_refused(tmp_path, store, link_at, target):
    src = make(tmp_path / "src", {"sub/keep": "k"}, links={link_at: target})
    with pytest.raises(tree.TreeError, match=f"{link_at} is a symbolic link to `{target}`, which leaves"):
        tree.capture(str(src), store)


def test_a_hard_link_to_another_file_is_refused(tmp_path, store):
    outside = tmp_path / "host-file"
    outside.write_text("host")
    src = tmp_path / "src"
    src.mkdir()
    os.link(outside, src / "stolen")
    with pytest.raises(tree.TreeError, match="stolen is a hard link"):
        tree.capture(str(src), store)


def test_gc_keeps_the_files_of_a_tree_output_its_entry_names(tmp_path, home, store, local):
    from mcpp.cas.action_cache import ActionCache, ActionEntry
    from mcpp.cas.maintenance import gc
    src = make(tmp_path / "src", {"a.txt": "only inside the tree", "sub/b": "me too"})
    d = tree.capture(str(src), store)
    files = tree.blobs(d, store)
    ActionCache(home.ac).put("ab" + "e" * 62, ActionEntry(outputs={"gen/docs/": (d, 0o555)}))
    gc(home, grace_s=0)
    assert local.has(d) and all(local.has(f) for f in files)
    dest = tmp_path / "dest"
    tree.materialize(d, store, str(dest))
    assert (dest / "sub" / "b").read_text() == "me too"


@pytest.mark.parametrize("name,target", [("evil", "/etc"), ("evil", "../../x"), ("..", None), ("a/b", None)])
def test_a_stored_tree_naming_a_way_out_is_refused_before_anything_is_written(tmp_path, store, name, target):
    # A tree may come from a remote cache: its names and links are checked again on restore.
    root = pb.Directory()
    if target is None:
        root.files.add(name=name, digest=pb.Digest(hash=store.put(b"x").hash, size_bytes=1))
    else:
        root.symlinks.add(name=name, target=target)
    d = store.put(pb.Tree(root=root).SerializeToString(deterministic=True))
    with pytest.raises(tree.TreeError):
        tree.materialize(d, store, str(tmp_path / "dest"))
    assert not (tmp_path / "dest").exists()
