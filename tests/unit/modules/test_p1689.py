"""Preprocessing module scans: when the own scanner hands over, how a P1689 answer becomes a
ModuleUnit, and the scans cache that keeps them (real clang-scan-deps-19 where installed)."""
from __future__ import annotations

import os
import shutil

import pytest

from mcpp.cas.statcache import StatCache
from mcpp.engine.state import incremental
from mcpp.engine.core.errors import McppError
from mcpp.engine.state.incremental import ScanCache
from mcpp.engine.modules.p1689 import PreprocessScan, scan_deps_tool, unit_from_rules
from mcpp.engine.modules.scanner import ModuleUnit, NeedsPreprocessor, scan_source

CLANG = shutil.which("clang++-19")
needs_scan_deps = pytest.mark.skipif(CLANG is None or shutil.which("clang-scan-deps-19") is None,
                                     reason="clang-19 and clang-tools-19 are not installed")


def needs_preprocessor(text: str) -> NeedsPreprocessor:
    with pytest.raises(NeedsPreprocessor) as info:
        scan_source(text, "src/a.cpp")
    return info.value


# -- the own scanner hands over ----------------------------------------------------------------

def test_an_import_under_if_hands_over_with_every_branch_read():
    e = needs_preprocessor("module;\n#include <x>\nexport module m;\n#ifdef A\nimport a;\n#else\nimport b;\n#endif\n")
    assert (e.pos.line, e.pos.col) == (5, 1)
    assert e.partial == ModuleUnit("m", True, ("a", "b"), True, (5, 7))


def test_alternative_module_declarations_under_if_are_not_a_second_declaration():
    e = needs_preprocessor("#if V2\nexport module m2;\n#else\nexport module m1;\n#endif\n")
    assert e.partial.module == "m2"


def test_a_directive_outside_conditionals_is_still_answered_by_the_own_scanner():
    assert scan_source("#ifdef A\nint x;\n#endif\nimport a;\n", "a.cpp").imports == ("a",)


# -- P1689 answers -----------------------------------------------------------------------------

PARTIAL = ModuleUnit(None, False, ("fast", "slow"), False, (3, 5))


def test_an_interface_with_a_partition_import():
    rules = [{"primary-output": "m.o", "provides": [{"logical-name": "m", "is-interface": True}],
              "requires": [{"logical-name": "m:secret"}, {"logical-name": "fast"}]}]
    unit = unit_from_rules(rules, "src/m.cc", ModuleUnit("m", True, ("m:secret", "fast", "slow"), True, (4, 6, 8)))
    assert unit == ModuleUnit("m", True, ("m:secret", "fast"), True, (4, 6))


def test_an_implementation_partition_is_not_an_interface():
    rules = [{"provides": [{"logical-name": "m:secret", "is-interface": False}]}]
    assert unit_from_rules(rules, "s.cpp", PARTIAL) == ModuleUnit("m:secret", False, (), False, ())


def test_an_implementation_unit_is_named_by_its_implicit_import():
    """clang-scan-deps 19 lists `m` among the requires of `module m;` and provides nothing."""
    rules = [{"requires": [{"logical-name": "y"}, {"logical-name": "m"}]}]
    unit = unit_from_rules(rules, "impl.cpp", ModuleUnit("m", False, ("y",), False, (3,)))
    assert unit == ModuleUnit("m", False, ("y",), False, (3,))


def test_an_ordinary_unit_keeps_the_lines_of_the_imports_the_preprocessor_took():
    unit = unit_from_rules([{"requires": [{"logical-name": "slow"}]}], "main.cpp", PARTIAL)
    assert unit == ModuleUnit(None, False, ("slow",), False, (5,))


def test_more_than_one_rule_is_an_error():
    with pytest.raises(McppError, match="gave 2 rules"):
        unit_from_rules([{}, {}], "main.cpp", PARTIAL)


# -- the tool and the cache, with the real clang-scan-deps -------------------------------------

@needs_scan_deps
def test_the_scanner_of_the_compilers_own_llvm_is_found():
    tool = scan_deps_tool(CLANG)
    assert tool is not None and os.path.basename(tool).startswith("clang-scan-deps")
    assert os.path.dirname(os.path.realpath(tool)) == os.path.dirname(os.path.realpath(CLANG))


def _request(root, *flags: str) -> PreprocessScan:
    argv = (CLANG, "-std=c++20", *flags, "-c", "src/main.cpp", "-o", "main.o")
    return PreprocessScan(scan_deps_tool(CLANG), "clang 19 test", argv, str(root))


@needs_scan_deps
def test_a_scan_is_cached_by_source_flags_and_every_header_it_read(tmp_path, monkeypatch):
    (tmp_path / "src").mkdir()
    header = tmp_path / "src" / "config.hpp"
    header.write_text("#define EXTRA 1\n")
    src = tmp_path / "src" / "main.cpp"
    src.write_text('#include "config.hpp"\n#ifdef FAST\nimport fast;\n#endif\n#if EXTRA\nimport extra;\n#endif\n')
    state = tmp_path / "state"
    scans = ScanCache(str(state / "scans"), StatCache(state / "stat").digest)
    assert scans.scan(str(src), _request(tmp_path, "-DFAST")).imports == ("fast", "extra")
    assert scans.scan(str(src), _request(tmp_path)).imports == ("extra",)  # other flags: scanned again
    scans.save()

    real = incremental.run_scan
    calls = []
    monkeypatch.setattr(incremental, "run_scan", lambda *a: calls.append(a) or real(*a))
    again = ScanCache(str(state / "scans"), StatCache(state / "stat").digest)
    unit = again.scan(str(src), _request(tmp_path, "-DFAST"))
    assert unit == ModuleUnit(None, False, ("fast", "extra"), False, (3, 6)) and calls == []
    header.write_text("#define EXTRA 0\n")  # the source is unchanged; a header it read is not
    assert again.scan(str(src), _request(tmp_path, "-DFAST")).imports == ("fast",) and len(calls) == 1


@needs_scan_deps
def test_without_a_request_the_refusal_stands(tmp_path):
    src = tmp_path / "main.cpp"
    src.write_text("#ifdef FAST\nimport fast;\n#endif\n")
    scans = ScanCache(str(tmp_path / "scans"), StatCache(tmp_path / "stat").digest)
    with pytest.raises(NeedsPreprocessor, match="inside a preprocessor conditional"):
        scans.scan(str(src))
