"""Parsing compiler output into records, the typo distance behind manifest suggestions, and the
escaping of control characters in mcpp's own text."""
from __future__ import annotations

from mcpp.engine.report.diagnostics import parse, plain
from mcpp.engine.manifest.schema import close_key
from mcpp.engine.report.reporter import escaped, tool_output

GCC = """a/b.cpp: In function 'int f()':
a/b.cpp:3:12: error: expected ';' before 'return'
    3 |   int x = 1
      |            ^
a/b.cpp:3:3: note: declared here
In file included from a/c.cpp:1:
a/h.h:2:1: warning: unused [-Wunused]
"""


def test_each_error_or_warning_is_one_record_with_its_context_and_notes():
    error, warning = parse(GCC)
    assert (error["file"], error["line"], error["column"], error["severity"]) == ("a/b.cpp", 3, 12, "error")
    assert error["message"] == "expected ';' before 'return'"
    assert error["rendered"].splitlines()[0] == "a/b.cpp: In function 'int f()':"
    assert "a/b.cpp:3:3: note: declared here" in error["rendered"]
    assert warning["rendered"].splitlines() == ["In file included from a/c.cpp:1:",
                                                "a/h.h:2:1: warning: unused [-Wunused]"]
    assert (warning["file"], warning["line"], warning["severity"]) == ("a/h.h", 2, "warning")


def test_output_without_a_diagnostic_line_is_one_record_of_unknown_severity():
    [record] = parse("something went wrong\n")
    assert record["severity"] == "unknown" and record["file"] is None
    assert record["rendered"] == "something went wrong\n"


def test_a_fatal_error_is_an_error_and_a_line_only_position_parses():
    [r] = parse("x.toy:7: fatal error: no such file\n")
    assert (r["file"], r["line"], r["column"], r["severity"]) == ("x.toy", 7, None, "error")


def test_close_keys_are_suggested_and_far_ones_are_not():
    assert close_key("cxxflag", ("cxxflags", "cflags")) == "cxxflags"
    assert close_key("standrad", ("standard", "name")) == "standard"
    assert close_key("dependecies", ("dependencies", "dev-dependencies")) == "dependencies"
    assert close_key("whatever", ("version", "name")) is None
    assert close_key("ab", ("cd",)) is None


def test_control_characters_are_escaped_and_colours_of_tool_output_kept():
    assert escaped("a\x1b]0;t\x07b\tc\nd") == "a\\x1b]0;t\\x07b\tc\nd"
    assert tool_output("\x1b[01;35m\x1b[Kwarning\x1b[m\x1b[K \x1b]0;t\x07") == \
        "\x1b[01;35m\x1b[Kwarning\x1b[m\x1b[K \\x1b]0;t\\x07"
    assert plain("\x1b[01mx\x1b[m") == "x"
