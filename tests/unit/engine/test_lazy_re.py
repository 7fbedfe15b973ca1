"""engine/core/lazy_re.py: an expression compiled at its first use answers as the compiled pattern."""
from __future__ import annotations

import copy
import re

from mcpp.engine.core.lazy_re import compile_deferred, lazy_compile


def test_a_deferred_expression_is_compiled_at_its_first_use_and_answers_as_the_pattern():
    deferred = lazy_compile(r"(?P<word>[a-z]+)-(\d+)", re.I)
    assert "match" not in vars(deferred)  # nothing compiled yet
    m = deferred.fullmatch("Abc-12")
    assert m is not None and m.group("word") == "Abc" and m.group(2) == "12"
    compiled = re.compile(r"(?P<word>[a-z]+)-(\d+)", re.I)
    assert (deferred.pattern, deferred.flags, deferred.groups, deferred.groupindex) == \
           (compiled.pattern, compiled.flags, compiled.groups, compiled.groupindex)
    assert deferred.sub("x", "ab-1 cd-2") == "x x" and deferred.findall("ab-1") == [("ab", "1")]
    assert vars(deferred)["match"].__self__ is vars(deferred)["sub"].__self__  # one compile, its own methods


def test_bytes_expressions_and_copies():
    deferred = lazy_compile(rb"\\\r?\n")
    assert deferred.sub(b"", b"a\\\nb") == b"ab"
    assert copy.copy(lazy_compile("a")).match("a")  # no dunder is mistaken for the pattern's


def test_a_warm_server_compiles_the_deferred_expressions_of_the_modules_it_loaded():
    """engine/server/warm.py compiles them before it forks its builds."""
    import types

    module = types.ModuleType("m")
    module.EXPR = lazy_compile("a+")
    module.OTHER = re.compile("b")
    assert compile_deferred([module]) == 1 and "match" in vars(module.EXPR)
    assert compile_deferred([module]) == 0
