"""Running a build program with starlark-pyo3.

Each evaluation gets fresh modules: the program and every module it loads see one `mcpp`
struct whose functions record into that package's `McppApi`, so a rule module's actions belong
to the package that loaded it. Starlark itself has no file, network or environment access;
`load` goes through `_load`, which admits only the modules `modules.py` allows.

Errors come back from Starlark as text (a traceback, `error: ...` and ` --> file:line:col`);
`program_error` turns that into an `McppError` at `file:line:col` with the call stack as notes.
"""
from __future__ import annotations

import os
import re
import time

import starlark as sl

from ..errors import McppError, Position
from ..manifest.load import display_path
from .api import McppApi, ProgramApiError, file_digest
from .api_context import PRELUDE_NAME, member, outside_prelude, struct_prelude
from .api_providers import WRAPPERS
from .bounded import TIME_LIMIT_ENV, run_bounded, time_limit
from .modules import LIBRARY_PREFIX, RuleModule, library_path

PROGRAM_NAME = "build.star"

_GLOBALS = sl.Globals.extended_by([sl.LibraryExtension.StructType, sl.LibraryExtension.Json])
# The struct is built in Starlark from private callables, so `mcpp.action` reads as docs/rules.md writes it.
_PRELUDE_SOURCE = struct_prelude() + "mcpp = struct(" + ", ".join(f"{n} = {WRAPPERS.get(n) or member(n)}" for n in McppApi.FUNCTIONS) + ")\n"


def parse(path: str) -> "sl.AstModule":
    """Parse a `.star` file, named in messages by its path relative to the working directory."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise McppError(f"{display_path(path)} is not UTF-8 text (byte {e.start})") from None
    try:
        return sl.parse(display_path(path), text, sl.Dialect.extended())
    except sl.StarlarkError as e:
        raise program_error(str(e)) from None


def loads_of(ast: "sl.AstModule") -> list[str]:
    return [load.module_id for load in ast.loads()]


class Evaluation:
    """One package's program: `run()` evaluates it; `api.result` and `api.reads` hold the outcome,
    `files` every `.star` file it used with its digest."""

    def __init__(self, api: McppApi, rule_modules: dict[str, RuleModule], program_label: str = PROGRAM_NAME):
        self.api = api
        self.rule_modules = rule_modules
        self.program_label = program_label
        self.files: dict[str, str | None] = {}
        self._frozen: dict[str, object] = {}
        self._loading: list[str] = []
        self._deadline = float("inf")

    def _module(self, path: str) -> "sl.Module":
        module = sl.Module()
        for name in McppApi.FUNCTIONS:
            module.add_callable(f"_mcpp_{name}", self.api.function(name, path))
        sl.eval(module, sl.parse(PRELUDE_NAME, _PRELUDE_SOURCE), _GLOBALS)
        return module

    def _eval_file(self, path: str, ast=None) -> "sl.Module":
        self.files[path] = file_digest(path)
        ast = ast if ast is not None else parse(path)
        module = self._module(path)
        # The evaluator asks this every few thousand steps; past the deadline it stops with the
        # position of the loop it was in.
        options = sl.EvalOptions(check_cancelled=lambda: time.monotonic() > self._deadline)
        try:
            sl.eval_with(options, module, ast, _GLOBALS, file_loader=sl.FileLoader(self._load))
        except sl.StarlarkError as e:
            error = program_error(outside_prelude(str(e)))
            if "Evaluation cancelled" in str(e) and time.monotonic() > self._deadline:
                error.message = (f"build program ran longer than {time_limit():g} s and was stopped here "
                                 f"(an endless loop? set ${TIME_LIMIT_ENV} to allow more)")
            raise error from None
        return module

    def _load(self, module_id: str):
        if module_id in self._frozen:
            return self._frozen[module_id]
        loader = self._loading[-1] if self._loading else None
        path = library_path(module_id)
        if path is None and loader is None and module_id in self.rule_modules:
            path = self.rule_modules[module_id].path
        if path is None:
            who = "the engine's library" if loader and loader.startswith(LIBRARY_PREFIX) else (
                f"rule module '{loader}'" if loader else self.program_label)
            allowed = "only the engine's library (`@mcpp//<file>.star`)" if loader else \
                "rule modules its dependencies provide and the engine's library"
            # Raised inside Starlark's `load`: it comes back with the loading file's position.
            raise ProgramApiError(f"{who} loads '{module_id}'; it may load {allowed}")
        self._loading.append(module_id)
        try:
            ast = parse(path)
            module = self._eval_file(path, ast)
        finally:
            self._loading.pop()
        frozen = module.freeze()
        self._frozen[module_id] = frozen
        return frozen

    def run(self, path: str, ast=None) -> None:
        """Evaluate in a child process under a time and memory limit (bounded.py); what the
        program declared and read comes back into `api` and `files` as if it had run here."""
        def evaluate():
            self._deadline = time.monotonic() + time_limit()
            self._eval_file(path, ast)
            return self.api.result, self.api.reads, self.files

        self.api.result, self.api.reads, self.files = run_bounded(evaluate, display_path(path))


_FRAME = re.compile(r"^\s*\* (?P<file>.+?):(?P<line>\d+), in (?P<func>.+)$")
_ARROW = re.compile(r"^\s*--> (?P<file>.+?):(?P<line>\d+):(?P<col>\d+)\s*$")
_API_PREFIX = re.compile(r"^(?:ProgramApiError|McppError): ")
_TYPE_PREFIX = re.compile(r"^TypeError: McppApi\.")


def program_error(text: str) -> McppError:
    """`file:line:col: error: message`, then the Starlark call stack (most recent call last)."""
    lines = text.splitlines()
    frames: list[str] = []
    message: list[str] = []
    pos = None
    i = 0
    while i < len(lines):
        line = lines[i]
        frame = _FRAME.match(line)
        if frame:
            code = lines[i + 1].strip() if i + 1 < len(lines) and not _FRAME.match(lines[i + 1]) else ""
            frames.append(f"  {frame['file']}:{frame['line']}, in {frame['func']}" + (f"\n      {code}" if code else ""))
            i += 2 if code else 1
            continue
        arrow = _ARROW.match(line)
        if arrow and pos is None:
            pos = Position(arrow["file"], int(arrow["line"]), int(arrow["col"]))
            break
        if line.startswith("error: ") and not message:
            message.append(line[len("error: "):])
        elif message:
            message.append(line)
        i += 1
    text_message = "\n".join(message).strip() or text.strip()
    text_message = _TYPE_PREFIX.sub("TypeError: mcpp.", _API_PREFIX.sub("", text_message))
    notes = ["note: Starlark call stack (most recent call last):", *frames] if frames else []
    return McppError(text_message, pos, notes)


def program_path(pkg_root: str) -> str | None:
    path = os.path.join(pkg_root, PROGRAM_NAME)
    return path if os.path.isfile(path) else None
