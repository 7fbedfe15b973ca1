"""A server derives what a build takes from its plan alone (the actions larger compiles first, by
id, the outputs a later action stages: engine/plan/model.py) while it waits after the build that
planned, so a build it then gives that plan starts its edit's compile without walking every action."""
from __future__ import annotations

import pickle

from mcpp.cas.action import Action, ActionKind
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


def test_a_new_plan_taken_in_holds_its_order_index_and_staged_inputs(tmp_path):
    hooks = warm.Hooks(str(tmp_path), "test", str(tmp_path / "home"))
    try:
        entry = plan_memo.Entry(_plan(str(tmp_path)), b"context", [str(tmp_path)])
        handoff = HandOff(pickle.dumps(entry), (), None, None, {})
        for _ in hooks._take_in(handoff, True, "key", hooks.watcher.token(), frozenset(), hooks.generation):
            pass
        held = hooks.entries["key"].entry.plan
        assert [a.id for a in held.by_size] == ["link app", "compile src/a.cpp", "compile src/b.cpp"]
        made = (held._index, held._staged)  # made here, not by the build the plan goes to
        assert made[0] is not None and made[1] == {"src/a.cpp.o", "src/b.cpp.o"}
        assert held.index() is made[0] and held.staged_inputs() is made[1]
    finally:
        hooks.watcher.close()
