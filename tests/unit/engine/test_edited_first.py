"""A server build checks first the actions that read a file the watcher saw rewritten."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from mcpp.engine.server import plan_memo


def _a(i: str, *inputs: str):
    return SimpleNamespace(id=i, inputs=inputs)


ACTIONS = [_a("c1", "src/a.cpp"), _a("c2", "src/b.cpp"), _a("c3", "src/c.cpp"), _a("link", "a.o", "b.o", "c.o")]
DISCOVERED = {"c1": ("include/h.hpp",), "c3": ("/usr/include/stdio.h",)}


def _memo(*changed: str, reused: bool = True) -> plan_memo.PlanMemo:
    """A build child's plan memory: given a plan, and whether its planning took it."""
    memo = plan_memo.PlanMemo(plan_memo.Given(entry=None, changed=set(changed)))
    memo.produced = plan_memo.REUSED if reused else b"new plan"
    return memo


def given(*changed: str, reused: bool = True) -> list[str]:
    return _memo(*changed, reused=reused).edited_first(ACTIONS, "/ws", lambda i: DISCOVERED.get(i, ()))


def test_the_readers_of_rewritten_files_come_first_the_rest_in_plan_order():
    assert given("/ws/src/c.cpp") == ["c3", "c1", "c2", "link"]
    assert given("/ws/include/h.hpp") == ["c1", "c2", "c3", "link"]  # a discovered header
    assert given("/ws/src/b.cpp", "/ws/src/c.cpp") == ["c2", "c3", "c1", "link"]


def test_plan_order_without_a_given_plan_or_a_change():
    assert given("/ws/src/c.cpp", reused=False) == ["c1", "c2", "c3", "link"]
    assert given() == ["c1", "c2", "c3", "link"]
    assert plan_memo.PlanMemo(None).edited_first(ACTIONS, "/ws", DISCOVERED.get) == ["c1", "c2", "c3", "link"]


def test_an_edited_source_is_found_among_declared_inputs_without_the_discovered_ones():
    order = _memo("/ws/src/c.cpp").edited_first(ACTIONS, "/ws", lambda i: pytest.fail("read the discovered inputs"))
    assert order == ["c3", "c1", "c2", "link"]


def test_the_plans_own_outputs_among_the_changes_send_no_search_through_the_discovered_inputs():
    """The watcher names the last build's outputs too where their events came after that build's
    hand-off (a build run right after it): an output's readers name it among their declared inputs."""
    made = {"a.o": "c1", "b.o": "c2", "c.o": "c3", "app": "link"}
    memo = _memo("/ws/src/c.cpp", "/ws/c.o", "/ws/app")
    order = memo.edited_first(ACTIONS, "/ws", lambda i: pytest.fail("read the discovered inputs"), made)
    assert order == ["c3", "link", "c1", "c2"]
    # a file that is neither an input declared nor an output (a header) still looks there
    assert _memo("/ws/src/c.cpp", "/ws/include/h.hpp").edited_first(
        ACTIONS, "/ws", lambda i: DISCOVERED.get(i, ()), made) == ["c1", "c3", "c2", "link"]
