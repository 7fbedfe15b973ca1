"""engine/exec/larger_first.py: the scheduler considers larger compiles first, other actions ahead
of them in plan order."""
from __future__ import annotations

from mcpp.cas.action import Action, ActionKind
from mcpp.engine.exec.larger_first import by_size, larger_first
from mcpp.engine.plan.model import Plan


def _compile(src: str) -> Action:
    return Action(id=f"compile {src}", argv=("cc", src), inputs=(src,), outputs=(src + ".o",), kind=ActionKind.COMPILE)


def test_larger_sources_compile_first_and_other_actions_keep_their_place_ahead():
    sizes = {"src/a.cpp": 200, "src/main.cpp": 480_000, "src/b.cpp": 300, "src/c.cpp": 200}
    gen = Action(id="gen table", argv=("gen",), outputs=("gen/t.h",))
    link = Action(id="link app", argv=("ld",), inputs=("src/a.cpp.o",), outputs=("app",), kind=ActionKind.LINK)
    plan = [_compile("src/a.cpp"), gen, _compile("src/b.cpp"), link, _compile("src/c.cpp"), _compile("src/main.cpp"),
            _compile("src/new.cpp")]
    ordered = [a.id for a in larger_first(plan, lambda rel: sizes.get(rel, 0))]
    assert ordered == ["gen table", "link app", "compile src/main.cpp", "compile src/b.cpp", "compile src/a.cpp",
                       "compile src/c.cpp", "compile src/new.cpp"]  # ties (and unknown sizes) keep plan order



def test_a_plans_order_is_made_once_and_kept_on_the_plan():
    """`by_size`: a server makes it after the build that planned (engine/server/warm.py); the next
    builds given that plan take it as it is, without a size looked up or a sort."""
    plan = Plan("/ws", actions=[_compile("src/a.cpp"), _compile("src/b.cpp")])
    first = by_size(plan, lambda rel: {"src/b.cpp": 9}.get(rel, 0))
    assert [a.id for a in first] == ["compile src/b.cpp", "compile src/a.cpp"] and plan.by_size is first

    def no_sizes(rel: str) -> int:
        raise AssertionError(f"looked up the size of {rel}")

    assert by_size(plan, no_sizes) is first
    plan.actions.append(_compile("src/c.cpp"))  # not the plan it was made for: made again
    assert [a.id for a in by_size(plan, lambda rel: 0)] == ["compile src/a.cpp", "compile src/b.cpp", "compile src/c.cpp"]
    assert plan == Plan("/ws", actions=list(plan.actions))  # no part of what a plan is


def test_an_order_made_with_a_size_unknown_is_not_kept():
    """A server's stat cache without a source's entry (the build's files removed before the server
    read them): the order sorts it as 0 and is left to the build, which sorts by what it hashed."""
    plan = Plan("/ws", actions=[_compile("src/a.cpp"), _compile("src/b.cpp")])
    assert [a.id for a in by_size(plan, {"src/b.cpp": 9}.get)] == ["compile src/b.cpp", "compile src/a.cpp"]
    assert plan.by_size is None
    assert [a.id for a in by_size(plan, lambda rel: {"src/a.cpp": 5}.get(rel, 0))][0] == "compile src/a.cpp"
