"""The C++20 module scanner: declarations, imports, traps it must not fall into, refusals."""
from __future__ import annotations


import pytest

from mcpp.engine.core.errors import Position, ScanError
from mcpp.engine.modules.scanner import ModuleUnit, scan_source


def scan(text: str) -> ModuleUnit:
    return scan_source(text, "src/a.cpp")


def refused(text: str) -> ScanError:
    with pytest.raises(ScanError) as info:
        scan(text)
    return info.value


def imports(text: str) -> tuple[str, ...]:
    return scan(text).imports


# -- declarations ------------------------------------------------------------------------------


def test_ordinary_file_without_keywords():
    assert scan("int main() { return 0; }\n") == ModuleUnit(None, False, (), False, ())


def test_empty_file():
    assert scan("") == ModuleUnit(None, False, (), False, ())


def test_interface_unit():
    u = scan("export module a.b;\nimport c;\n")
    assert u == ModuleUnit("a.b", True, ("c",), False, (2,))


def test_implementation_unit_does_not_import_itself():
    u = scan("module a.b;\nimport c;\n")
    assert (u.module, u.exported, u.imports) == ("a.b", False, ("c",))


def test_interface_partition():
    u = scan("export module a.b:part.x;\n")
    assert (u.module, u.exported) == ("a.b:part.x", True)


def test_implementation_partition():
    u = scan("module a:impl;\n")
    assert (u.module, u.exported) == ("a:impl", False)


def test_global_module_fragment_with_includes_in_conditionals():
    text = (
        "module;\n"
        "#include <cstdio>\n"
        "#if defined(_WIN32)\n"
        "#  include <windows.h>\n"
        "#elif 1\n"
        "#  ifdef X\n"
        "#    include <x.h>\n"
        "#  endif\n"
        "#else\n"
        "#  include <unistd.h>\n"
        "#endif\n"
        "export module sys;\n"
        "import std;\n"
    )
    assert scan(text) == ModuleUnit("sys", True, ("std",), True, (13,))


def test_no_global_fragment_without_module_semicolon():
    assert scan("export module m;\n").global_fragment is False


def test_private_fragment_is_ignored():
    u = scan("export module m;\nimport a;\nmodule :private;\nint x;\n")
    assert u == ModuleUnit("m", True, ("a",), False, (2,))


def test_private_fragment_spelled_with_spaces():
    assert scan("module m;\nmodule : private ;\n").module == "m"


def test_declaration_split_over_lines_and_whitespace_between_tokens():
    text = "export\nmodule\n  a . b\n  :\n  p\n;\nexport\n  import\n c . d ;\n"
    u = scan(text)
    assert (u.module, u.exported, u.imports, u.import_lines) == ("a.b:p", True, ("c.d",), (8,))


def test_tabs_and_indentation():
    assert scan("\t  export   module\tm ;\n\t import\tx;").imports == ("x",)


def test_attributes_are_allowed():
    u = scan('export module foo [[deprecated("old")]];\nimport bar [[maybe]];\n')
    assert (u.module, u.imports) == ("foo", ("bar",))


def test_comments_between_tokens():
    u = scan("export /* c */ module /* d */ m // e\n;\nimport /* x */ n;\n")
    assert (u.module, u.imports) == ("m", ("n",))


def test_comment_before_keyword_still_starts_the_line():
    assert imports("/* banner */ import a;\n") == ("a",)


def test_crlf_line_endings():
    u = scan("module;\r\n#include <x>\r\nexport module m;\r\nimport a;\r\nimport b;\r\n")
    assert u == ModuleUnit("m", True, ("a", "b"), True, (4, 5))


def test_unicode_identifier_in_name():
    assert imports("import café.ü;\n") == ("café.ü",)


# -- imports -------------------------------------------------------------------------------------


def test_imports_in_order_deduplicated_with_lines():
    text = "export module m;\nimport b;\nimport a;\nimport b;\nexport import c;\nimport a;\n"
    u = scan(text)
    assert (u.imports, u.import_lines) == (("b", "a", "c"), (2, 3, 5))


def test_export_import():
    assert imports("export module m;\nexport import n.o;\n") == ("n.o",)


def test_partition_import_resolves_against_primary_module():
    u = scan("export module a.b;\nimport :p;\nexport import :q.r;\n")
    assert u.imports == ("a.b:p", "a.b:q.r")


def test_partition_import_from_a_partition():
    assert imports("module a.b:impl;\nimport :iface;\n") == ("a.b:iface",)


def test_std_and_std_compat_kept_as_written():
    assert imports("import std;\nimport std.compat;\n") == ("std", "std.compat")


def test_ordinary_tu_may_import():
    u = scan('#include "x.h"\nimport fmt;\nint main() {}\n')
    assert u == ModuleUnit(None, False, ("fmt",), False, (2,))


def test_import_line_is_the_keywords_line():
    assert scan("export\nimport\nx;\n").import_lines == (2,)


# -- not declarations ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        'std::string s = "import x;";',
        "foo.import(3);",
        "auto module = 1;",
        "import(3);",
        "module = 2;",
        "module.run();",
        "module::helper();",
        "import::f();",
        "int x = module;",
        "export int f();",
        "export { int g(); }",
        "exported module;",
        "imports x;",
        "my_import x;",
        "x; import y;",
        "return a\n  / module;",
    ],
)
def test_ordinary_code_is_not_a_declaration(line):
    assert scan(line + "\n") == ModuleUnit(None, False, (), False, ())


def test_line_comment():
    assert imports("// import a;\nimport b; // import c;\n") == ("b",)


def test_block_comment_across_lines():
    assert imports("/*\nimport a;\nexport module m;\n*/\nimport b;\n") == ("b",)


def test_unterminated_block_comment_swallows_the_rest():
    assert imports("import a;\n/* import b;\n") == ("a",)


def test_string_with_escaped_quote():
    assert imports('auto s = "\\"\nimport a;";\nimport b;\n') == ("a", "b")
    assert imports('auto s = "x\\"\\\\";\nimport b;\n') == ("b",)


def test_string_literal_does_not_span_lines():
    # an unterminated string ends at the line: the next line is still scanned
    assert imports('#error "unterminated\nimport a;\n') == ("a",)


def test_char_literals():
    text = "char a = '\"';\nimport x;\nchar b = '\\'';\nimport y;\nchar c = '/';\nimport z;\n"
    assert imports(text) == ("x", "y", "z")


def test_prefixed_char_literals():
    assert imports("auto c = u8'\"';\nauto d = L'\"';\nimport x;\n") == ("x",)


def test_digit_separators_do_not_open_char_literals():
    text = (
        "int a = 1'000'000;\nimport x;\nint b = 0x1'ff'ff;\nimport y;\n"
        "auto c = 1.5e+1'0;\nimport z;\n"
    )
    assert imports(text) == ("x", "y", "z")


def test_apostrophe_in_prose_does_not_hide_the_next_line():
    assert imports("#error don't do that\nimport a;\n") == ("a",)


def test_raw_string_across_lines():
    text = 'auto s = R"(\nimport a;\n" still inside\n)";\nimport b;\n'
    assert imports(text) == ("b",)


def test_raw_string_with_delimiter():
    text = 'auto s = R"xy(\nimport a;\n)" not the end\n)xy";\nimport b;\n'
    assert imports(text) == ("b",)


@pytest.mark.parametrize("prefix", ["u8R", "uR", "UR", "LR"])
def test_prefixed_raw_strings(prefix):
    assert imports(f'auto s = {prefix}"(\nimport a;\n)";\nimport b;\n') == ("b",)


def test_identifier_ending_in_R_is_not_a_raw_prefix():
    # `fooR` then an ordinary string: the string ends on its line
    assert imports('x = fooR"(";\nimport a;\n') == ("a",)


def test_raw_string_containing_comment_openers():
    assert imports('auto s = R"(/* // ")";\nimport a;\n') == ("a",)


def test_comment_opener_inside_string():
    assert imports('auto s = "/*";\nimport a;\nauto t = "*/";\n') == ("a",)


def test_line_continuation_joins_keyword():
    u = scan("imp\\\nort a;\nexport mod\\\nule m;\n")
    assert (u.module, u.imports, u.import_lines) == ("m", ("a",), (1,))


def test_line_continuation_extends_line_comment():
    assert imports("// comment \\\nimport a;\nimport b;\n") == ("b",)


def test_line_continuation_extends_directive():
    assert imports("#define X \\\n  import a;\nimport b;\n") == ("b",)


def test_continued_line_is_not_a_line_start():
    assert imports("int x = \\\nimport;\nfoo \\\nimport a;\n") == ()


def test_directive_text_is_not_code():
    assert imports('#include "import.h"\n#define module 1\n#pragma import x;\n') == ()


def test_import_after_endif_is_fine():
    assert imports("#ifdef X\n#define Y\n#endif\nimport a;\n") == ("a",)


def test_hash_not_at_line_start_is_not_a_directive():
    assert imports('auto s = "#if";\nint y = 1; // #if\nimport a;\n') == ("a",)


# -- refusals ------------------------------------------------------------------------------------

CONDITIONAL_IMPORT = (
    "`import` inside a preprocessor conditional is not supported; the module scanner does not "
    "run the preprocessor (move the import out of the #if block)"
)
CONDITIONAL_DECL = (
    "module declaration inside a preprocessor conditional is not supported; the module scanner "
    "does not run the preprocessor (move the module declaration out of the #if block)"
)


@pytest.mark.parametrize("opener", ["#if A", "#ifdef A", "#ifndef A", "# if A", "#  ifdef A"])
def test_import_inside_conditional(opener):
    e = refused(f"int x;\n{opener}\n  import a;\n#endif\n")
    assert e.message == CONDITIONAL_IMPORT
    assert e.pos == Position("src/a.cpp", 3, 3)


def test_import_in_else_and_elif_branches():
    e = refused("#if A\n#elif B\n#else\nexport import a;\n#endif\n")
    assert (e.message, e.pos) == (CONDITIONAL_IMPORT, Position("src/a.cpp", 4, 8))
    e = refused("#if A\n#elif B\n   import a;\n#endif\n")
    assert e.pos == Position("src/a.cpp", 3, 4)


def test_import_in_nested_conditional():
    e = refused("#if A\n#endif\n#if B\n#ifdef C\n#endif\nimport a;\n#endif\n")
    assert e.pos == Position("src/a.cpp", 6, 1)


def test_module_declaration_inside_conditional():
    e = refused("module;\n#ifdef A\nexport module m;\n#endif\n")
    assert (e.message, e.pos) == (CONDITIONAL_DECL, Position("src/a.cpp", 3, 8))
    e = refused("#ifndef A\nmodule m:p;\n#endif\n")
    assert (e.message, e.pos) == (CONDITIONAL_DECL, Position("src/a.cpp", 2, 1))


def test_import_in_if_0_block_is_refused_too():
    assert refused("#if 0\nimport old;\n#endif\n").message == CONDITIONAL_IMPORT


def test_conditional_directives_in_comments_and_strings_do_not_count():
    assert imports('/*\n#if A\n*/\nauto s = "#if";\n// #if\nimport a;\n') == ("a",)


@pytest.mark.parametrize(
    "text, shown, col",
    [
        ("import <vector>;", "import <vector>;", 1),
        ('import "foo.h";', 'import "foo.h";', 1),
        ("  export import <sys/types.h> ;", "export import <sys/types.h> ;", 10),
        ("import <vector>\n", "import <vector>", 1),
    ],
)
def test_header_units_refused(text, shown, col):
    e = refused("module;\n" + text)
    assert e.message == (
        f"header units are not supported: `{shown}` (use #include in the global module fragment)"
    )
    assert e.pos == Position("src/a.cpp", 2, col)


def test_second_module_declaration():
    e = refused("export module a;\nint x;\nmodule b;\n")
    assert e.pos == Position("src/a.cpp", 3, 1)
    assert "line 3" in e.message and "line 1" in e.message
    assert "`a`" in e.message and "`b`" in e.message


def test_second_declaration_of_the_same_module():
    e = refused("export module a;\n  export module a;\n")
    assert e.pos == Position("src/a.cpp", 2, 10)


def test_partition_import_outside_a_module():
    e = refused("import std;\nimport :p;\n")
    assert e.pos == Position("src/a.cpp", 2, 1)
    assert "`import :p;`" in e.message


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("import a", "expected `;`, found end of file"),
        ("import a b;", "expected `;`, found `b`"),
        ("import a.;", "expected a module name, found `;`"),
        ("export module a::b;", "expected `;`, found `::`"),
        ("module :p;", "expected a module name"),
        ("export module;", "needs a module name"),
        ("import a:b;", "expected `;`, found `:`"),
    ],
)
def test_malformed_declarations(text, fragment):
    e = refused("\n" + text)
    assert e.message.startswith("malformed") and fragment in e.message
    assert e.pos.line == 2


def test_error_position_counts_original_lines_across_continuations():
    e = refused("int a = \\\n  1;\n#if X\n  \\\nimport <v>;\n#endif\n")
    # the header unit is refused at the `import` keyword, in the file as written
    assert e.pos == Position("src/a.cpp", 5, 1)


def test_error_position_after_raw_string():
    e = refused('auto s = R"(\n\n)";\n#if A\n\timport x;\n#endif\n')
    assert e.pos == Position("src/a.cpp", 5, 2)


def test_error_renders_with_path():
    assert refused("import <x>;").render().startswith("src/a.cpp:1:1: error: header units")


# -- speed ---------------------------------------------------------------------------------------


def test_a_thousand_small_module_units_are_each_scanned():
    """How long the scans take is measured by bench/hot_loops.py."""
    texts = [
        f"module;\n#include <cstdio>\nexport module m{i};\nimport std;\nimport m{i + 1};\n"
        f"// a comment\nint f{i}() {{ return {i}'000; }}\n"
        for i in range(1000)
    ]
    units = [scan_source(t, f"m{i}.cpp") for i, t in enumerate(texts)]
    assert units[7] == ModuleUnit("m7", True, ("std", "m8"), True, (4, 5))


def test_a_big_file_without_keywords_is_no_module_unit():
    text = "int f(int a) { return a * 2; } // plain code\n" * 100_000
    assert scan(text) == ModuleUnit(None, False, (), False, ())


def test_keywords_in_strings_and_comments_of_a_big_file_are_not_directives():
    body = (
        'static const char* s = "text \\"import x;\\" more";\n'
        "int v = 1'000 + 'a'; /* module\n   comment */ int w = v / 2; // import y;\n"
    )
    text = "export module big;\nimport std;\n" + body * 40_000  # about 4 MB
    assert scan(text) == ModuleUnit("big", True, ("std",), False, (2,))


def test_header_unit_shown_as_written_with_comment():
    e = refused("export /* c */ import <x>;\n")
    assert "`export /* c */ import <x>;`" in e.message
    assert e.pos == Position("src/a.cpp", 1, 16)


def test_global_fragment_introducer_inside_conditional_is_refused():
    e = refused("#ifdef MODULES\nmodule;\n#endif\n")
    assert (e.message, e.pos) == (CONDITIONAL_DECL, Position("src/a.cpp", 2, 1))


def test_private_fragment_inside_conditional_is_ignored():
    assert scan("export module m;\n#if 1\nmodule :private;\n#endif\n").module == "m"
