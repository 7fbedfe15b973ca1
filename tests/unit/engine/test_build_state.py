"""BuildState (each action's last run), ScanCache (the planner's scans) and KeyComputer."""
from __future__ import annotations

import os

import pytest

from engine_testdata import open_state, write as _write

from mcpp.cas.action import Action, Platform
from mcpp.cas.digest import digest_bytes
from mcpp.cas.statcache import StatCache, StateDiscarded
from mcpp.engine import incremental
from mcpp.engine.incremental import KeyComputer, ScanCache

PLATFORM = Platform("gcc 13 x86_64-linux-gnu", "x86_64-linux-gnu")


def _action(**kw) -> Action:
    fields = dict(id="cat a", argv=("cat", "src/a.txt"), inputs=("src/a.txt",), outputs=("out/a.txt",))
    fields.update(kw)
    return Action(**fields)


# -- BuildState ------------------------------------------------------------------------------

def test_state_round_trips_records_through_its_file(execroot, state_dir):
    state = open_state(execroot, state_dir)
    assert state.recorded("a") is None
    state.record("a", "k1", ("inc/a.h",), {"out/a.o": "d/1"})
    state.record("b", "k2", (), {})
    state.save()
    again = open_state(execroot, state_dir)
    assert again.recorded("a") == ("k1", ("inc/a.h",), {"out/a.o": "d/1"})
    assert again.discovered("a") == ("inc/a.h",) and again.discovered("missing") == ()
    again.forget("b")
    again.save()
    assert open_state(execroot, state_dir).recorded("b") is None


def test_state_from_another_format_starts_over(execroot, state_dir):
    state_dir.mkdir(parents=True)
    import marshal
    (state_dir / "actions").write_bytes(marshal.dumps(("mcpp-state-2", {"a": ("k", (), {})}, {}, {})))
    assert open_state(execroot, state_dir).recorded("a") is None
    (state_dir / "actions").write_bytes(b"not marshal")  # damaged, not merely old: said once
    with pytest.warns(StateDiscarded, match="unreadable; discarded"):
        assert open_state(execroot, state_dir).recorded("a") is None


def test_state_digests_missing_files_as_missing(execroot, state_dir):
    state = open_state(execroot, state_dir)
    assert state.digest("nope.txt").hash == "missing"
    _write(execroot, "src/a.txt", "one")
    assert state.digest("src/a.txt") == digest_bytes(b"one")


def test_remember_output_saves_the_next_build_a_hash(execroot, state_dir):
    path = _write(execroot, "out/a.txt", "made")
    state = open_state(execroot, state_dir)
    state.remember_output("out/a.txt", digest_bytes(b"made"))
    state.save()
    os.utime(state_dir / "stat", ns=(os.stat(path).st_mtime_ns + 10**9,) * 2)  # not racy
    again = open_state(execroot, state_dir)
    assert again.digest("out/a.txt") == digest_bytes(b"made")
    assert again.files_hashed == 0


# -- ScanCache -------------------------------------------------------------------------------

def test_scan_cache_reads_each_content_once_and_persists_in_its_own_file(execroot, state_dir, monkeypatch):
    src = _write(execroot, "src/m.cppm", "export module m;\nimport n;\n")
    calls = []
    real = incremental.scan_source
    monkeypatch.setattr(incremental, "scan_source", lambda text, name: calls.append(name) or real(text, name))
    stats = StatCache(state_dir / "stat")
    scans = ScanCache(str(state_dir / "scans"), stats.digest)
    unit = scans.scan(src)
    assert (unit.module, unit.exported, unit.imports) == ("m", True, ("n",))
    assert scans.scan(src) == unit and len(calls) == 1
    scans.save()
    assert (state_dir / "scans").is_file() and not (state_dir / "actions").exists()
    again = ScanCache(str(state_dir / "scans"), StatCache(state_dir / "stat").digest)
    assert again.scan(src) == unit and len(calls) == 1  # answered from the file


def test_scan_cache_caches_include_directives(execroot, state_dir, monkeypatch):
    src = _write(execroot, "src/a.cpp", '#include "a.h"\n')
    stats = StatCache(state_dir / "stat")
    scans = ScanCache(str(state_dir / "scans"), stats.digest)
    first = scans.includes(src)
    monkeypatch.setattr(incremental, "parse_includes", lambda data: (_ for _ in ()).throw(AssertionError))
    assert scans.includes(src) == first


# -- KeyComputer -----------------------------------------------------------------------------

def test_key_follows_input_content(execroot, state_dir):
    _write(execroot, "src/a.txt", "one")
    keys = KeyComputer(open_state(execroot, state_dir), PLATFORM, {})
    k1 = keys.key(_action(), ())
    _write(execroot, "src/a.txt", "two!")
    assert KeyComputer(open_state(execroot, state_dir), PLATFORM, {}).key(_action(), ()) != k1


def test_digest_of_prefers_this_builds_outputs_then_generated_files(execroot, state_dir):
    _write(execroot, "gen/x.h", "on disk")
    keys = KeyComputer(open_state(execroot, state_dir), PLATFORM, {"gen/x.h": b"planned"})
    assert keys.digest_of("gen/x.h") == digest_bytes(b"planned")
    keys.outputs_settled({})
    _write(execroot, "gen/x.h", "produced")
    keys.outputs_settled({"gen/x.h": digest_bytes(b"produced")})
    assert keys.digest_of("gen/x.h") == digest_bytes(b"produced")


def test_fresh_needs_the_same_key_and_intact_outputs(execroot, state_dir):
    _write(execroot, "src/a.txt", "one")
    state = open_state(execroot, state_dir)
    keys = KeyComputer(state, PLATFORM, {})
    a = _action()
    assert not keys.fresh(a)
    _write(execroot, "out/a.txt", "one")
    out = digest_bytes(b"one")
    keys.outputs_settled({"out/a.txt": out})
    state.record(a.id, keys.key(a, ()), (), {"out/a.txt": str(out)})
    assert keys.fresh(a)
    _write(execroot, "out/a.txt", "tampered")
    assert not KeyComputer(state, PLATFORM, {}).fresh(a)
    _write(execroot, "out/a.txt", "one")
    assert KeyComputer(state, PLATFORM, {}).fresh(a)
    assert not KeyComputer(state, PLATFORM, {}).fresh(_action(argv=("cat", "-n", "src/a.txt")))
