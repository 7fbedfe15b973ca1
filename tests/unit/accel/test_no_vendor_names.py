"""The engine owns the build graph, the artifact's identity and the architecture set; a rule
package owns a compiler's spelling. So no vendor tool name appears in the engine's code (comments
and docstrings stripped): a second backend must not grow a second copy of vendor knowledge in
the engine. The test names how many files it read, so an empty glob cannot pass it."""
from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
ENGINE_DIRS = ("engine", "cas", "sandbox")
VENDOR_TOOLS = ("nvcc", "cicc", "ptxas", "fatbinary", "cudafe++", "nvlink", "cuobjdump", "nvdisasm",
                "hipcc", "hipconfig", "dpcpp", "icpx", "glslangValidator", "glslang", "glslc", "slangc",
                "bisheng", "ccec", "dxc", "spirv-opt", "xcrun metal")
_WORD = re.compile("|".join(rf"(?<![\w+-]){re.escape(t)}(?![\w+-])" for t in VENDOR_TOOLS))


def code_without_comments(text: str) -> str:
    """The source with its comments and docstrings blanked (they may explain a vendor's behaviour)."""
    docstrings = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                docstrings.add((body[0].lineno, body[0].col_offset))
    kept = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING and tok.start in docstrings):
            continue
        kept.append(tok.string)
    return " ".join(kept)


def engine_files() -> list[Path]:
    return sorted(p for d in ENGINE_DIRS for p in (REPO / d).rglob("*.py"))


def test_no_vendor_tool_name_in_the_engine():
    files = engine_files()
    assert len(files) > 100, f"enumerated only {len(files)} engine files under {ENGINE_DIRS}"
    found = [f"{p.relative_to(REPO)}: {m.group(0)}" for p in files
             for m in _WORD.finditer(code_without_comments(p.read_text()))]
    assert not found, f"vendor tool names in the engine ({len(files)} files checked):\n" + "\n".join(found)


def test_the_check_sees_a_name_in_code_but_not_in_a_comment():
    assert _WORD.search(code_without_comments('argv = ["nvcc", "-c"]\n'))
    assert not _WORD.search(code_without_comments('"""Runs nvcc."""\nx = 1  # or ptxas\n'))


def test_the_rule_package_does_hold_them():
    rule = (REPO / "starlark_rules" / "plugins" / "src" / "rules" / "cuda.star").read_text()
    assert _WORD.search(rule)
