"""A server's copy of the incremental state kept in step with its builds (engine/server/state_memo.py
`changes` / `take_changes`, warm.py `on_reply`): a build child hands back what it changed of the
objects it was given, and the server's copy with those changes applied is exactly what loading
the files the child saved gives; where the copy was not the child's starting point, or the files
were rewritten since, the server reads the files as before."""
from __future__ import annotations

import os
import time

import pytest

from mcpp.engine.server import state_memo, warm
from mcpp.engine.server.child_memory import ChildMemory, hand


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "w"
    (root / "src").mkdir(parents=True)
    for name in "abcde":
        (root / "src" / f"{name}.cpp").write_text(f'#include "{name}.hpp"\nint {name}() {{ return 1; }}\n')
    state = root / "target" / ".mcpp"
    state.mkdir(parents=True)
    paths = (str(state / "stat"), str(state / "actions"), str(root), str(state / "scans"))
    return root, paths


def _first_build(root, paths) -> None:
    stats, state, scans = state_memo.load(paths)
    for name in "abcde":
        src = str(root / "src" / f"{name}.cpp")
        scans.includes(src)
        state.record(f"compile {name}", f"key-{name}", (f"src/{name}.hpp",), {f"obj/{name}.o": "d/1"})
    _save((stats, state, scans))


def _save(objects) -> None:
    stats, state, scans = objects
    state.save()  # saves the stat cache first, as a build's `_save_records` does
    scans.save()


def _an_edit_build(root, objects) -> None:
    """What an edit's build does to the state: a source edited (hashed again), one added, one
    forgotten, an action recorded anew, one forgotten, a file stamped in the future (dropped by
    the racy guard at save, in memory as on load), and a new file's include scan."""
    stats, state, scans = objects
    time.sleep(0.01)
    (root / "src" / "a.cpp").write_text('#include "a.hpp"\nint a() { return 2; }\n')
    scans.includes(str(root / "src" / "a.cpp"))
    (root / "src" / "f.cpp").write_text("int f() { return 6; }\n")
    scans.includes(str(root / "src" / "f.cpp"))
    stats.forget(str(root / "src" / "b.cpp"))
    future = root / "src" / "c.cpp"
    ahead = time.time() + 3600
    os.utime(future, (ahead, ahead))
    stats.digest(str(future))
    state.record("compile a", "key-a2", ("src/a.hpp",), {"obj/a.o": "d/2"})
    state.record("compile f", "key-f", (), {"obj/f.o": "d/3"})
    state.forget("compile e")
    _save(objects)


def _as_loaded(objects) -> tuple:
    """Everything of the three objects a build reads (the stat cache's entries, guard and
    counters; the records; the scans)."""
    stats, state, scans = objects
    return (stats._entries, stats._guarded_at, stats._since, stats._dirty, stats.racy, state.actions, state._dirty,
            scans.scans, scans.include_scans, scans.preprocessed, scans._dirty)


def test_a_copy_given_a_builds_changes_is_what_loading_the_files_it_saved_gives(tree):
    root, paths = tree
    _first_build(root, paths)
    given = state_memo.preload(paths)
    assert given is not None
    stamps, held = given
    child = state_memo.taking(state_memo.load(paths))  # a fork's copy of the same objects
    _an_edit_build(root, child)
    changes = state_memo.changes(child)
    assert changes is not None
    stat_changes, _ = changes[0]
    assert str(root / "src" / "c.cpp") in stat_changes[1]  # the racy one: removed
    saved = state_memo.saved_stamps(stamps, child)
    assert saved == state_memo.stamps(paths) != stamps

    state_memo.take_changes(held, changes, saved)
    assert _as_loaded(held) == _as_loaded(state_memo.load(paths))
    assert [o.stamp for o in held] == list(saved)  # the next child appends to the files as they are


def test_what_a_child_does_not_save_is_not_handed_back(tree):
    root, paths = tree
    _first_build(root, paths)
    stamps, _ = state_memo.preload(paths)
    child = state_memo.taking(state_memo.load(paths))
    assert state_memo.saved_stamps(stamps, child) == stamps  # a no-op: nothing written, nothing to take in
    child[1].record("compile a", "key-a3", (), {})
    assert state_memo.changes(child) is None  # not saved: the server reads the files, if they change


def test_a_build_that_changed_most_of_its_state_hands_nothing_back(tree):
    """Every action run again: the changes would be about what the files hold, written before
    the reply; the server reads the files instead."""
    root, paths = tree
    _first_build(root, paths)
    child = state_memo.taking(state_memo.load(paths))
    for i in range(state_memo.FEW_CHANGES + 1):
        child[1].record(f"compile {i}", "key", (), {})
    child[1].save()
    assert state_memo.changes(child) is None
    for i in range(state_memo.FEW_CHANGES + 1):
        child[1].forget(f"compile {i}")
    child[1].save()
    child[1].touched.clear()
    child[1].record("compile a", "key-a4", (), {})
    child[1].save()
    assert state_memo.changes(child) is not None  # a few: handed back


@pytest.fixture
def server(tree, tmp_path):
    """(root, paths, hooks): a first build's state, held by a server's hooks as it loads them."""
    root, paths = tree
    _first_build(root, paths)
    hooks = warm.Hooks(str(root), "test", str(tmp_path / "home"))
    loaded = state_memo.preload(paths)
    assert loaded is not None
    hooks.states[paths] = loaded
    yield root, paths, hooks
    hooks.watcher.close()


def _child_of(hooks: warm.Hooks, paths) -> ChildMemory:
    """A build child's memory, as `in_child` makes it, with its state opened from what the server
    holds; the objects are a copy of the server's, as a fork's are (loaded again: the same)."""
    copies = {p: (stamps, state_memo.load(p)) for p, (stamps, _) in hooks.states.items()}
    memory = ChildMemory(None, copies)
    memory.open_state(*paths)
    return memory


def _edited_by_a_child(hooks: warm.Hooks, root, paths, pid: int) -> None:
    """A child given the server's state builds an edit and hands back its changes before its
    answer (`Hooks.child_answers`), where the server looks for child `pid`'s."""
    memory = _child_of(hooks, paths)
    _an_edit_build(root, memory.states[paths][1])
    changes = memory.state_changes()
    hand(hooks._state_changes(pid), lambda: changes)


def test_the_server_applies_a_childs_changes_when_it_answers_and_reads_nothing(server):
    root, paths, hooks = server
    _edited_by_a_child(hooks, root, paths, 101)
    generation = hooks.generation
    hooks.on_reply(101)
    assert (hooks.states_updated, hooks.states_loaded) == (1, 0)
    assert hooks.generation > generation  # a spare forked before holds the old state
    assert hooks.states[paths][0] == state_memo.stamps(paths)
    assert _as_loaded(state_memo.held(hooks.states, paths)) == _as_loaded(state_memo.load(paths))
    assert not os.path.exists(hooks._state_changes(101))


def test_changes_from_another_starting_point_or_over_rewritten_files_are_not_applied(server):
    root, paths, hooks = server
    # the files rewritten after the child saved them (a build outside the server)
    _edited_by_a_child(hooks, root, paths, 102)
    outside = state_memo.load(paths)
    time.sleep(0.01)
    (root / "src" / "d.cpp").write_text("int d() { return 4; }\n")
    outside[0].digest(str(root / "src" / "d.cpp"))
    outside[1].record("compile d", "key-d2", (), {})
    _save(outside)
    hooks.on_reply(102)
    assert (hooks.states_updated, hooks.states_loaded) == (0, 1)
    assert _as_loaded(state_memo.held(hooks.states, paths)) == _as_loaded(state_memo.load(paths))

    # a child given another starting point than what the server holds now
    held = hooks.states[paths][1]
    _edited_by_a_child(hooks, root, paths, 103)
    hooks.states[paths] = state_memo.preload(paths)[0][:2] + (None,), held
    hooks.on_reply(103)
    assert (hooks.states_updated, hooks.states_loaded) == (0, 2)
    assert _as_loaded(state_memo.held(hooks.states, paths)) == _as_loaded(state_memo.load(paths))


def test_a_state_opened_twice_by_one_build_is_read_back_whole(server):
    """Two objects of the same files in one build could both save: what the first changed is not
    what the files hold, so nothing is handed back for them."""
    root, paths, hooks = server
    memory = _child_of(hooks, paths)
    memory.open_state(*paths)
    _an_edit_build(root, memory.states[paths][1])
    assert memory.state_changes().states == ()


def test_changes_of_the_wrong_shape_leave_the_server_reading_the_files(server):
    """A hand-back that is not what a child writes (damaged, another version's) changes nothing
    the server gives a build: what it holds may be half changed, so it is dropped and the files
    are read."""
    from mcpp.engine.server.child_memory import StateChanges

    root, paths, hooks = server
    memory = _child_of(hooks, paths)
    _an_edit_build(root, memory.states[paths][1])
    [(p, given, saved, changes)] = memory.state_changes().states
    broken = ((({"x": "not an entry"}, ("gone",)), None, 0), ({}, ()), "three scans dicts")
    hand(hooks._state_changes(105), lambda: StateChanges(((p, given, saved, broken),)))
    hooks.on_reply(105)
    assert (hooks.states_updated, hooks.states_loaded) == (0, 1)
    assert _as_loaded(state_memo.held(hooks.states, paths)) == _as_loaded(state_memo.load(paths))


def _rebuild_child_stats(hooks: warm.Hooks, paths):
    """The stat cache a build child opens after `rm -rf target`, from what the server holds."""
    memory = ChildMemory(None, hooks.states)
    return memory.open_state(*paths)[0]


def test_state_files_removed_as_the_server_reads_them_back_leave_what_it_held_for_the_rebuild(server):
    """`rm -rf target` right after a build's reply, while the server reads back the files it saved
    (`on_reply`): what the server held stays, so the rebuild's stat cache adopts its entries and
    hashes no unchanged source again, instead of the server holding nothing or the empty objects
    of the missing files (back-to-back rebuilds at 10,000 units hashed 11,050 sources)."""
    root, paths, hooks = server
    sources = [str(root / "src" / f"{name}.cpp") for name in "abcde"]
    for src in sources:
        hooks.states[paths][1][0].digest(src)
    held = hooks.states[paths]
    # the files a later build saved: newer stamps than what is held, then removed before the read
    time.sleep(0.01)
    _save(state_memo.load(paths))
    os.utime(paths[0])
    target = os.path.dirname(paths[0])
    for p in (paths[0], paths[1], paths[3]):
        if os.path.exists(p):
            os.unlink(p)
    os.rmdir(target)

    hooks.on_reply()
    assert hooks.states[paths] is held and hooks.states_loaded == 1
    assert state_memo.held(hooks.states, paths) is None  # not given as the (missing) files
    os.makedirs(target)
    stats = _rebuild_child_stats(hooks, paths)
    assert all(stats.recorded(src) is not None for src in sources)


def test_state_files_changing_as_the_server_reads_them_leave_what_it_held(server, monkeypatch):
    root, paths, hooks = server
    held = hooks.states[paths]
    time.sleep(0.01)
    _save(state_memo.load(paths))
    os.utime(paths[1])  # rewritten since the server read them
    monkeypatch.setattr(state_memo, "preload", lambda p: None)  # a save seen half done
    hooks.on_reply()
    assert hooks.states[paths] is held


def test_a_server_that_held_no_stat_cache_file_takes_the_files_as_they_are(server):
    """A first read of files without a stat cache (a build that hashed nothing) is taken whole:
    only a stat cache that was there and is gone keeps what was held."""
    root, paths, hooks = server
    os.unlink(paths[0])
    hooks.states[paths] = state_memo.preload(paths)
    assert hooks.states[paths][0][0] is None
    time.sleep(0.01)
    os.utime(paths[1])  # rewritten by a build
    hooks.on_reply()
    assert hooks.states[paths][0] == state_memo.stamps(paths) and hooks.states_loaded == 1
