"""Tests for engine.manifest.toml_positions: exact positions per construct, plus a
property check that every leaf tomllib sees has a position starting its TOML text."""
from __future__ import annotations

import datetime
import math
import textwrap
import tomllib

import pytest

from mcpp.engine.manifest.toml_positions import SourceMap, Span


def dedent(s: str) -> str:
    return textwrap.dedent(s).lstrip("\n")


def text_at(text: str, pos: tuple[int, int]) -> str:
    """The rest of the line starting at 1-based (line, col)."""
    line, col = pos
    return text.split("\n")[line - 1][col - 1 :]


def both(sm: SourceMap, path) -> tuple:
    return sm.key(path), sm.value(path)


# --- the example from the module's brief ------------------------------------------

BRIEF = dedent(
    """
    [package]
    name = "hello"
    [targets.app]
    kind = "bin"
    [build]
    sources = ["src/*.cpp",
       "!src/x.cpp"]
    deps = { a = { path = "../a" } }
    [[bench]]
    name = "x"
    """
)


def test_brief_example():
    sm = SourceMap(BRIEF)
    assert both(sm, ("package",)) == ((1, 2), (1, 2))
    assert both(sm, ("package", "name")) == ((2, 1), (2, 8))
    assert both(sm, ("targets",)) == ((3, 2), (3, 2))
    assert both(sm, ("targets", "app")) == ((3, 10), (3, 10))
    assert both(sm, ("targets", "app", "kind")) == ((4, 1), (4, 8))
    assert both(sm, ("build", "sources")) == ((6, 1), (6, 11))
    assert sm.value(("build", "sources", 0)) == (6, 12)
    assert sm.value(("build", "sources", 1)) == (7, 4)
    assert both(sm, ("build", "deps")) == ((8, 1), (8, 8))
    assert both(sm, ("build", "deps", "a")) == ((8, 10), (8, 14))
    assert both(sm, ("build", "deps", "a", "path")) == ((8, 16), (8, 23))
    assert both(sm, ("bench",)) == ((9, 3), (9, 3))
    assert both(sm, ("bench", 0)) == ((9, 3), (9, 3))
    assert both(sm, ("bench", 0, "name")) == ((10, 1), (10, 8))


def test_paths_in_source_order():
    sm = SourceMap(BRIEF)
    assert sm.paths() == [
        ("package",),
        ("package", "name"),
        ("targets",),
        ("targets", "app"),
        ("targets", "app", "kind"),
        ("build",),
        ("build", "sources"),
        ("build", "sources", 0),
        ("build", "sources", 1),
        ("build", "deps"),
        ("build", "deps", "a"),
        ("build", "deps", "a", "path"),
        ("bench",),
        ("bench", 0),
        ("bench", 0, "name"),
    ]


def test_unknown_paths_and_nearest():
    sm = SourceMap(BRIEF)
    assert sm.key(("package", "version")) is None
    assert sm.value(("nope",)) is None
    assert sm.nearest(("package", "name")) == (2, 8)
    assert sm.nearest(("package", "name"), prefer="key") == (2, 1)
    assert sm.nearest(("build", "deps", "a", "git", "url")) == (8, 14)
    assert sm.nearest(("build", "deps", "a", "git"), prefer="key") == (8, 10)
    assert sm.nearest(("build", "sources", 5)) == (6, 11)
    assert sm.nearest(("missing", "x")) == (1, 1)
    assert sm.nearest(()) == (1, 1)
    assert sm.nearest(["package", "name"]) == (2, 8)  # any sequence works
    with pytest.raises(ValueError):
        sm.nearest(("package",), prefer="middle")


def test_span_is_frozen_dataclass():
    span = Span(1, 2, 3, 4)
    with pytest.raises(AttributeError):
        span.key_line = 5  # type: ignore[misc]


def test_empty_document():
    sm = SourceMap("")
    assert sm.paths() == []
    assert sm.nearest(("a",)) == (1, 1)
    assert SourceMap("# only a comment\n\n").paths() == []


# --- keys ----------------------------------------------------------------------------


def test_dotted_keys():
    text = dedent(
        """
        [t]
        a.b.c = 1
        a.d = 2
        """
    )
    sm = SourceMap(text)
    assert both(sm, ("t", "a")) == ((2, 1), (2, 1))
    assert both(sm, ("t", "a", "b")) == ((2, 3), (2, 3))
    assert both(sm, ("t", "a", "b", "c")) == ((2, 5), (2, 9))
    assert both(sm, ("t", "a", "d")) == ((3, 3), (3, 7))


def test_dotted_keys_with_whitespace_around_dots():
    text = "a . b\t.  c = true\n"
    sm = SourceMap(text)
    assert both(sm, ("a",)) == ((1, 1), (1, 1))
    assert both(sm, ("a", "b")) == ((1, 5), (1, 5))
    assert both(sm, ("a", "b", "c")) == ((1, 10), (1, 14))


def test_quoted_keys():
    text = dedent(
        r"""
        "a.b" = 1
        'lit.x' = 2
        "esc\"aped\u00e9\t" = 3
        "" = 4
        site."google.com".x = 5
        """
    )
    assert 'esc"aped\u00e9\t' in tomllib.loads(text)  # decoded as tomllib does
    sm = SourceMap(text)
    assert both(sm, ("a.b",)) == ((1, 1), (1, 9))
    assert both(sm, ("lit.x",)) == ((2, 1), (2, 11))
    assert both(sm, ('esc"aped\u00e9\t',)) == ((3, 1), (3, 23))
    assert both(sm, ("",)) == ((4, 1), (4, 6))
    assert both(sm, ("site", "google.com")) == ((5, 6), (5, 6))
    assert both(sm, ("site", "google.com", "x")) == ((5, 19), (5, 23))


def test_bare_keys_that_look_like_values():
    text = "true = 1\n1234 = 2\n3.14 = 3\n-_- = 4\n"
    data = tomllib.loads(text)
    assert data == {"true": 1, "1234": 2, "3": {"14": 3}, "-_-": 4}
    sm = SourceMap(text)
    assert both(sm, ("true",)) == ((1, 1), (1, 8))
    assert both(sm, ("1234",)) == ((2, 1), (2, 8))
    assert both(sm, ("3", "14")) == ((3, 3), (3, 8))
    assert both(sm, ("-_-",)) == ((4, 1), (4, 7))


def test_quoted_header_segments():
    text = dedent(
        """
        [a."b.c".'d']
        x = 1
        [ spaced . out ]
        y = 2
        """
    )
    sm = SourceMap(text)
    assert both(sm, ("a",)) == ((1, 2), (1, 2))
    assert both(sm, ("a", "b.c")) == ((1, 4), (1, 4))
    assert both(sm, ("a", "b.c", "d")) == ((1, 10), (1, 10))
    assert both(sm, ("a", "b.c", "d", "x")) == ((2, 1), (2, 5))
    assert both(sm, ("spaced", "out")) == ((3, 12), (3, 12))
    assert both(sm, ("spaced", "out", "y")) == ((4, 1), (4, 5))


# --- tables --------------------------------------------------------------------------


def test_implicit_tables_take_first_mention_until_defined():
    text = dedent(
        """
        [a.b.c]
        x = 1
        [a.b.d]
        y = 2
        [a]
        z = 3
        """
    )
    sm = SourceMap(text)
    assert both(sm, ("a", "b")) == ((1, 4), (1, 4))  # first mention; never defined
    assert both(sm, ("a", "b", "d")) == ((3, 6), (3, 6))
    assert both(sm, ("a",)) == ((5, 2), (5, 2))  # the explicit [a] wins over the mention
    assert sm.paths()[-2:] == [("a",), ("a", "z")]


def test_dotted_key_table_prefix_recorded_once():
    text = "[pkg]\nmeta.a = 1\nmeta.b = 2\n"
    sm = SourceMap(text)
    assert both(sm, ("pkg", "meta")) == ((2, 1), (2, 1))


def test_array_of_tables_with_sub_tables():
    text = dedent(
        """
        [[a]]
        n = 0
        [a.b]
        x = 1
        [[a]]
        n = 1
        [a.b]
        x = 2
        [a.b.c]
        y = 3
        """
    )
    data = tomllib.loads(text)
    assert data["a"][1]["b"]["c"]["y"] == 3
    sm = SourceMap(text)
    assert both(sm, ("a",)) == ((1, 3), (1, 3))
    assert both(sm, ("a", 0)) == ((1, 3), (1, 3))
    assert both(sm, ("a", 0, "n")) == ((2, 1), (2, 5))
    assert both(sm, ("a", 0, "b")) == ((3, 4), (3, 4))
    assert both(sm, ("a", 0, "b", "x")) == ((4, 1), (4, 5))
    assert both(sm, ("a", 1)) == ((5, 3), (5, 3))
    assert both(sm, ("a", 1, "n")) == ((6, 1), (6, 5))
    assert both(sm, ("a", 1, "b")) == ((7, 4), (7, 4))
    assert both(sm, ("a", 1, "b", "x")) == ((8, 1), (8, 5))
    assert both(sm, ("a", 1, "b", "c")) == ((9, 6), (9, 6))
    assert both(sm, ("a", 1, "b", "c", "y")) == ((10, 1), (10, 5))
    assert sm.key(("a", 2)) is None


def test_nested_array_of_tables():
    text = dedent(
        """
        [[fruit]]
        name = "apple"
        [[fruit.variety]]
        name = "red"
        [[fruit.variety]]
        name = "green"
        [[fruit]]
        name = "banana"
        [[fruit.variety]]
        name = "plantain"
        [[ fruit . variety ]]
        name = "cavendish"
        """
    )
    data = tomllib.loads(text)
    assert data["fruit"][1]["variety"][1]["name"] == "cavendish"
    sm = SourceMap(text)
    assert both(sm, ("fruit", 0, "variety")) == ((3, 9), (3, 9))
    assert both(sm, ("fruit", 0, "variety", 0)) == ((3, 9), (3, 9))
    assert both(sm, ("fruit", 0, "variety", 1)) == ((5, 9), (5, 9))
    assert both(sm, ("fruit", 0, "variety", 1, "name")) == ((6, 1), (6, 8))
    assert both(sm, ("fruit", 1)) == ((7, 3), (7, 3))
    assert both(sm, ("fruit", 1, "variety")) == ((9, 9), (9, 9))
    assert both(sm, ("fruit", 1, "variety", 0)) == ((9, 9), (9, 9))
    assert both(sm, ("fruit", 1, "variety", 1)) == ((11, 12), (11, 12))
    assert sm.value(("fruit", 1, "variety", 1, "name")) == (12, 8)
    assert sm.key(("fruit", 0, "variety", 2)) is None


def test_array_of_tables_under_a_table():
    text = "[tool]\nx = 1\n[[tool.step]]\nrun = 'a'\n[[tool.step]]\nrun = 'b'\n"
    sm = SourceMap(text)
    assert both(sm, ("tool", "step")) == ((3, 8), (3, 8))
    assert both(sm, ("tool", "step", 1)) == ((5, 8), (5, 8))
    assert sm.value(("tool", "step", 1, "run")) == (6, 7)


# --- strings ---------------------------------------------------------------------------


def test_hash_inside_strings_is_not_a_comment():
    text = dedent(
        """
        a = "x # y" # real comment
        b = 'x # y'
        c = 1 # c
        "k#" = 2
        """
    )
    assert tomllib.loads(text) == {"a": "x # y", "b": "x # y", "c": 1, "k#": 2}
    sm = SourceMap(text)
    assert sm.paths() == [("a",), ("b",), ("c",), ("k#",)]
    assert both(sm, ("b",)) == ((2, 1), (2, 5))
    assert both(sm, ("k#",)) == ((4, 1), (4, 8))


def test_basic_string_escapes():
    text = r'''a = "q\"uote\\" # " not a string
b = "x\\"
c = 2
'''
    assert tomllib.loads(text) == {"a": 'q"uote\\', "b": "x\\", "c": 2}
    sm = SourceMap(text)
    assert both(sm, ("b",)) == ((2, 1), (2, 5))
    assert both(sm, ("c",)) == ((3, 1), (3, 5))


def test_multiline_basic_string():
    text = (
        'a = """\n'
        'first "line" with \\""" and ""\n'
        "continued \\\n"
        "   joined # not a comment\n"
        'two quotes at end"""""\n'
        "b = 1\n"
        'c = """x"""\n'
        'd = """""""\n'  # 7 quotes: delimiter, a one-quote body, delimiter
        "e = 2\n"
    )
    data = tomllib.loads(text)
    assert data["a"].endswith('two quotes at end""')
    assert data["d"] == '"'
    sm = SourceMap(text)
    assert both(sm, ("a",)) == ((1, 1), (1, 5))
    assert both(sm, ("b",)) == ((6, 1), (6, 5))
    assert both(sm, ("c",)) == ((7, 1), (7, 5))
    assert both(sm, ("d",)) == ((8, 1), (8, 5))
    assert both(sm, ("e",)) == ((9, 1), (9, 5))


def test_multiline_literal_string():
    text = dedent(
        """
        re = '''I [dw]on't need \\d{2} apples'''
        lines = '''
        The first newline is
        trimmed in raw strings.
           # not a comment = 1
        ''\'''
        x = [ '''a
        b''', 'c' ]
        """
    )
    data = tomllib.loads(text)
    assert data["lines"].endswith("''")
    assert data["x"] == ["a\nb", "c"]
    sm = SourceMap(text)
    assert sm.paths() == [("re",), ("lines",), ("x",), ("x", 0), ("x", 1)]
    assert both(sm, ("lines",)) == ((2, 1), (2, 9))
    assert both(sm, ("x",)) == ((7, 1), (7, 5))
    assert sm.value(("x", 0)) == (7, 7)
    assert sm.value(("x", 1)) == (8, 7)


def test_columns_count_code_points():
    text = 'name = "héllo 🙂"\n"ключ" = "значение"\nx = 1\n'
    sm = SourceMap(text)
    assert both(sm, ("ключ",)) == ((2, 1), (2, 10))
    assert both(sm, ("x",)) == ((3, 1), (3, 5))
    sm2 = SourceMap('a = ["🙂🙂", "é", 3]\n')
    assert sm2.value(("a", 1)) == (1, 12)
    assert sm2.value(("a", 2)) == (1, 17)
    sm3 = SourceMap('"ключ" = { "ё" = 1 }\n')
    assert both(sm3, ("ключ", "ё")) == ((1, 12), (1, 18))


@pytest.mark.parametrize("text", ["a = ", "[a", "a = [1", 'a = "x', "= 1", "a 1"])
def test_invalid_text_raises_value_error(text):
    with pytest.raises(ValueError):
        SourceMap(text)


# --- scalars -----------------------------------------------------------------------------

SCALARS = dedent(
    """
    i1 = +99
    i2 = 1_000_000
    i3 = -17
    h = 0xDEAD_beef
    o = 0o755
    b = 0b1101_0110
    f1 = 6.626e-34
    f2 = -1E+6_0
    f3 = 224_617.445_991
    inf1 = inf
    inf2 = -inf
    n = +nan
    t = true
    f = false
    odt1 = 1979-05-27T07:32:00Z
    odt2 = 1979-05-27 00:32:00.999999-07:00
    ldt = 1979-05-27T07:32:00.5
    ld = 1979-05-27 # a date, then a comment
    lt = 07:32:00.999
    odt3 = 1979-05-27 07:32:00z
    arr = [1979-05-27 07:32:00, 1979-05-27, 00:00:00, 1e3,-0.0]
    end = "end"
    """
)


def test_scalars():
    data = tomllib.loads(SCALARS)
    assert isinstance(data["odt2"], datetime.datetime)
    assert math.isnan(data["n"])
    sm = SourceMap(SCALARS)
    lines = SCALARS.split("\n")
    for line_no, line in enumerate(lines, start=1):
        if not line:
            continue
        key = line.split(" = ")[0]
        assert sm.key((key,)) == (line_no, 1), key
        assert sm.value((key,)) == (line_no, len(key) + 4), key
    arr = lines.index("arr = [1979-05-27 07:32:00, 1979-05-27, 00:00:00, 1e3,-0.0]") + 1
    assert [sm.value(("arr", i)) for i in range(5)] == [
        (arr, 8), (arr, 29), (arr, 41), (arr, 51), (arr, 55),
    ]
    assert sm.key(("arr", 5)) is None


# --- arrays and inline tables ----------------------------------------------------------------


def test_arrays_spanning_lines_with_comments_and_trailing_comma():
    text = dedent(
        """
        xs = [ # opening comment
          1, # one, "two"
          # a comment line [ ] { }
          [2, [3, 'x'], []],

          { k = "v", n.m = 4 }, # trailing comma next
        ]
        after = 0
        """
    )
    data = tomllib.loads(text)
    assert data["xs"][2] == {"k": "v", "n": {"m": 4}}
    sm = SourceMap(text)
    assert both(sm, ("xs",)) == ((1, 1), (1, 6))
    assert sm.value(("xs", 0)) == (2, 3)
    assert sm.value(("xs", 1)) == (4, 3)
    assert sm.value(("xs", 1, 0)) == (4, 4)
    assert sm.value(("xs", 1, 1)) == (4, 7)
    assert sm.value(("xs", 1, 1, 0)) == (4, 8)
    assert sm.value(("xs", 1, 1, 1)) == (4, 11)
    assert sm.value(("xs", 1, 2)) == (4, 17)
    assert sm.key(("xs", 1, 2, 0)) is None
    assert sm.value(("xs", 2)) == (6, 3)
    assert both(sm, ("xs", 2, "k")) == ((6, 5), (6, 9))
    assert both(sm, ("xs", 2, "n")) == ((6, 14), (6, 14))
    assert both(sm, ("xs", 2, "n", "m")) == ((6, 16), (6, 20))
    assert sm.key(("xs", 3)) is None
    assert both(sm, ("after",)) == ((8, 1), (8, 9))


def test_nested_inline_tables():
    text = 'deps = { a = { path = "../a", opts = { x = [1, {y = true}] } }, b = {} }\nz = 1\n'
    data = tomllib.loads(text)
    assert data["deps"]["a"]["opts"]["x"][1] == {"y": True}
    sm = SourceMap(text)
    assert sm.value(("deps", "a", "opts")) == (1, 38)
    assert sm.value(("deps", "a", "opts", "x", 1)) == (1, 48)
    assert both(sm, ("deps", "a", "opts", "x", 1, "y")) == ((1, 49), (1, 53))
    assert both(sm, ("deps", "b")) == ((1, 65), (1, 69))
    assert both(sm, ("z",)) == ((2, 1), (2, 5))


def test_crlf_line_endings():
    text = BRIEF.replace("\n", "\r\n")
    sm_crlf, sm_lf = SourceMap(text), SourceMap(BRIEF)
    assert sm_crlf.paths() == sm_lf.paths()
    for path in sm_lf.paths():
        assert both(sm_crlf, path) == both(sm_lf, path), path
    text2 = 'a = """x\r\ny\\\r\n  z"""\r\nb = [\r\n 1, # c\r\n 2]\r\n'
    assert tomllib.loads(text2) == {"a": "x\nyz", "b": [1, 2]}
    sm2 = SourceMap(text2)
    assert both(sm2, ("b",)) == ((4, 1), (4, 5))
    assert sm2.value(("b", 1)) == (6, 2)


def test_tabs_and_indentation():
    text = "[t]\n\tkey\t=\t'v'\n  [t.u]  # c\n  k = 1\n"
    sm = SourceMap(text)
    assert both(sm, ("t", "key")) == ((2, 2), (2, 8))
    assert both(sm, ("t", "u")) == ((3, 6), (3, 6))
    assert both(sm, ("t", "u", "k")) == ((4, 3), (4, 7))


def test_no_trailing_newline():
    sm = SourceMap("[a]\nb = 1")
    assert both(sm, ("a", "b")) == ((2, 1), (2, 5))


# --- property: every leaf tomllib sees has a position that starts its TOML text -------------

MANIFESTS = [
    BRIEF,
    SCALARS,
    dedent(
        """
        # mcpp.toml for a library with tests
        [package]
        name = "fmtlite"
        version = "0.3.1"
        authors = ["A. Person <a@example.com>", 'B # C']
        description = \"\"\"
        A small formatting library. \\
        Supports "quotes" and ""double"" ones.\"\"\"
        license = 'MIT'

        [toolchain]
        cxx = { std = "c++20", flags = ["-O2", "-Wall",], defines = { NDEBUG = 1 } }

        [targets.fmtlite]
        kind = "lib"
        sources = [
            "src/*.cpp",  # all of them
            "!src/experimental/*.cpp",
        ]
        public-headers = ["include/**/*.hpp"]

        [targets."fmt-cli"]
        kind = "bin"
        deps.fmtlite = { path = "." }
        deps."zlib.ng" = { version = ">=2.1", optional = false }

        [[tests]]
        name = "unit"
        sources = ["tests/unit/*.cpp"]
        timeout = 30.5
        [tests.env]
        LANG = "C"

        [[tests]]
        name = "fuzz"
        sources = []
        runs = 1_000
        seed = 0xC0FFEE
        [[tests.corpus]]
        dir = 'fuzz/corpus'
        [[tests.corpus]]
        dir = 'fuzz/extra'
        since = 2024-01-15
        """
    ),
    dedent(
        """
        title = "TOML Example"

        [owner]
        name = "Tom Preston-Werner"
        dob = 1979-05-27T07:32:00-08:00

        [database]
        enabled = true
        ports = [ 8000, 8001, 8002 ]
        data = [ ["delta", "phi"], [3.14] ]
        temp_targets = { cpu = 79.5, case = 72.0 }

        [servers]

        [servers.alpha]
        ip = "10.0.0.1"
        role = "frontend"

        [servers.beta]
        ip = "10.0.0.2"
        role = "backend"

        [[products]]
        name = "Hammer"
        sku = 738594937

        [[products]]  # empty table within the array

        [[products]]
        name = "Nail"
        sku = 284758393
        color = "gray"
        points = [ { x = 1, y = 2, z = 3 },
                   { x = 7, y = 8, z = 9 },
                   { x = 2, y = 4, z = 8 } ]
        """
    ),
    "empty_arr = []\nempty_tbl = {}\n[e]\n[[f]]\n[[f]]\ng.h = -inf\n",
]


def _walk(node, path=()):
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _walk(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, path + (i,))


def _expected_starts(value) -> tuple[str, ...]:
    if isinstance(value, bool):
        return ("true",) if value else ("false",)
    if isinstance(value, str):
        return ('"', "'")
    if isinstance(value, (int, float)):
        return tuple("+-0123456789in")
    if isinstance(value, (datetime.date, datetime.time)):  # datetime is a date
        return tuple("0123456789")
    if isinstance(value, list):
        return ("[",)
    raise AssertionError(f"unexpected leaf {value!r}")


def _parses_to(rest: str, value) -> bool:
    """Whether some prefix of `rest` is a TOML value equal to `value` (same type)."""
    for end in range(1, min(len(rest), 3000) + 1):
        try:
            got = tomllib.loads(f"v = {rest[:end]}")["v"]
        except tomllib.TOMLDecodeError:
            continue
        if type(got) is type(value) and repr(got) == repr(value):  # repr: nan == nan
            return True
    return False


@pytest.mark.parametrize("text", MANIFESTS, ids=range(len(MANIFESTS)))
@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_every_path_has_a_position_at_its_value(text, newline):
    text = text.replace("\n", newline)
    data = tomllib.loads(text)
    sm = SourceMap(text)
    plain = text.replace("\r\n", "\n")
    offsets = [0]
    for line in plain.split("\n"):
        offsets.append(offsets[-1] + len(line) + 1)
    for path, value in _walk(data):
        if not path:
            continue
        assert sm.key(path) is not None, path
        pos = sm.value(path)
        assert pos is not None, path
        at = text_at(plain, pos)
        is_aot = isinstance(value, list) and value and all(isinstance(v, dict) for v in value)
        if (isinstance(value, dict) or is_aot) and not at.startswith(("{", "[")):
            # a [table], [[array]], its entries and dotted-key tables point at a key segment
            name = next(e for e in reversed(path) if isinstance(e, str))
            assert sm.key(path) == pos, path
            assert at.startswith((name, '"', "'")), (path, at)
            continue
        if isinstance(value, dict):
            assert at.startswith("{"), (path, at)
        else:
            assert at.startswith(_expected_starts(value)), (path, at)
        # the value's TOML text starts there: some prefix of the rest parses back to it
        rest = plain[offsets[pos[0] - 1] + pos[1] - 1 :]
        assert _parses_to(rest, value), (path, at)
    # ...and the map knows no path that is not in the data.
    assert set(sm.paths()) == {path for path, _ in _walk(data) if path}
