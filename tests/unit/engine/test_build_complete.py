"""A successful schedule that left a planned action unrun, or an artifact unmade, is a bug said
as one (engine/build/build_outputs.py), never a silent `Finished`."""
from __future__ import annotations

import pytest

from mcpp.cas.action import Action, ActionKind
from mcpp.engine.build.build_outputs import IncompleteBuild, check_complete
from mcpp.engine.plan.model import Artifact, ArtifactKind, Plan


def _plan(tmp_path) -> Plan:
    plan = Plan(str(tmp_path))
    for i, out in enumerate(["gen/zconf.h", "obj/z.o", "lib/libz.a"]):
        plan.add(Action(id=f"a{i}", argv=("true",), outputs=(out,), inputs=(), kind=ActionKind.RULE), "z", [])
    plan.artifacts.append(Artifact("z", "z", ArtifactKind.LIB, "lib/libz.a"))
    return plan


def test_planned_actions_that_never_ran_are_an_internal_error(tmp_path):
    with pytest.raises(IncompleteBuild, match=r"planned 3 action\(s\) but 3 never ran: `a0`, `a1`, `a2`"):
        check_complete(_plan(tmp_path), set())


def test_a_missing_artifact_is_an_internal_error(tmp_path):
    with pytest.raises(IncompleteBuild, match="produced no `lib/libz.a` \\(lib `z` of package `z`\\)"):
        check_complete(_plan(tmp_path), {"a0", "a1", "a2"})


def test_a_complete_build_passes(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libz.a").write_bytes(b"!<arch>\n")
    check_complete(_plan(tmp_path), {"a0", "a1", "a2"})
