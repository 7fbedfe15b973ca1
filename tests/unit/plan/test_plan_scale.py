"""Planning grows linearly with the number of units: counted, not timed.

A plan of a 10,000-unit project must not cost units x units (a scan of every action per action)
or units x headers (a header pool built, or hashed, per compile). Wall time cannot show that in
a unit test on a shared machine; counts can. The same project is planned at N and 4N units
(with N/2 and 2N headers) and two quantities, both deterministic, must grow about 4x, not 16x:

- the bytecode instructions the engine executes while planning (`sys.settrace` opcode events
  in mcpp's own code, which count every iteration of every loop and comprehension there);
- the header paths the plan keeps in its compiles' `may_read` (each distinct tuple once): a pool
  copied into every compile is units x headers references, however cheaply C code made them.
"""
from __future__ import annotations

import itertools
import os
import sys

import pytest

import mcpp.engine
from tests.unit.plan.planning import plan_of

ENGINE = os.path.dirname(os.path.abspath(mcpp.engine.__file__))
SMALL = 64
_names = itertools.count()


def _project(project, n: int, *, computed_include: bool, target: bool = False):
    """One package of `n` sources and n/2 headers; each source includes two headers. With
    `computed_include` each source also includes through a macro, so the include scan cannot
    bound what a compile reads and every compile falls back to the whole header pool. With
    `target` the sources belong to a `[targets.app]` with settings of its own, whose compiles
    also read the headers beside the target's sources."""
    files = {"mcpp.toml": '[package]\nname = "big"\nversion = "0.1.0"\n\n[build]\ninclude_dirs = ["include"]\n'
             + ('\n[targets.app]\nmain = "src/main.cpp"\nsources = ["src/u*.cpp"]\ndefines = ["APP=1"]\n'
                if target else "")}
    headers = n // 2
    for h in range(headers):
        files[f"include/big/h{h}.hpp"] = f"#pragma once\ninline int h{h}() {{ return {h}; }}\n"
    macro = '#define FIRST "big/h0.hpp"\n#include FIRST\n' if computed_include else ""
    for i in range(n):
        a, b = i % headers, (i * 7 + 3) % headers
        files[f"src/u{i}.cpp"] = (f'{macro}#include "big/h{a}.hpp"\n#include "big/h{b}.hpp"\n'
                                  f'int f{i}() {{ return h{a}() + h{b}(); }}\n')
    files["src/main.cpp"] = "int main() { return 0; }\n"
    return project(files, name=f"big{n}-{int(computed_include)}-{next(_names)}")


def _count(root, execroot):
    ops = 0

    def local(frame, event, arg):
        nonlocal ops
        if event == "opcode":
            ops += 1
        return local

    def called(frame, event, arg):
        if not frame.f_code.co_filename.startswith(ENGINE):
            return None
        frame.f_trace_opcodes = True
        return local

    sys.settrace(called)
    try:
        plan = plan_of(root, execroot=execroot)
    finally:
        sys.settrace(None)
    kept = {id(a.may_read): len(a.may_read) for a in plan.actions if a.kind == "compile"}
    compiles = sum(1 for a in plan.actions if a.kind == "compile")
    return ops, sum(kept.values()), compiles


@pytest.mark.parametrize("computed_include,target", [(False, False), (True, False), (True, True)],
                         ids=["scanned", "whole-pool", "whole-pool-target"])
def test_planning_work_grows_linearly_with_units(project, tmp_path, computed_include, target):
    # The first plan of the session also imports and initializes the engine's modules: run one
    # before counting, so that only planning is counted.
    _, n1, n2, n4 = (_count(_project(project, k * SMALL, computed_include=computed_include, target=target),
                            tmp_path) for k in (1, 1, 2, 4))
    assert [c for *_, c in (n1, n2, n4)] == [SMALL + 1, 2 * SMALL + 1, 4 * SMALL + 1]
    # Work = fixed + per unit (+ per unit pair, if something is quadratic). Going from 2N to 4N
    # adds twice what going from N to 2N added when the work is linear, four times when the
    # per-pair part dominates: the fixed part (imports, the manifest) cancels out.
    for what, i in (("engine bytecodes while planning", 0), ("header paths kept by the compiles", 1)):
        growth = (n4[i] - n2[i]) / max(1, n2[i] - n1[i])
        assert growth < 2.25, f"{what}: {n1[i]}, {n2[i]}, {n4[i]} at {SMALL}, {2 * SMALL}, {4 * SMALL} units"
