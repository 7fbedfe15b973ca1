"""engine/plan/rule_edges.py: producer edges, duplicate outputs and cycles, decided at plan time."""
import pytest

from mcpp.cas.action import Action
from mcpp.engine.core.errors import McppError
from mcpp.engine.plan.planner import Plan
from mcpp.engine.plan.rule_edges import find_cycle, settle


def plan_of(*actions: Action) -> Plan:
    plan = Plan("/x")
    for a in actions:
        plan.add(a, "p", [])
    return plan


def test_a_rule_action_gets_an_edge_to_a_producer_planned_after_it():
    rule = Action(id="rule p:r", argv=("t",), outputs=("gen/r",), inputs=("obj/a.o",), kind="rule")
    compile_ = Action(id="compile p:a", argv=("cc",), outputs=("obj/a.o",), kind="compile")
    plan = plan_of(rule, compile_)
    settle(plan)
    assert plan.prereqs["rule p:r"] == ("compile p:a",)


def test_two_writers_of_one_file_are_named():
    a = Action(id="rule p:a", argv=("t",), outputs=("gen/x",), kind="rule")
    b = Action(id="rule p:b", argv=("t",), outputs=("gen/x",), kind="rule")
    with pytest.raises(McppError, match="action `a` of package `p` and action `b` of package `p` both declare"):
        settle(plan_of(a, b))


def test_a_cycle_is_named_and_a_long_chain_is_not_one():
    a = Action(id="rule p:a", argv=("t",), outputs=("gen/a",), inputs=("gen/b",), kind="rule")
    b = Action(id="rule p:b", argv=("t",), outputs=("gen/b",), inputs=("gen/a",), kind="rule")
    with pytest.raises(McppError, match="cycle: action `a` of package `p` -> action `b` .* -> action `a`"):
        settle(plan_of(a, b))
    chain = {str(i): (str(i + 1),) for i in range(100_000)}
    assert find_cycle(chain) == []
    chain["99999"] = ("5",)
    assert find_cycle(chain)[0] == "5"
