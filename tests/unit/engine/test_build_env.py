"""engine/core/build_env.py: every environment variable mcpp reads is classified, and every one that
affects a build's result is part of the no-op record's identity."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from mcpp.engine.core import build_env
from mcpp.engine.state import noop

PACKAGE = Path(__file__).resolve().parents[3]
SOURCES = [p for d in ("engine", "cas", "sandbox") for p in sorted((PACKAGE / d).rglob("*.py"))]
MCPP_NAME = re.compile(r"MCPP_[A-Z0-9_]*")
ENVIRON = re.compile(r"(^|\.)_?environ$")  # os.environ, environ, self._environ


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _literal(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def names_read(source: str) -> set[str]:
    """The environment variables `source` names: every string constant that is a whole `MCPP_*`
    name (a read through a variable such as `ENV = "MCPP_PAYLOAD_INDEX"` included), and every
    literal key read from `os.environ` (`.get`, `[...]`, `in`) or `os.getenv`."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    out = set()
    for node in ast.walk(tree):
        text = _literal(node)
        if text is not None and id(node) not in skip and MCPP_NAME.fullmatch(text):
            out.add(text)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            owner = ast.unparse(node.func.value)
            if (node.func.attr in ("get", "pop", "setdefault") and ENVIRON.search(owner)) or \
                    (node.func.attr == "getenv" and owner == "os"):
                key = _literal(node.args[0])
                if key is not None:
                    out.add(key)
        elif isinstance(node, ast.Subscript) and ENVIRON.search(ast.unparse(node.value)):
            key = _literal(node.slice)
            if key is not None:
                out.add(key)
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            if any(ENVIRON.search(ast.unparse(c)) for c in node.comparators):
                key = _literal(node.left)
                if key is not None:
                    out.add(key)
    return out


def test_every_environment_variable_mcpp_reads_is_classified():
    unclassified = {}
    for path in SOURCES:
        for name in names_read(path.read_text()) - set(build_env.AFFECTS) - set(build_env.IGNORED):
            unclassified.setdefault(name, []).append(str(path.relative_to(PACKAGE)))
    assert not unclassified, (
        f"environment variables read but not in engine/core/build_env.py: {unclassified}; add each to AFFECTS "
        f"(its value selects what a build resolves or produces) or to IGNORED (with why it does not)")


def test_the_scan_sees_the_ways_a_variable_is_read():
    source = ('import os\nENV = "MCPP_X"\na = os.environ.get("A")\nb = os.environ["B"]\nc = "C" in os.environ\n'
              'd = self._environ.get("D")\ne = os.getenv("E")\n"""MCPP_DOC is prose"""\n')
    assert names_read(source) == {"MCPP_X", "A", "B", "C", "D", "E"}


def test_no_variable_is_both_affecting_and_ignored():
    assert not set(build_env.AFFECTS) & set(build_env.IGNORED)


@pytest.mark.parametrize("name", list(build_env.AFFECTS))
def test_each_affecting_variable_is_part_of_the_no_op_identity(name):
    env = {"HOME": "/home/u", "PATH": "/usr/bin"}
    base = noop._ident(["build"], "/w", env)
    assert noop._ident(["build"], "/w", {**env, name: "another"}) != base
    assert noop._ident(["build"], "/w", {**env, name: "one"}) != noop._ident(["build"], "/w", {**env, name: "two"})


def test_unset_and_empty_are_different_identities():
    assert noop._ident(["build"], "/w", {"MCPP_PAYLOAD_INDEX": ""}) != noop._ident(["build"], "/w", {})


def test_an_ignored_variable_keeps_the_identity():
    env = {"HOME": "/home/u", "PATH": "/usr/bin"}
    assert noop._ident(["build"], "/w", env) == noop._ident(["build"], "/w", {**env, "MCPP_NO_SERVER": "1"})
