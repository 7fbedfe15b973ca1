"""Staging many inputs (sandbox/inputs.py): a link action's thousand objects are hard-linked by
two threads, with the same result and the same errors as one."""
from __future__ import annotations

import os

import pytest

from mcpp.sandbox import SandboxSpecError
from mcpp.sandbox.inputs import PARALLEL_LINKS, stage_inputs


def _sources(tmp_path, n):
    src = tmp_path / "store"
    src.mkdir()
    inputs = {}
    for i in range(n):
        p = src / f"blob{i}"
        p.write_text(f"{i}\n")
        inputs[f"obj/mod{i % 7}/f{i:04d}.o"] = str(p)
    return inputs


def test_every_one_of_many_inputs_is_a_hard_link_to_its_source(tmp_path):
    inputs = _sources(tmp_path, PARALLEL_LINKS * 3 + 1)
    root = tmp_path / "slot"
    root.mkdir()
    staged = stage_inputs(inputs, str(root), "//t:link")
    assert staged == set(inputs)
    for rel, src in inputs.items():
        assert os.path.samefile(root / rel, src), rel
    assert sorted(os.listdir(root / "obj")) == [f"mod{i}" for i in range(7)]


@pytest.mark.parametrize("where", ["first half", "second half"])
def test_a_missing_source_among_many_is_named_whichever_thread_meets_it(tmp_path, where):
    inputs = _sources(tmp_path, PARALLEL_LINKS * 2)
    rel = list(inputs)[5] if where == "first half" else list(inputs)[-3]
    os.unlink(inputs[rel])
    root = tmp_path / "slot"
    root.mkdir()
    with pytest.raises(SandboxSpecError, match=f"action //t:link: input '{rel}': its source .* does not exist"):
        stage_inputs(inputs, str(root), "//t:link")
