"""A server derives what a build takes from its plan alone (the actions larger compiles first, by
id, the outputs a later action stages: engine/plan/model.py) while it waits after the build that
planned, so a build it then gives that plan starts its edit's compile without walking every action."""
from __future__ import annotations

import os
import pickle

from mcpp.cas.action import Action, ActionKind
from mcpp.cas.statcache import StatCache
from mcpp.engine.plan.model import Plan
from mcpp.engine.server import plan_memo, warm
from mcpp.engine.server.child_memory import HandOff


def _plan(root: str) -> Plan:
    plan = Plan(root)
    for src in ("src/a.cpp", "src/b.cpp"):
        plan.add(Action(id=f"compile {src}", argv=("cc", src), inputs=(src,), outputs=(src + ".o",),
                        kind=ActionKind.COMPILE), "app", [])
    plan.add(Action(id="link app", argv=("ld",), inputs=("src/a.cpp.o", "src/b.cpp.o"), outputs=("app",),
                    kind=ActionKind.LINK), "app", ["compile src/a.cpp", "compile src/b.cpp"])
    return plan


def _taken_in(tmp_path, state: tuple) -> Plan:
    """The plan of a hand-off as the server holds it once taken in; `state`: the state files the
    build opened."""
    hooks = warm.Hooks(str(tmp_path), "test", str(tmp_path / "home"))
    try:
        entry = plan_memo.Entry(_plan(str(tmp_path)), b"context", [str(tmp_path)])
        handoff = HandOff(pickle.dumps(entry), state, None, None, {})
        for _ in hooks._take_in(handoff, True, "key", hooks.watcher.token(), frozenset(), hooks.generation):
            pass
        return hooks.entries["key"].entry.plan
    finally:
        hooks.watcher.close()


def test_a_new_plan_taken_in_holds_its_order_index_and_staged_inputs(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.cpp").write_text("int a();\n")
    (tmp_path / "src" / "b.cpp").write_text("int b() { return 0; }\n" * 20)
    work = tmp_path / "target" / ".mcpp"
    work.mkdir(parents=True)
    stats = StatCache(str(work / "stats"))
    for name in ("a.cpp", "b.cpp"):
        stats.digest(os.path.join(tmp_path, "src", name))
    stats.save()
    held = _taken_in(tmp_path, ((str(work / "stats"), str(work / "actions"), str(tmp_path), str(work / "scans")),))
    # the sizes the build's stat cache recorded: b.cpp is the larger
    assert [a.id for a in held.by_size] == ["link app", "compile src/b.cpp", "compile src/a.cpp"]
    made = (held._index, held._staged)  # made here, not by the build the plan goes to
    assert held._derived_of == 3 and made[1] == {"src/a.cpp.o", "src/b.cpp.o"}
    assert held.index() is made[0] and held.staged_inputs() is made[1]


def test_without_the_builds_stat_cache_the_order_is_left_to_the_next_build(tmp_path):
    """The state files gone before the server read them (`rm -rf target` right after the build):
    no size is known here, and an order made of none would hold for every build given the plan."""
    held = _taken_in(tmp_path, ((str(tmp_path / "gone" / "stats"), str(tmp_path / "gone" / "actions"), str(tmp_path),
                                 str(tmp_path / "gone" / "scans")),))
    assert held.by_size is None
    assert held._derived_of == 3 and set(held._index) == {"compile src/a.cpp", "compile src/b.cpp", "link app"}
