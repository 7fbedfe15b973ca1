"""The blake3 -> SHA-256 side index: persistent, append-only, tolerant of torn lines."""
from __future__ import annotations

import threading

import pytest

from mcpp.cas.digest import digest_bytes
from mcpp.cas.remote.digests import SHA256
from mcpp.cas.remote.side_index import SideIndex


def pair(i: int):
    data = f"blob {i}".encode()
    return digest_bytes(data), SHA256.of_bytes(data)


def test_pairs_survive_a_new_instance(tmp_path):
    path = tmp_path / "remote" / "sha256.idx"
    idx = SideIndex(path)
    pairs = [pair(i) for i in range(100)]
    for local, remote in pairs:
        idx.add(local, remote)
    idx.flush()
    again = SideIndex(path)
    assert all(again.get(local) == remote for local, remote in pairs)
    assert again.get(digest_bytes(b"unknown")) is None
    assert len(path.read_text().splitlines()) == 100


def test_adding_a_known_pair_appends_nothing(tmp_path):
    path = tmp_path / "idx"
    idx = SideIndex(path)
    local, remote = pair(1)
    idx.add(local, remote)
    idx.add(local, remote)
    idx.flush()
    assert len(path.read_text().splitlines()) == 1


def test_torn_and_damaged_lines_are_skipped(tmp_path):
    path = tmp_path / "idx"
    (l1, r1), (l2, r2), (l3, r3) = pair(1), pair(2), pair(3)
    path.write_text(f"{l1.hash}/{l1.size} {r1.hash}\n"
                    f"{l2.hash}/{l2.size} {r2.hash[:30]}"  # torn by a crash: no newline, short hash
                    f"{l3.hash}/{l3.size} {r3.hash}\n"  # ... so this one is glued to it and lost
                    "zz/1 " + "q" * 64 + "\n"
                    "\x00\x01garbage\n")
    idx = SideIndex(path)
    assert idx.get(l1) == r1
    assert idx.get(l2) is None and idx.get(l3) is None
    idx.add(l3, r3)
    idx.flush()
    assert SideIndex(path).get(l3) == r3


def test_sizes_must_agree(tmp_path):
    local, remote = pair(1)
    with pytest.raises(ValueError):
        SideIndex(tmp_path / "idx").add(local, type(remote)(remote.hash, remote.size + 1))


def test_concurrent_writers_lose_no_whole_lines(tmp_path):
    path = tmp_path / "idx"
    writers = [SideIndex(path) for _ in range(4)]

    def work(w: SideIndex, base: int) -> None:
        for i in range(base, base + 500):
            w.add(*pair(i))
            if i % 50 == 0:
                w.flush()
        w.flush()

    threads = [threading.Thread(target=work, args=(w, n * 500)) for n, w in enumerate(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    idx = SideIndex(path)
    assert len(idx) == 2000
    assert all(idx.get(pair(i)[0]) == pair(i)[1] for i in range(0, 2000, 37))


def test_a_file_of_mostly_duplicates_is_compacted(tmp_path):
    path = tmp_path / "idx"
    local, remote = pair(7)
    path.write_text(f"{local.hash}/{local.size} {remote.hash}\n" * 12_000)
    assert SideIndex(path).get(local) == remote
    assert path.read_text().count("\n") == 1
