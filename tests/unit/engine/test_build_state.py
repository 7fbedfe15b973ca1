"""BuildState (each action's last run), ScanCache (the planner's scans) and KeyComputer."""
from __future__ import annotations

import os
import time

import pytest

from engine_testdata import open_state, write as _write

from mcpp.cas.action import Action, Platform
from mcpp.cas.digest import digest_bytes
from mcpp.cas.statcache import StatCache, StateDiscarded
from mcpp.engine.core.errors import ScanError
from mcpp.engine.state import incremental
from mcpp.engine.state.incremental import KeyComputer, ScanCache

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


def test_a_new_source_is_read_once_for_its_digest_module_scan_and_includes(execroot, state_dir, monkeypatch):
    """The build's scan cache (engine/build/memory.py) reads through the stat cache: a source it
    has not seen is opened once, and its digest, module scan and `#include` directives all come
    from those bytes; a second build stats it and opens nothing."""
    from mcpp.engine.build.memory import open_state as build_state

    src = _write(execroot, "src/m.cppm", '#include "m.h"\nexport module m;\nimport n;\n')
    opened = []
    real_open, real_os_open = open, os.open
    monkeypatch.setattr("builtins.open", lambda f, *a, **k: opened.append(f) or real_open(f, *a, **k))
    monkeypatch.setattr("os.open", lambda f, *a, **k: opened.append(f) or real_os_open(f, *a, **k))
    stats, _, scans = build_state(str(state_dir / "stat"), str(state_dir / "actions"), str(execroot),
                                  str(state_dir / "scans"))
    unit = scans.scan(src)
    assert (unit.module, unit.imports) == ("m", ("n",))
    assert scans.includes(src) == (('"', "m.h"),)
    assert stats.digest(src) == digest_bytes(b'#include "m.h"\nexport module m;\nimport n;\n')
    assert opened.count(src) == 1
    scans.save()
    stats.save()
    os.utime(state_dir / "stat", ns=(os.stat(src).st_mtime_ns + 10**9,) * 2)  # not racy
    _, _, again = build_state(str(state_dir / "stat"), str(state_dir / "actions"), str(execroot),
                              str(state_dir / "scans"))
    assert again.scan(src) == unit and again.includes(src) == (('"', "m.h"),)
    assert opened.count(src) == 1


def test_a_source_scanned_from_its_bytes_reads_as_a_text_file_does(execroot, state_dir):
    """Line ends `\\r\\n` and `\\r` read as `\\n` and undecodable bytes are replaced, as
    `open(..., errors="replace")` reads them: the scan answers the same unit, lines included."""
    data = b"// \xff\r\nmodule;\r#include <cstdio>\r\nexport module m;\r\nimport n;\r\n"
    src = _write(execroot, "src/m.cppm", "")
    with open(src, "wb") as f:
        f.write(data)
    stats = StatCache(state_dir / "stat")
    unit = ScanCache(str(state_dir / "scans"), stats.digest, stats.digest_and_bytes).scan(src)
    with open(src, encoding="utf-8", errors="replace") as f:
        assert unit == incremental.scan_source(f.read(), os.path.relpath(src))
    assert (unit.module, unit.imports, unit.global_fragment) == ("m", ("n",), True)


def test_a_source_the_scanner_refuses_is_named_relative_to_the_working_directory(execroot, state_dir,
                                                                                 monkeypatch):
    src = _write(execroot, "src/m.cppm", "export module m\nint x;\n")  # no `;`
    monkeypatch.chdir(execroot)
    stats = StatCache(state_dir / "stat")
    with pytest.raises(ScanError) as e:
        ScanCache(str(state_dir / "scans"), stats.digest, stats.digest_and_bytes).scan(src)
    assert e.value.pos.path == os.path.join("src", "m.cppm") and e.value.pos.line == 1


# -- KeyComputer -----------------------------------------------------------------------------

def test_key_follows_input_content(execroot, state_dir):
    _write(execroot, "src/a.txt", "one")
    keys = KeyComputer(open_state(execroot, state_dir), PLATFORM, {})
    k1 = keys.key(_action(), ())
    _write(execroot, "src/a.txt", "two!")
    assert KeyComputer(open_state(execroot, state_dir), PLATFORM, {}).key(_action(), ()) != k1


def test_a_key_is_computed_once_per_action_and_discovered_inputs_in_a_build(execroot, state_dir, monkeypatch):
    _write(execroot, "src/a.txt", "one")
    _write(execroot, "src/b.h", "b")
    keys = KeyComputer(open_state(execroot, state_dir), PLATFORM, {})
    computed = []
    real = incremental.action_key
    monkeypatch.setattr(incremental, "action_key", lambda *a, **k: computed.append(a[0].id) or real(*a, **k))
    a = _action()
    first = keys.key(a, ())
    assert keys.key(a, ()) == first  # the check asks twice, the finish once more
    with_header = keys.key(a, ("src/b.h",))
    assert with_header != first and keys.key(a, ("src/b.h",)) == with_header
    assert computed == ["cat a", "cat a"]


def test_without_a_sandbox_a_key_is_computed_each_time_it_is_asked(execroot, state_dir):
    """Under `--sandbox off` an action may read a file no prerequisite of its writes, which
    another action may rewrite after the first key: no key is remembered."""
    _write(execroot, "src/a.txt", "one")
    _write(execroot, "gen/h.h", "before")
    keys = KeyComputer(open_state(execroot, state_dir), PLATFORM, {}, memo=False)
    first = keys.key(_action(), ("gen/h.h",))
    _write(execroot, "gen/h.h", "generated meanwhile")
    keys.outputs_settled({"gen/h.h": digest_bytes(b"generated meanwhile")})
    assert keys.key(_action(), ("gen/h.h",)) != first


def test_an_action_that_rewrites_its_own_input_gets_the_key_of_what_it_left(execroot, state_dir):
    _write(execroot, "lib.a", "before")
    keys = KeyComputer(open_state(execroot, state_dir), PLATFORM, {})
    ar = _action(id="ar", argv=("ar", "r", "lib.a"), inputs=("lib.a",), outputs=("lib.a",))
    before = keys.key(ar, ())
    _write(execroot, "lib.a", "after!")
    keys.outputs_settled({"lib.a": digest_bytes(b"after!")})
    after = keys.key(ar, ())
    assert after != before  # recorded after the run: the next build computes this one from the file
    assert after == KeyComputer(open_state(execroot, state_dir), PLATFORM, {}).key(ar, ())


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


# -- KeyComputer with a server's knowledge (engine/state/unchanged.py) -------------------------------

def _known_build(execroot, state_dir, tool):
    """A first build of `link` (reads a source, the output of `gen`, and a tool): what it
    recorded and what it leaves for the next build."""
    from mcpp.engine.state.unchanged import learn

    _write(execroot, "src/a.txt", "one")
    _write(execroot, "gen/g.txt", "generated")
    _write(execroot, "out/l.txt", "linked")
    state = open_state(execroot, state_dir)
    keys = KeyComputer(state, PLATFORM, {})
    keys.outputs_settled({"gen/g.txt": digest_bytes(b"generated")})
    keys.outputs_settled({"out/l.txt": digest_bytes(b"linked")})
    link = _action(id="link", inputs=("src/a.txt", "gen/g.txt"), outputs=("out/l.txt",), tools=(tool,))
    key = keys.key(link, ())
    state.record(link.id, key, (), {"out/l.txt": str(digest_bytes(b"linked"))})
    # Saved a clock tick after the writes, as a build's end is: the stat cache then trusts the
    # stamps it recorded (a file stamped no older than the cache is racy, and hashed again).
    time.sleep(0.02)
    state.save()
    produced = {"gen/g.txt": digest_bytes(b"generated"), "out/l.txt": digest_bytes(b"linked")}
    return link, learn(execroot, {link.id: key}, produced, dict(keys.settled), dict(keys.tools))


def _next(execroot, state_dir, knowledge, gen=b"generated", rewritten=False):
    """The next build, `gen/g.txt` holding `gen`: written by its producer in this build
    (`rewritten`), else as its producer's (fresh) record says it was left."""
    from mcpp.engine.state.unchanged import Unchanged

    if gen != b"generated":
        _write(execroot, "gen/g.txt", gen.decode())
    keys = KeyComputer(open_state(execroot, state_dir), PLATFORM, {}, Unchanged(knowledge))
    keys.outputs_settled({}) if not rewritten else keys.outputs_settled({"gen/g.txt": digest_bytes(gen)})
    if not rewritten:
        keys.produced["gen/g.txt"] = digest_bytes(gen)  # as a fresh producer leaves it
    return keys


@pytest.fixture
def tool(tmp_path):
    path = tmp_path / "tool"
    path.write_text("v1")
    return str(path)


def test_known_unchanged_inputs_skip_the_key(execroot, state_dir, tool, monkeypatch):
    link, knowledge = _known_build(execroot, state_dir, tool)
    keys = _next(execroot, state_dir, knowledge)
    monkeypatch.setattr(incremental, "action_key", lambda *a, **k: pytest.fail("the key was computed"))
    assert keys.fresh(link)


CHANGES = {
    "a source": lambda execroot, tool: _write(execroot, "src/a.txt", "two!"),
    "the tool": lambda execroot, tool: open(tool, "w").write("v2!!"),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_changed_input_or_tool_computes_the_key(execroot, state_dir, tool, change):
    link, knowledge = _known_build(execroot, state_dir, tool)
    CHANGES[change](execroot, tool)
    assert not _next(execroot, state_dir, knowledge).fresh(link)


def test_a_producer_that_wrote_other_bytes_computes_the_key(execroot, state_dir, tool):
    """Rewritten in this build, or fresh under another record since (same key, other bytes)."""
    link, knowledge = _known_build(execroot, state_dir, tool)
    assert not _next(execroot, state_dir, knowledge, gen=b"regenerated", rewritten=True).fresh(link)
    assert not _next(execroot, state_dir, knowledge, gen=b"regenerated").fresh(link)
    assert _next(execroot, state_dir, knowledge, rewritten=True).fresh(link)  # same bytes: same key


def test_a_key_other_than_the_validated_one_computes_the_key(execroot, state_dir, tool, monkeypatch):
    link, knowledge = _known_build(execroot, state_dir, tool)
    knowledge.validated[link.id] = "another request's key"
    calls = []
    real = incremental.action_key
    monkeypatch.setattr(incremental, "action_key", lambda *a, **k: calls.append(1) or real(*a, **k))
    assert _next(execroot, state_dir, knowledge).fresh(link)  # the same inputs: fresh, by its key
    assert calls


def test_known_files_are_checked_together_once_not_per_action(execroot, state_dir, tool, monkeypatch):
    """With knowledge, the inputs and outputs of a fresh action are checked by one pass over
    every known file (`StatCache.holding`), not by a digest per path; only the tool is asked."""
    link, knowledge = _known_build(execroot, state_dir, tool)
    keys = _next(execroot, state_dir, knowledge)
    passes, asked = [], []
    real_holding, real_digest = StatCache.holding, StatCache.digest
    monkeypatch.setattr(StatCache, "holding", lambda self, files: passes.append(1) or real_holding(self, files))
    monkeypatch.setattr(StatCache, "digest", lambda self, path: asked.append(path) or real_digest(self, path))
    assert keys.fresh(link)
    assert keys.fresh(link)  # asked again: the pass is not repeated
    assert passes == [1] and asked == [tool]
    assert keys.proven["src/a.txt"] == str(digest_bytes(b"one"))


def test_a_racy_stat_cache_entry_is_not_proven_the_key_is_computed(execroot, state_dir, tool, monkeypatch):
    link, knowledge = _known_build(execroot, state_dir, tool)
    _write(execroot, "src/a.txt", "one")  # the same bytes, a new stamp: the cache's entry no longer holds
    keys = _next(execroot, state_dir, knowledge)
    calls = []
    real = incremental.action_key
    monkeypatch.setattr(incremental, "action_key", lambda *a, **k: calls.append(1) or real(*a, **k))
    assert keys.fresh(link) and calls
    assert "src/a.txt" not in keys.proven


def test_an_action_reading_a_file_the_watcher_saw_rewritten_skips_the_pass(execroot, state_dir, tool):
    """The edited unit's key is computed at once: its compile does not wait for the pass over
    every known file (which runs when the first other action is checked)."""
    from mcpp.engine.state.unchanged import Unchanged

    link, knowledge = _known_build(execroot, state_dir, tool)
    _write(execroot, "src/a.txt", "two!")
    known = Unchanged(knowledge, touched={"src/a.txt"})
    keys = KeyComputer(open_state(execroot, state_dir), PLATFORM, {}, known)
    keys.produced["gen/g.txt"] = digest_bytes(b"generated")
    assert not keys.fresh(link)
    assert known._proven is None and keys.proven == {}


def test_the_next_knowledge_carries_the_proven_files(execroot, state_dir, tool):
    from mcpp.engine.state.unchanged import learn

    link, knowledge = _known_build(execroot, state_dir, tool)
    keys = _next(execroot, state_dir, knowledge)
    assert keys.fresh(link)
    again = learn(str(execroot), {link.id: link.id}, keys.produced, keys.settled, keys.tools, keys.proven)
    assert again.digests == knowledge.digests


def test_key_parts_made_ahead_are_the_ones_the_key_makes_and_follow_a_later_output(execroot, state_dir):
    """`encode_ahead` (the fresh inputs of an action still waiting) makes the parts `key` finds
    made; a file an action produces afterwards in the build is keyed by its new digest."""
    _write(execroot, "src/a.txt", "a")
    _write(execroot, "src/b.txt", "b")
    link = _action(id="join", argv=("join",), inputs=("src/a.txt", "src/b.txt"), outputs=("out/ab",))
    state = open_state(execroot, state_dir)
    plain = KeyComputer(state, PLATFORM, {}).key(link, ())
    ahead = KeyComputer(state, PLATFORM, {})
    ahead.encode_ahead(["src/a.txt", "src/b.txt"])
    assert set(ahead.encoded) == {"src/a.txt", "src/b.txt"}
    assert ahead.key(link, ()) == plain
    later = KeyComputer(state, PLATFORM, {})
    later.encode_ahead(["src/b.txt"])
    later.outputs_settled({"src/b.txt": digest_bytes(b"made in this build")})
    assert later.key(link, ()) != plain


def test_a_produced_outputs_key_part_is_made_once_and_made_again_when_produced_anew(execroot, state_dir):
    """A clean build's link is keyed when checked and again when it ends, over every object it
    reads: each object's part is made once; one produced anew (an action that rewrites it) is
    keyed by its new digest."""
    _write(execroot, "obj/a.o", "first")
    state = open_state(execroot, state_dir)
    keys = KeyComputer(state, PLATFORM, {})
    keys.outputs_settled({"obj/a.o": digest_bytes(b"first")})
    part = keys._encoded("obj/a.o")
    assert keys.encoded["obj/a.o"] is part and keys._encoded("obj/a.o") is part
    link = _action(id="link", argv=("ld",), inputs=("obj/a.o",), outputs=("bin/app",))
    first = KeyComputer(state, PLATFORM, {}, memo=False)
    first.outputs_settled({"obj/a.o": digest_bytes(b"first")})
    k1 = first.key(link, ())
    _write(execroot, "obj/a.o", "second")
    first.outputs_settled({"obj/a.o": digest_bytes(b"second")})
    assert "obj/a.o" not in first.encoded and first.key(link, ()) != k1
