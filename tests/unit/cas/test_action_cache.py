"""ActionCache: entries round-trip, malformed entries are misses, manifests stay bounded."""
from __future__ import annotations

import os

import pytest

from mcpp.cas.action_cache import MANIFEST_SETS, ActionCache, ActionEntry
from mcpp.cas.digest import digest_bytes

KEY = "ab" + "0123456789abcdef" * 3 + "0123456789abcd"
KEY2 = "cd" + "f" * 62


def entry() -> ActionEntry:
    return ActionEntry(
        outputs={"obj/main.o": (digest_bytes(b"obj"), 0o644), "bin/app": (digest_bytes(b"elf"), 0o755)},
        exit_code=0,
        stdout=digest_bytes(b""),
        stderr=digest_bytes(b"warning: unused"),
        created=1700000000.5,
    )


@pytest.fixture
def ac(home) -> ActionCache:
    return ActionCache(home.ac)


def test_round_trip(ac, home):
    e = entry()
    assert ac.get(KEY) is None
    ac.put(KEY, e)
    assert ac.get(KEY) == e
    assert os.path.isfile(os.path.join(home.ac, KEY[:2], KEY[2:]))
    assert os.listdir(os.path.join(home.ac, KEY[:2])) == [KEY[2:]]  # no temp left behind


def test_an_entry_is_written_with_the_inputs_key_older_readers_require():
    """The keyed inputs live in the build's explain log, not in the store; the format-1 key
    `in` is still written (empty), since readers of that format require it."""
    import json

    assert json.loads(entry().to_json())["in"] == {}


def test_entry_without_streams(ac):
    e = ActionEntry(outputs={}, exit_code=1)
    ac.put(KEY, e)
    assert ac.get(KEY) == e


def test_blobs_lists_outputs_and_streams(ac):
    e = entry()
    assert e.blobs() == {
        digest_bytes(b"obj"), digest_bytes(b"elf"), digest_bytes(b""), digest_bytes(b"warning: unused")
    }


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"{not json",
        b'{"v": 99, "out": {}, "exit": 0, "stdout": null, "stderr": null, "in": {}, "t": 0}',
        b'{"v": 1, "out": {"a": ["zz/1", 420]}, "exit": 0, "stdout": null, "stderr": null, "in": {}, "t": 0}',
        b'{"v": 1, "out": {}, "exit": "0", "stdout": null, "stderr": null, "in": {}, "t": 0}',
        b'[1, 2, 3]',
        b"\xff\xfe",
    ],
)
def test_malformed_entry_is_a_miss_and_removed(ac, content):
    path = ac.path_of(KEY)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(content)
    assert ac.get(KEY) is None
    assert not os.path.exists(path)


def test_keys_must_be_hex(ac):
    with pytest.raises(ValueError):
        ac.get("../../etc/passwd")


def test_get_bumps_mtime_for_lru(ac):
    ac.put(KEY, entry())
    path = ac.path_of(KEY)
    os.utime(path, (1000, 1000))
    ActionCache(ac.root).get(KEY)
    assert os.stat(path).st_mtime > 1000


def test_a_read_within_the_hour_of_the_last_mark_leaves_the_mtime(ac):
    """The use mark holds to the hour (home.USE_MARK_S): an entry marked or written within it
    is read without a write to the file system; one an hour old is marked again."""
    import time

    from mcpp.cas.home import USE_MARK_S

    ac.put(KEY, entry())
    ac.add_manifest(KEY2, ["h.hpp"])
    recent = time.time() - USE_MARK_S / 2
    stale = time.time() - USE_MARK_S - 60
    for path in (ac.path_of(KEY), ac.path_of(KEY2, ".m")):
        os.utime(path, (recent, recent))
    fresh = ActionCache(ac.root)
    assert fresh.get(KEY) == entry() and fresh.get_manifest(KEY2) == [("h.hpp",)]
    assert os.stat(ac.path_of(KEY)).st_mtime == recent and os.stat(ac.path_of(KEY2, ".m")).st_mtime == recent
    for path in (ac.path_of(KEY), ac.path_of(KEY2, ".m")):
        os.utime(path, (stale, stale))
    again = ActionCache(ac.root)
    assert again.get(KEY) == entry() and again.get_manifest(KEY2) == [("h.hpp",)]
    assert os.stat(ac.path_of(KEY)).st_mtime > stale + 60 and os.stat(ac.path_of(KEY2, ".m")).st_mtime > stale + 60


def test_delete(ac):
    ac.put(KEY, entry())
    assert ac.delete(KEY) and ac.get(KEY) is None and not ac.delete(KEY)


def test_manifest_records_distinct_sets_most_recent_first(ac):
    assert ac.get_manifest(KEY) == []
    ac.add_manifest(KEY, ["b.h", "a.h"])
    ac.add_manifest(KEY, ["a.h", "c.h"])
    ac.add_manifest(KEY, ["a.h", "b.h", "a.h"])  # seen before: moves to the front
    assert ac.get_manifest(KEY) == [("a.h", "b.h"), ("a.h", "c.h")]
    assert ac.get(KEY) is None  # manifests and entries do not collide


def test_manifest_is_bounded(ac):
    for i in range(MANIFEST_SETS + 5):
        ac.add_manifest(KEY, [f"h{i}.h"])
    sets = ac.get_manifest(KEY)
    assert len(sets) == MANIFEST_SETS
    assert sets[0] == (f"h{MANIFEST_SETS + 4}.h",)


def test_malformed_manifest_is_empty(ac):
    path = ac.path_of(KEY, ".m")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"garbage")
    assert ac.get_manifest(KEY) == []
    ac.add_manifest(KEY, ["x.h"])
    assert ac.get_manifest(KEY) == [("x.h",)]


def test_iter_files_tells_entries_from_manifests(ac):
    ac.put(KEY, entry())
    ac.add_manifest(KEY2, ["x.h"])
    files = sorted((f.key, f.manifest) for f in ac.iter_files())
    assert files == [(KEY, False), (KEY2, True)]
