"""The depth bound of a `.star` file (engine/program/nesting.py): what counts toward it, what does
not (strings, comments, siblings), where a refusal points, and that every file the engine ships
is far below it."""
from __future__ import annotations

import pathlib
import threading

import pytest

from mcpp.engine.core.errors import McppError
from mcpp.engine.program import nesting
from mcpp.engine.program.nesting import MAX_DEPTH, check, on_big_stack

REPO = pathlib.Path(__file__).resolve().parents[3]


def refused_at(text: str) -> tuple[int, int]:
    with pytest.raises(McppError) as e:
        check(text, "b.star")
    assert f"nests deeper than {MAX_DEPTH} levels" in e.value.message
    return e.value.pos.line, e.value.pos.col


@pytest.mark.parametrize("text", [
    "x = " + "[" * 2000 + "]" * 2000,
    "x = " + "+".join(["1"] * 2000),
    "x = " + "not " * 2000 + "True",
    "x = " + "lambda: " * 2000 + "1",
    "x = s" + ".a" * 2000,
    "def f():\n" + "".join(" " * (i + 1) + "if True:\n" for i in range(2000)) + " " * 2001 + "pass\n",
    "if a:\n  pass\n" + "elif a:\n  pass\n" * 2000,
])
def test_each_kind_of_nesting_counts(text):
    refused_at(text)


@pytest.mark.parametrize("text", [
    "x = [" + ", ".join(["-1"] * 5000) + "]\n",  # siblings start afresh
    "x = '" + "[(" * 5000 + "'\n",  # inside a string
    'x = """\n' + "[" * 5000 + '\n"""\n',  # inside a triple-quoted string
    "x = r'\\'" + "[" * 5000 + "'\n",  # a raw string's escaped quote does not end it
    "# " + "[" * 5000 + "\nx = 1\n",  # a comment
    "x = 1 + 1\n" * 5000,  # statements
    "if a:\n  pass\n" + "if a:\n  pass\nelse:\n  pass\n" * 2000,  # separate chains
])
def test_what_does_not_nest_is_not_counted(text):
    check(text, "b.star")


def test_the_refusal_points_at_the_first_token_past_the_limit():
    assert refused_at("x = 1\n\ny = 'a' + " + "-" * (MAX_DEPTH + 50) + "1\n") == (3, 4 + 6 + MAX_DEPTH - 1)
    assert refused_at("x = (\n  1 +\n" + "  1 +\n" * (MAX_DEPTH + 5) + "  1)\n")[0] == MAX_DEPTH  # `=` `(` then one `+` a line


def test_the_files_the_engine_ships_are_far_below_the_limit(monkeypatch):
    monkeypatch.setattr(nesting, "MAX_DEPTH", 40)
    files = [p for p in REPO.rglob("*.star") if ".venv" not in p.parts and "target" not in p.parts]
    assert files
    for path in files:
        check(path.read_text(), str(path))


def test_on_big_stack_runs_on_a_big_thread_once_and_passes_errors_through():
    names = on_big_stack(lambda: [threading.current_thread().name,
                                  on_big_stack(lambda: threading.current_thread().name)])
    assert names[0] == names[1] != threading.current_thread().name
    with pytest.raises(KeyError):
        on_big_stack(lambda: {}["x"])
