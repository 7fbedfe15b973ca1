"""Loaded rule files: an error inside one is at its own line with the `load` chain as notes, a
refused load is at the loading line, and `print` names the calling line (engine/program/evaluate.py)."""
from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from mcpp.engine.core.errors import McppError
from mcpp.engine.program.api import McppApi
from mcpp.engine.program.evaluate import Evaluation
from mcpp.engine.program.modules import RuleModule

from tests.unit.program.test_evaluation import context

# The package that provides the rule module: no dependencies of its own.
RULES_PACKAGE = SimpleNamespace(edges=[], manifest=SimpleNamespace(namespace=None, name="rules", features={}))


def evaluate(root: Path, program: str, rule: str) -> Evaluation:
    (root / "build.star").write_text(program)
    (root / "rules").mkdir(exist_ok=True)
    (root / "rules/r.star").write_text(rule)
    modules = {"my.rules": RuleModule("my.rules", str(root / "rules/r.star"), RULES_PACKAGE, "r")}
    evaluation = Evaluation(McppApi(context(root), {}), modules)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        evaluation.run(str(root / "build.star"))
    finally:
        os.chdir(cwd)
    return evaluation


def test_a_name_error_in_a_rule_file_is_at_its_own_line_with_the_load_line_as_a_note(tmp_path):
    with pytest.raises(McppError) as e:
        evaluate(tmp_path, '\nload("my.rules", "f")\nf()\n', 'def f():\n    pass\n\nx = nope\n')
    err = e.value
    assert (err.pos.path, err.pos.line, err.pos.col) == ("rules/r.star", 4, 5)
    assert "Variable `nope` not found" in err.message
    assert err.notes[-1] == "note: loaded from build.star:2:1"


def test_a_syntax_error_in_a_rule_file_is_at_its_own_line(tmp_path):
    with pytest.raises(McppError) as e:
        evaluate(tmp_path, 'load("my.rules", "f")\n', 'def f()\n    pass\n')
    assert (e.value.pos.path, e.value.pos.line) == ("rules/r.star", 1)
    assert e.value.notes[-1] == "note: loaded from build.star:1:1"


def test_an_api_error_at_a_rule_files_top_level_is_at_its_line(tmp_path):
    with pytest.raises(McppError) as e:
        evaluate(tmp_path, 'load("my.rules", "f")\n', 'mcpp.dep_bin("nope", "x")\ndef f():\n    pass\n')
    assert (e.value.pos.path, e.value.pos.line, e.value.pos.col) == ("rules/r.star", 1, 1)
    assert "no host tool `nope:x`" in e.value.message
    assert e.value.notes[-1] == "note: loaded from build.star:1:1"


def test_a_refused_load_in_a_rule_file_is_at_that_load(tmp_path):
    with pytest.raises(McppError) as e:
        evaluate(tmp_path, 'load("my.rules", "f")\n', 'load("@mcpp//paths.star", "paths")\nload("x.y", "z")\n')
    assert (e.value.pos.path, e.value.pos.line, e.value.pos.col) == ("rules/r.star", 2, 1)
    assert e.value.message.startswith("rule module 'my.rules' loads 'x.y'; a rule file may load")
    assert e.value.notes[-1] == "note: loaded from build.star:1:1"


def test_print_notes_the_calling_line(tmp_path):
    evaluation = evaluate(tmp_path, 'load("my.rules", "f")\nprint("top", 1)\nf("x")\n',
                          'def f(v):\n    print("in f:", v, [1], sep = "|")\n')
    assert evaluation.prints == ["note: build.star:2: top 1", "note: rules/r.star:2: in f:|x|[1]"]
