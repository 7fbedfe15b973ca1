"""No engine module keeps state in module globals that a function changes.

A warm server forks a child per build (engine/server/): whatever a module-level name holds when
the server forks, the build inherits, and whatever the build leaves there, a test run in the same
process sees next. So what a build takes from its host and leaves to it goes through the one
seam passed into `build(...)` (engine/build/memory.py), never through module state. This test
reads every module of `engine/` (AST, no import) and fails on:

- a `global` statement (a function re-binding a module name);
- a module-level name bound to a mutable container or object (a list, dict or set display or
  comprehension, or a call: every call but a known immutable constructor) that a function changes
  in place: a mutating method call (`NAME.append(...)`), an item or slice assignment or deletion,
  an augmented assignment (`NAME += ...`);
- a function assigning an attribute of an imported `mcpp` module (`globs.made = {}`): one module
  setting another's state.

Caches that live and die with one process and carry nothing between a server and its builds
are listed in `ALLOWED`, each with the reason.
"""
from __future__ import annotations

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "engine"

# (path relative to engine/, name) -> why the state may stay
ALLOWED = {
    ("build/compose.py", "_SANDBOX_WARNED"):
        "the sandbox warnings already shown by this process (one line, not one per host-tool build); "
        "only a build adds to it, and the server never builds in its own process",
}

_MUTATORS = {"append", "extend", "insert", "remove", "pop", "popitem", "clear", "update", "setdefault",
             "add", "discard", "difference_update", "intersection_update", "symmetric_difference_update",
             "appendleft", "extendleft", "rotate", "move_to_end", "sort", "reverse", "__setitem__"}
# calls whose result cannot be changed in place, or a module-level object that is a constant
_IMMUTABLE_CALLS = {"frozenset", "tuple", "str", "bytes", "int", "float", "bool", "object", "range",
                    "compile", "namedtuple", "NewType", "TypeVar", "ContextVar", "getLogger",
                    "field", "dataclass", "Path", "re.compile", "os.environ.get", "os.path.join",
                    "os.path.dirname", "os.path.abspath", "os.path.realpath", "os.getenv", "os.cpu_count",
                    "os.getpid", "os.path.expanduser", "_importlib_files", "struct.Struct", "Struct",
                    "MappingProxyType", "types.MappingProxyType", "lru_cache", "functools.lru_cache", "cache"}


def _call_name(node: ast.Call) -> str:
    parts = []
    f = node.func
    while isinstance(f, ast.Attribute):
        parts.append(f.attr)
        f = f.value
    if isinstance(f, ast.Name):
        parts.append(f.id)
    return ".".join(reversed(parts))


def _mutable(value: ast.expr) -> bool:
    if isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)):
        return True
    if isinstance(value, ast.Call):
        name = _call_name(value)
        return name not in _IMMUTABLE_CALLS and name.split(".")[-1] not in _IMMUTABLE_CALLS
    return False


def _module_state(tree: ast.Module) -> set[str]:
    """Names the module binds at its top level to a mutable value."""
    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and _mutable(stmt.value):
            names.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None and _mutable(stmt.value) \
                and isinstance(stmt.target, ast.Name):
            names.add(stmt.target.id)
    return names


def _mcpp_imports(tree: ast.Module) -> set[str]:
    """The names the module binds to imported `mcpp` modules (`from ..manifest import globs`)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level > 0 or (node.module or "").startswith("mcpp")):
            out.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.asname or a.name.split(".")[0] for a in node.names if a.name.startswith("mcpp"))
    return out


def _local_names(fn: ast.AST) -> set[str]:
    """Names a function binds itself (parameters, assignments): they shadow the module's."""
    out: set[str] = set()
    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        a = fn.args
        out.update(x.arg for x in a.posonlyargs + a.args + a.kwonlyargs)
        out.update(x.arg for x in (a.vararg, a.kwarg) if x is not None)
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
    return out


def _changes(fn: ast.AST, state: set[str], modules: set[str]) -> list[tuple[int, str]]:
    """(line, what) for each change `fn` makes to module state."""
    state = state - _local_names(fn)
    modules = modules - _local_names(fn)
    found: list[tuple[int, str]] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Global):
            found.append((node.lineno, f"`global {', '.join(node.names)}`"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in _MUTATORS and isinstance(node.func.value, ast.Name) \
                and node.func.value.id in state:
            found.append((node.lineno, f"`{node.func.value.id}.{node.func.attr}(...)`"))
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for t in targets:
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in state:
                    found.append((node.lineno, f"`{t.value.id}[...]` assigned"))
                elif isinstance(node, ast.AugAssign) and isinstance(t, ast.Name) and t.id in state:
                    found.append((node.lineno, f"`{t.id}` changed in place"))
                elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in modules:
                    found.append((node.lineno, f"`{t.value.id}.{t.attr}` (another module's state) assigned"))
    return found


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    rel = path.relative_to(ENGINE).as_posix()
    state = {n for n in _module_state(tree) if (rel, n) not in ALLOWED}
    modules = _mcpp_imports(tree)
    out = []
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]
    seen: set[tuple[int, str]] = set()
    for fn in functions:
        for line, what in _changes(fn, state, modules):
            if (line, what) not in seen:
                seen.add((line, what))
                out.append(f"engine/{rel}:{line}: {what}")
    return out


def test_no_engine_function_changes_module_level_state():
    found = [v for path in sorted(ENGINE.rglob("*.py")) for v in _violations(path)]
    assert not found, ("module-level state changed from functions (pass it in instead: engine/build/memory.py "
                       "for what a build shares with a server):\n  " + "\n  ".join(found))


def test_the_allowed_module_state_still_exists():
    """An allowance for state that is gone is removed with it."""
    for rel, name in ALLOWED:
        assert name in _module_state(ast.parse((ENGINE / rel).read_text())), (rel, name)


def test_the_scan_finds_each_kind_of_shared_state(tmp_path):
    """The scan itself: each pattern it exists for is reported, and a function's own names are not."""
    source = '''
from . import after_reply
from ..manifest import globs
_tasks = []
_early = None
_CONFIG = {"sandbox": None}
_seen = set()

def start():
    global _early
    _early = 1

def later(task):
    _tasks.append(task)

def configure(value):
    _CONFIG["sandbox"] = value

def in_child():
    globs.made = {}

def own(_seen):
    _seen.add(1)
    _tasks = []
    _tasks.append(2)
'''
    tree = ast.parse(source)
    state, modules = _module_state(tree), _mcpp_imports(tree)
    found = [what for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef) for _, what in _changes(fn, state, modules)]
    assert found == ["`global _early`", "`_tasks.append(...)`", "`_CONFIG[...]` assigned",
                     "`globs.made` (another module's state) assigned"]
