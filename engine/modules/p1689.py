"""Module facts from a scanner that runs the preprocessor: `clang-scan-deps -format=p1689`.

The own scanner (scanner.py) reads text and is exact as long as no module directive sits inside
a preprocessor conditional; when one does, only the preprocessor, with the unit's real flags
(defines, include directories, standard), can say which branch counts. clang ships such a
scanner and writes the answer in the P1689 format compilers and build systems agreed on
(`provides`: the module a unit declares; `requires`: what it imports, partitions spelled in
full). gcc 12 has none, so there the own scanner's refusal stands.

The answer depends on the source, every header the preprocessor read, the flags and the
scanner binary; `PreprocessScan.key` and the files listed in the depfile the scan writes are
what a cache of these answers must check (incremental.py's ScanCache). The depfile leaves out
system headers; they come with the compiler, whose identity is in the key.
"""
from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from functools import lru_cache

from mcpp.sandbox import parse_depfile

from ..core.errors import McppError, Position
from .scanner import ModuleUnit

SCANNER_VERSION = "p1689-1"  # bump when what a scan request keys changes meaning


@dataclass(frozen=True)
class PreprocessScan:
    """How to scan one unit: `tool` (clang-scan-deps), `tool_id` (its blake3 and the compiler's
    identity, so an upgraded toolchain scans again), the compile's `argv` (execroot-relative
    paths, no placeholder) and the directory it runs in."""

    tool: str
    tool_id: str
    argv: tuple[str, ...]
    cwd: str

    @property
    def key(self) -> str:
        return "\0".join((SCANNER_VERSION, self.tool_id, *self.argv))


@lru_cache(maxsize=8)
def scan_deps_tool(compiler: str) -> str | None:
    """The clang-scan-deps of the same LLVM as `compiler` (beside the real binary, as LLVM
    installs it: /usr/lib/llvm-19/bin/), else the one with the compiler's version suffix on PATH."""
    real = os.path.realpath(compiler)
    beside = os.path.join(os.path.dirname(real), "clang-scan-deps")
    if os.access(beside, os.X_OK):
        return beside
    name = os.path.basename(compiler)
    suffix = name[name.index("-"):] if "-" in name else ""
    for d in os.environ.get("PATH", "").split(os.pathsep):
        candidate = os.path.join(d or ".", f"clang-scan-deps{suffix}")
        if os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
    return None


def run_scan(req: PreprocessScan, shown: str, partial: ModuleUnit) -> tuple[ModuleUnit, list[str]]:
    """Scan with `req`; returns the unit and the absolute paths of the files the preprocessor
    read (the source included). `partial` (the own scanner's reading, every branch taken) gives
    each import its line for error messages. A scan that fails is an error showing clang's
    diagnostics (a missing header, a malformed directive)."""
    import tempfile  # only a build that scans with clang-scan-deps

    with tempfile.TemporaryDirectory(prefix="mcpp-p1689-") as tmp:
        depfile = os.path.join(tmp, "scan.d")
        argv = [req.tool, "-format=p1689", "--", *req.argv, "-MD", "-MF", depfile]
        try:
            done = subprocess.run(argv, cwd=req.cwd, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise McppError(f"cannot run `{req.tool}` to scan `{shown}` for modules: {e}")
        if done.returncode != 0:
            raise McppError(f"scanning `{shown}` for modules failed (`{os.path.basename(req.tool)}`):\n"
                            f"{done.stderr.strip()}")
        try:
            rules = json.loads(done.stdout)["rules"]
        except (ValueError, KeyError, TypeError):
            raise McppError(f"`{req.tool}` answered a scan of `{shown}` with no P1689 rules")
        with open(depfile) as f:
            read = [os.path.normpath(os.path.join(req.cwd, p)) for p in parse_depfile(f.read())]
    return unit_from_rules(rules, shown, partial), read


def unit_from_rules(rules: list, shown: str, partial: ModuleUnit) -> ModuleUnit:
    """The ModuleUnit of one P1689 rule (one source was scanned, so there is one rule)."""
    if len(rules) != 1 or not isinstance(rules[0], dict):
        raise McppError(f"a P1689 scan of `{shown}` gave {len(rules)} rules, expected 1")
    rule = rules[0]
    provides = rule.get("provides") or []
    if len(provides) > 1:
        raise McppError("a source file declares at most one module", Position(shown))
    module, exported = None, False
    if provides:
        module, exported = provides[0]["logical-name"], bool(provides[0].get("is-interface"))
    lines = dict(zip(partial.imports, partial.import_lines))
    imports = tuple(dict.fromkeys(r["logical-name"] for r in rule.get("requires") or []))
    if module is None and partial.module in imports and not partial.exported:
        # clang-scan-deps 19 names no module for an implementation unit (`module m;`): it lists
        # the interface it implicitly imports, which the text's declaration confirms
        module = partial.module
    if module is not None and ":" not in module and not exported:
        imports = tuple(n for n in imports if n != module)  # the implicit import, added by imports_of
    return ModuleUnit(module, exported, imports, partial.global_fragment,
                      tuple(lines.get(n, 0) for n in imports))
