"""Running a build program with starlark-pyo3.

Each evaluation gets fresh modules: the program and every module it loads see one `mcpp`
struct whose functions record into that package's `McppApi`, so a rule module's actions belong
to the package that loaded it. Starlark itself has no file, network or environment access;
`load` goes through `_load`, which admits only the modules `modules.py` allows.

An error inside a loaded file is reported at that file's own `file:line:col`, with the chain of
`load` lines that reached it as notes (Starlark alone would report it at the outermost `load`).
`print(...)` is a global of every file: it becomes `note: <file>:<line>: ...` on the engine's
stderr, taken from the caller's frame of Starlark's own call stack.

Errors come back from Starlark as text (a traceback, `error: ...` and ` --> file:line:col`);
`program_error` turns that into an `McppError` at `file:line:col` with the call stack as notes.
"""
from __future__ import annotations

import os
import re
import time

import starlark as sl

from . import nesting
from ..core.errors import McppError, Position
from ..manifest.load import display_path
from .api import McppApi, ProgramApiError, file_digest
from .api_context import PRELUDE_NAME, member, outside_prelude, struct_prelude
from .api_providers import WRAPPERS
from .api_types import TYPES_PRELUDE
from .bounded import TIME_LIMIT_ENV, run_bounded, time_limit
from .modules import Loader, RuleModule, resolve
from .paths import PROGRAM_NAME


_GLOBALS = sl.Globals.extended_by([sl.LibraryExtension.StructType, sl.LibraryExtension.Json,
                                   sl.LibraryExtension.CallStack])
# The struct is built in Starlark from private callables, so `mcpp.action` reads as docs/rules.md writes it.
# `print` is Starlark too: only there is the caller's line known (its frame in `call_stack()`).
# So are the functions that declare an action (`POSITIONED`): the wrapper tells the engine where
# it was called, so an error found once the plan is made (a cycle, an output two actions write,
# an input nothing makes) names that line.
POSITIONED = ("action", "write")
_PRELUDE_SOURCE = (struct_prelude() + TYPES_PRELUDE
                   + "".join(f"def _mcpp_p_{n}(*args, **kwargs):\n    _mcpp_here(call_stack())\n"
                             f"    return {member(n)}(*args, **kwargs)\n" for n in POSITIONED)
                   + "mcpp = struct(" + ", ".join(f"{n} = {WRAPPERS.get(n) or (f'_mcpp_p_{n}' if n in POSITIONED else member(n))}"
                                                  for n in McppApi.FUNCTIONS)
                   + ")\n"
                   "def print(*args, sep = \" \"):\n"
                   "    _mcpp_print(call_stack(), sep.join([str(a) for a in args]))\n")


def parse(path: str) -> "sl.AstModule":
    """Parse a `.star` file, named in messages by its path relative to the working directory;
    one nested past `nesting.MAX_DEPTH` is refused at the token that goes past it."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise McppError(f"{display_path(path)} is not UTF-8 text (byte {e.start})") from None
    shown = display_path(path)
    nesting.check(text, shown)  # the parser recurses on the native stack: bound it first
    try:
        return nesting.on_big_stack(lambda: sl.parse(shown, text, sl.Dialect.extended()))
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
        self.prints: list[str] = []
        self._frozen: dict[str, object] = {}
        self._loading: list[Loader] = [Loader(program_label)]
        self._loading_paths: list[str] = []  # the files being evaluated, outermost first: a cycle is refused
        self._nested: McppError | None = None  # an error inside a loaded file, kept at its own position
        self._deadline = float("inf")

    def _module(self, path: str) -> "sl.Module":
        module = sl.Module()
        for name in McppApi.FUNCTIONS:
            module.add_callable(f"_mcpp_{name}", self.api.function(name, path))
        module.add_callable("_mcpp_print", self._print)
        module.add_callable("_mcpp_here", self._here)
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
            if self._nested is not None:
                # The failing `load` line of this file is one link of the chain.
                nested, self._nested = self._nested, None
                nested.notes.append(f"note: loaded from {error.pos}" if error.pos else "note: loaded")
                raise nested from None
            if "Evaluation cancelled" in str(e) and time.monotonic() > self._deadline:
                error.message = (f"build program ran longer than {time_limit():g} s and was stopped here "
                                 f"(an endless loop? set ${TIME_LIMIT_ENV} to allow more)")
            raise error from None
        return module

    def _load(self, module_id: str):
        self._nested = None
        # Permission first, from the loader alone; the cache (by file) only saves re-evaluating.
        found = resolve(self._loading[-1], module_id, self.rule_modules)
        if isinstance(found, McppError):
            # Raised inside Starlark's `load`: it comes back with the loading file's position.
            raise ProgramApiError("\n".join([found.message, *found.notes]))
        path, loader = found
        if path in self._frozen:
            return self._frozen[path]
        if path in self._loading_paths:
            chain = self._loading_paths[self._loading_paths.index(path):] + [path]
            raise ProgramApiError("load cycle: " + " -> ".join(display_path(p) for p in chain)
                                  + "; a file cannot load a file that (directly or not) loads it")
        self._loading.append(loader)
        self._loading_paths.append(path)
        try:
            module = self._eval_file(path, parse(path))
        except McppError as e:
            self._nested = e
            raise
        finally:
            self._loading.pop()
            self._loading_paths.pop()
        frozen = module.freeze()
        self._frozen[path] = frozen
        return frozen

    def _print(self, stack: str, text: str) -> None:
        """`print(...)`: the caller is the frame before `print`'s own, the last but one."""
        frames = [m for m in (_FRAME.match(line) for line in stack.splitlines()) if m]
        where = f"{frames[-2]['file']}:{frames[-2]['line']}" if len(frames) >= 2 else self.program_label
        self.prints.append(f"note: {where}: {text}")

    def _here(self, stack: str) -> None:
        """Where the next declaration is made: the caller of the prelude's wrapper (the last
        but one frame), at the column its statement starts, and the frames that led to it."""
        frames = [m for m in (_FRAME.match(line) for line in stack.splitlines()) if m]
        callers = [m for m in frames if m["file"] != PRELUDE_NAME]
        if not callers:
            self.api.declared_at = ("", ())
            return
        top = callers[-1]
        # Absolute: the evaluation is cached, and shown later from wherever mcpp then runs.
        col = _statement_column(top["file"], int(top["line"]))
        self.api.declared_at = (f"{os.path.abspath(top['file'])}:{top['line']}:{col}",
                                tuple(f"{os.path.abspath(m['file'])}:{m['line']}" for m in reversed(callers[:-1])))

    def run(self, path: str, ast=None) -> None:
        """Evaluate in a child process under a time and memory limit (bounded.py); what the
        program declared and read comes back into `api` and `files` as if it had run here."""
        def evaluate():
            self._deadline = time.monotonic() + time_limit()
            try:
                self._eval_file(path, ast)
            except McppError as e:
                e.printed = self.prints  # what it printed up to the error helps to find it
                raise
            return self.api.result, self.api.reads, self.files, self.prints

        try:
            self.api.result, self.api.reads, self.files, self.prints = run_bounded(evaluate, display_path(path))
        except McppError as e:
            self.prints = getattr(e, "printed", [])
            raise


def _statement_column(path: str, line: int) -> int:
    """1-based column of the first non-blank character of `line` in `path` (1 when unreadable)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read().splitlines()[line - 1]
    except (OSError, IndexError, UnicodeDecodeError):
        return 1
    return len(text) - len(text.lstrip()) + 1


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


