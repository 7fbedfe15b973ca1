"""engine/state/noop.py: a no-op record holds the stat of what the build read, never one taken after
the build; a file or directory that changed while the build ran is not recorded as proven."""
from __future__ import annotations

import os
import time

import pytest

from mcpp.engine.state import noop

ARGV = ["build"]
LINE = ("Finished", "dev in {elapsed}")


@pytest.fixture
def world(tmp_path, monkeypatch):
    monkeypatch.setenv("MCPP_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    source = tmp_path / "src/a.cpp"
    source.write_text("one")
    time.sleep(0.02)  # the build below begins a timestamp tick after the sources were written
    return tmp_path, str(source)


def _load(tmp_path):
    return noop.load_record(ARGV, str(tmp_path), os.environ)


def test_a_build_records_what_did_not_change_while_it_ran(world):
    tmp_path, source = world
    started = noop.begin(ARGV)
    assert noop.record(ARGV, LINE, [source], [str(tmp_path / "src")], 1, started)
    time.sleep(0.02)
    assert noop.holds(_load(tmp_path))


def test_a_file_saved_while_the_build_ran_is_not_recorded(world):
    tmp_path, source = world
    started = noop.begin(ARGV)
    time.sleep(0.02)
    with open(source, "w") as f:  # the same size, a later stamp: after the build read it
        f.write("two")
    assert not noop.record(ARGV, LINE, [source], [], 1, started)
    assert _load(tmp_path) is None  # the pending marker: the next build takes the full path


def test_the_stat_the_build_hashed_at_is_recorded_not_the_stat_after_it(world):
    tmp_path, source = world
    st = os.stat(source)
    hashed = (st.st_dev, st.st_ino, st.st_size + 1, st.st_mtime_ns, st.st_ctime_ns)  # what it read was other
    started = noop.begin(ARGV)
    assert noop.record(ARGV, LINE, [source], [], 1, started, read_stamp={source: hashed}.get)
    time.sleep(0.02)
    assert not noop.holds(_load(tmp_path))


def test_a_file_the_build_wrote_is_recorded(world):
    tmp_path, source = world
    started = noop.begin(ARGV)
    time.sleep(0.02)
    out = str(tmp_path / "a.o")
    with open(out, "w") as f:
        f.write("object")
    assert noop.record(ARGV, LINE, [source, out], [], 1, started, written={out})
    time.sleep(0.02)
    assert noop.holds(_load(tmp_path))


def test_a_directory_changed_while_the_build_ran_is_not_recorded(world):
    tmp_path, source = world
    started = noop.begin(ARGV)
    time.sleep(0.02)
    (tmp_path / "src/new.cpp").write_text("")
    assert not noop.record(ARGV, LINE, [source], [str(tmp_path / "src")], 1, started)


def test_a_build_that_could_not_mark_its_start_records_nothing(world):
    tmp_path, source = world
    assert not noop.record(ARGV, LINE, [source], [], 1, None)


def test_the_record_covers_every_module_of_the_engine():
    """An edited or upgraded engine must not trust a record an older one wrote: every `.py` under
    engine/, in whichever layer, is among the files a record holds."""
    from pathlib import Path

    from mcpp.engine.state import noop as noop_module

    engine = Path(noop_module.__file__).resolve().parents[1]
    expected = {str(p) for p in engine.rglob("*.py")}
    assert {str(Path(p).resolve()) for p in noop_module.engine_files()} == expected
    assert str(engine / "build" / "compose.py") in expected and str(engine / "entry.py") in expected


@pytest.mark.parametrize("paths", [1, 63, 64, 65, 200])
def test_the_paths_restamped_between_two_records_are_found_across_blocks(paths):
    """`noop.restamped` compares a block of paths at once, then path by path: every changed
    field of every path is found, at a block's edges too, and nothing else."""
    from array import array

    old = array("q", range(4 * paths))
    assert noop.restamped(array("q", old), old) == []
    for k in sorted({0, paths // 2, 63, 64, 127, 128, paths - 1}):
        if k >= paths:
            continue
        for field in range(4):
            new = array("q", old)
            new[4 * k + field] += 1
            assert noop.restamped(new, old) == [k], (k, field)
    new = array("q", old)
    every = list(range(0, paths, 3))
    for k in every:
        new[4 * k + 3] = -1
    assert noop.restamped(new, old) == every
