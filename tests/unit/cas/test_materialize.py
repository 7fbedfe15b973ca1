"""Materializer: read-only decompressed files, hard links into place, copy across devices."""
from __future__ import annotations

import errno
import os

import pytest

from mcpp.cas.blobstore import CorruptBlob
from mcpp.cas.materialize import Materializer
from cas_testdata import flip_byte, object_like


@pytest.fixture
def mat(store, home) -> Materializer:
    return Materializer(store, home.mat)


def entries(directory) -> list[str]:
    return sorted(os.listdir(directory))


def test_path_is_a_read_only_decompressed_file(mat, store, home):
    data = object_like(30_000)
    d = store.put(data)
    p = mat.path(d)
    assert p == os.path.join(home.mat, d.hash[:2], d.hash[2:])
    assert open(p, "rb").read() == data
    assert os.stat(p).st_mode & 0o777 == 0o444
    assert mat.path(d) == p and mat.created == 1  # reused, not rewritten


def test_executable_variant_is_a_separate_inode(mat, store):
    d = store.put(b"\x7fELF...")
    plain, exe = mat.path(d), mat.path(d, executable=True)
    assert exe == plain + ".x"
    assert os.stat(exe).st_mode & 0o777 == 0o555
    assert os.stat(plain).st_ino != os.stat(exe).st_ino


def test_large_blob_is_streamed_into_place(mat, store, tmp_path):
    data = object_like(9 << 20, seed=7)
    src = tmp_path / "big"
    src.write_bytes(data)
    d = store.put_file(src)
    assert open(mat.path(d), "rb").read() == data


def test_link_into_hard_links_and_replaces_existing_dest(mat, store, tmp_path):
    d = store.put(b"object bytes")
    dest = tmp_path / "target" / "obj" / "main.o"
    dest.parent.mkdir(parents=True)
    dest.write_bytes(b"stale output of an older build")
    mat.link_into(d, dest)
    st = os.stat(dest)
    assert os.path.samestat(st, os.stat(mat.path(d)))
    assert st.st_nlink >= 2 and st.st_mode & 0o777 == 0o444
    assert dest.read_bytes() == b"object bytes"
    assert entries(dest.parent) == ["main.o"]  # no temp name left beside it
    assert mat.linked == 1


def test_link_into_creates_missing_parent_directories(mat, store, tmp_path):
    d = store.put(b"x")
    dest = tmp_path / "a" / "b" / "c.o"
    mat.link_into(d, dest)
    assert dest.read_bytes() == b"x"


def test_link_into_leaves_an_up_to_date_dest_alone(mat, store, tmp_path):
    d = store.put(b"same")
    dest = tmp_path / "out"
    mat.link_into(d, dest)
    ino = os.stat(dest).st_ino
    mat.link_into(d, dest)
    assert os.stat(dest).st_ino == ino and mat.unchanged == 1 and mat.linked == 1


def test_link_into_copies_when_hard_links_cross_devices(mat, store, tmp_path, monkeypatch):
    d = store.put(b"#!/bin/sh\necho hi\n")
    src = mat.path(d, executable=True)

    def no_link(a, b, **kw):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", no_link)
    dest = tmp_path / "bin" / "hi"
    dest.parent.mkdir()
    dest.write_bytes(b"old")
    mat.link_into(d, dest, executable=True)
    assert dest.read_bytes() == b"#!/bin/sh\necho hi\n"
    assert os.stat(dest).st_ino != os.stat(src).st_ino
    assert os.stat(dest).st_mode & 0o777 == 0o555
    assert entries(dest.parent) == ["hi"] and mat.copied == 1


def test_other_link_errors_are_not_swallowed(mat, store, tmp_path, monkeypatch):
    d = store.put(b"x")
    mat.path(d)

    def denied(a, b, **kw):
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(os, "link", denied)
    with pytest.raises(OSError, match="I/O error"):
        mat.link_into(d, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_tampered_file_is_recreated(mat, store):
    d = store.put(b"pristine contents")
    p = mat.path(d)
    os.chmod(p, 0o644)
    with open(p, "ab") as f:
        f.write(b" + an edit through some hard link")
    p2 = mat.path(d)
    assert p2 == p and open(p).read() == "pristine contents"
    assert os.stat(p).st_mode & 0o777 == 0o444 and mat.created == 2


def test_mode_change_is_recreated(mat, store):
    d = store.put(b"data")
    p = mat.path(d)
    os.chmod(p, 0o644)
    mat.path(d)
    assert os.stat(p).st_mode & 0o777 == 0o444


def test_corrupt_blob_leaves_nothing_materialized(mat, store, local, home):
    d = store.put(object_like(50_000))
    path = local.path_of(d)
    flip_byte(path, os.path.getsize(path) // 2)
    with pytest.raises(CorruptBlob):
        mat.path(d)
    shard = os.path.join(home.mat, d.hash[:2])
    assert not os.path.exists(shard) or entries(shard) == []
    assert store.healed == [d]


def test_blob_removed_between_materialize_and_link_is_recreated(mat, store, tmp_path, monkeypatch):
    d = store.put(b"gc raced us")
    p = mat.path(d)
    real_link = os.link
    calls = []

    def link_after_gc(a, b, **kw):
        if not calls:
            calls.append(1)
            os.unlink(p)  # a concurrent gc removes the materialized file
        return real_link(a, b, **kw)

    monkeypatch.setattr(os, "link", link_after_gc)
    mat.link_into(d, tmp_path / "out")
    assert (tmp_path / "out").read_bytes() == b"gc raced us"


def test_concurrent_materialize_and_link_never_sees_the_file_missing(tmp_path):
    """Publishing with rename would race with a concurrent link(2) of the same path (ENOENT
    while the old inode's link count drops to zero); publishing with link does not."""
    import threading

    from mcpp.cas.digest import digest_file
    from mcpp.cas.local_store import LocalZstdStore
    from mcpp.cas.materialize import Materializer
    from mcpp.cas.verifying_store import VerifyingStore

    errors = []
    for round_ in range(150):
        root = tmp_path / f"r{round_}"
        root.mkdir()
        local = LocalZstdStore(root / "cas")
        store = VerifyingStore(local)
        mat = Materializer(store, root / "mat")
        src = root / "h.hpp"
        src.write_text("x" * 100 + str(round_))

        def worker(i, src=src, root=root, local=local, store=store, mat=mat):
            d = digest_file(src)
            if not local.has(d):
                d = store.put_file(src)
            try:
                os.link(mat.path(d), root / f"linked-{i}")
            except FileNotFoundError:
                errors.append((round_, i))

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []


def test_publish_file_fills_the_area_from_a_local_file_only_when_its_bytes_match(tmp_path):
    from mcpp.cas.digest import digest_bytes
    from mcpp.cas.local_store import LocalZstdStore
    from mcpp.cas.materialize import Materializer
    from mcpp.cas.verifying_store import VerifyingStore

    mat = Materializer(VerifyingStore(LocalZstdStore(tmp_path / "cas")), tmp_path / "mat")
    src = tmp_path / "out.o"
    src.write_bytes(b"object bytes")
    d = digest_bytes(b"object bytes")
    p = mat.publish_file(d, src)
    assert p is not None and open(p, "rb").read() == b"object bytes"
    assert oct(os.stat(p).st_mode & 0o777) == oct(0o444)
    assert not os.path.samestat(os.stat(p), os.stat(src))  # a copy: target/ keeps its own inode
    src.write_bytes(b"changed since hashed")
    other = digest_bytes(b"something else")
    assert mat.publish_file(other, src) is None  # never publishes bytes under the wrong name
    assert not os.path.exists(mat._mat_path(other, False))


def test_publish_file_hands_the_identity_of_an_entry_it_found_to_a_caller_that_asks(tmp_path):
    """`seen`: a prepared tree (sandbox/input_tree.py) links by identity; the stat that found
    the entry in place gives it, so the tree needs none of its own. An entry made by this call
    is not named (the tree stats it)."""
    from mcpp.cas.digest import digest_bytes
    from mcpp.cas.local_store import LocalZstdStore
    from mcpp.cas.verifying_store import VerifyingStore

    mat = Materializer(VerifyingStore(LocalZstdStore(tmp_path / "cas")), tmp_path / "mat")
    src = tmp_path / "out.o"
    src.write_bytes(b"object bytes")
    d = digest_bytes(b"object bytes")
    seen: dict = {}
    p = mat.publish_file(d, src, seen=seen)
    assert p is not None and seen == {}
    assert mat.publish_file(d, src, seen=seen) == p
    st = os.stat(p)
    assert seen == {p: (st.st_dev, st.st_ino)}


@pytest.mark.parametrize("size", [300, (1 << 20) + 1])  # read whole; streamed
def test_publish_file_leaves_no_temporary_file_whether_it_publishes_or_refuses(tmp_path, size):
    from mcpp.cas.digest import digest_bytes
    from mcpp.cas.local_store import LocalZstdStore
    from mcpp.cas.materialize import Materializer
    from mcpp.cas.verifying_store import VerifyingStore

    mat = Materializer(VerifyingStore(LocalZstdStore(tmp_path / "cas")), tmp_path / "mat")
    data = os.urandom(size)
    src = tmp_path / "src.cpp"
    src.write_bytes(data)
    d = digest_bytes(data)
    p = mat.publish_file(d, src, executable=True)
    assert p is not None and open(p, "rb").read() == data and oct(os.stat(p).st_mode & 0o777) == oct(0o555)
    assert os.listdir(os.path.dirname(p)) == [os.path.basename(p)]
    src.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))  # same size, other bytes, since it was hashed
    other = digest_bytes(b"x" * size)
    assert mat.publish_file(other, src) is None
    assert not os.path.exists(mat._mat_path(other, False))
    left = [f for _, _, files in os.walk(tmp_path / "mat") for f in files]
    assert left == [os.path.basename(p)]  # no temporary name, no entry under the wrong name


def test_copy_into_is_an_independent_read_only_copy_replacing_the_destination(mat, store, tmp_path):
    """Outputs restored into `target/` have the modes a staged input has (0444, 0555), so an
    action under `--sandbox off`, reading them in place, sees what a sandboxed one sees."""
    d = store.put(b"\x7fELF...")
    dest = tmp_path / "target" / "app"
    dest.parent.mkdir()
    dest.write_bytes(b"old")
    os.chmod(dest, 0o444)
    mat.copy_into(d, dest, executable=True)
    assert dest.read_bytes() == b"\x7fELF..." and os.stat(dest).st_mode & 0o777 == 0o555
    assert os.stat(dest).st_ino != os.stat(mat.path(d, executable=True)).st_ino
    mat.copy_into(d, tmp_path / "target" / "data")
    assert os.stat(tmp_path / "target" / "data").st_mode & 0o777 == 0o444


@pytest.mark.parametrize("size", [12, (1 << 20) + 5], ids=["read-whole", "streamed"])
def test_copy_into_repairs_an_area_file_changed_in_place(mat, store, tmp_path, size):
    """Same size and mode, other bytes (someone chmod-ed and wrote it): the copy in target/ gets
    the store's verified bytes, and the area's file is re-created from them."""
    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    d = store.put(data)
    area = mat.path(d)
    os.chmod(area, 0o644)
    with open(area, "r+b") as f:
        f.write(b"Z")
    os.chmod(area, 0o444)
    dest = tmp_path / "target" / "out.o"
    mat.copy_into(d, dest)
    assert dest.read_bytes() == data and mat.repaired == 1
    assert open(mat.path(d), "rb").read() == data
    assert os.stat(dest).st_mode & 0o777 == 0o444
    assert [n for n in os.listdir(dest.parent) if n.startswith(".tmp-")] == []


def test_copy_into_a_small_blob_the_area_lacks_writes_the_stores_bytes_and_materializes_nothing(mat, store, local,
                                                                                                  tmp_path):
    """A depfile is restored into `target/` but never staged: its restore costs no file in the area."""
    d = store.put(b"target/a.o: src/a.cpp include/a.hpp\n")
    dest = tmp_path / "target" / "a.o.d"
    mat.copy_into(d, dest)
    assert dest.read_bytes() == b"target/a.o: src/a.cpp include/a.hpp\n"
    assert os.stat(dest).st_mode & 0o777 == 0o444
    assert not os.path.exists(mat._mat_path(d, False)) and mat.created == 0
    flip_byte(local.path_of(d), os.path.getsize(local.path_of(d)) // 2)  # verified on the way
    with pytest.raises(CorruptBlob):
        mat.copy_into(d, tmp_path / "target" / "b.o.d")
    assert not os.path.exists(tmp_path / "target" / "b.o.d")


def test_copy_into_repairs_an_area_file_whose_mode_was_changed(mat, store, tmp_path):
    """A writable area file could be written through a sandbox's hard link: a restore that reads
    it puts the read-only copy back."""
    d = store.put(b"object")
    area = mat.path(d)
    os.chmod(area, 0o644)
    mat.copy_into(d, tmp_path / "out.o")
    assert (tmp_path / "out.o").read_bytes() == b"object"
    assert os.stat(mat.path(d)).st_mode & 0o777 == 0o444


@pytest.mark.parametrize("planted", ["fifo", "symlink", "larger file"])
def test_copy_into_repairs_an_area_entry_replaced_by_something_else_without_reading_it(mat, store, tmp_path, planted):
    """A FIFO would block the restore, a link to /dev/zero or a huge file would be read whole:
    the entry is checked (a regular file of the blob's size and mode) before it is read."""
    d = store.put(b"object bytes")
    area = mat.path(d)
    os.chmod(area, 0o644)
    os.unlink(area)
    if planted == "fifo":
        os.mkfifo(area)
    elif planted == "symlink":
        os.symlink("/dev/zero", area)
    else:
        with open(area, "wb") as f:
            f.truncate(1 << 30)
        os.chmod(area, 0o444)
    mat.copy_into(d, tmp_path / "out.o")
    assert (tmp_path / "out.o").read_bytes() == b"object bytes"
    assert mat.repaired == 1 and open(mat.path(d), "rb").read() == b"object bytes"
