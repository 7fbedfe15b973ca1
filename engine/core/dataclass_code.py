"""The compiled code of the methods `@dataclass` generates, kept between processes.

`dataclasses` writes the source of each class's `__init__`, `__repr__`, `__eq__`, ... and compiles
it with `exec` in every process that imports the class: for the engine's classes that compile is a
large share of `mcpp`'s start-up before a build. The code a text compiles to depends on the text
and the interpreter only, so it can be kept as Python keeps a module's code in its `.pyc`:
`install()` (engine/entry.py, first thing on the in-process path and in the server) replaces the
`exec` that `dataclasses` calls (a module global there, looked up before the builtin) with one
that finds the exact text in a marshal file of code objects (each unmarshalled at its first use)
and compiles only the texts the file lacks; `CodeCache.save()` writes the file back when it
compiled any.
Anything but the one call shape `dataclasses` makes (a str, a globals dict, an empty locals
dict) goes to the builtin `exec` untouched.

The file is `dataclass_code.<cache tag>.bin` in this package's `__pycache__` (under
`sys.pycache_prefix` when one is set), beside the `.pyc` files: the same directory, so the same
owner and writability as the bytecode Python already runs from there, and the same rule as theirs
(`sys.dont_write_bytecode`: read, never written). It is named with the interpreter's cache tag and
starts with its bytecode magic number, so another interpreter never takes its code. A missing,
unreadable, corrupt or foreign file is an empty cache, never an error; its replacement is written
atomically (temp file + rename), so a reader sees the old file or the new one.

`install()` also imports `dataclasses` without the `inspect` module it imports for one rare call
(`_import_dataclasses`): a plain build never loads `inspect`.

Its size is bounded: entries are only added for texts some process compiled, and the texts are
fixed by the installed sources (the engine's classes and its dependencies'), so the file stops
changing after the first runs; what an upgrade in place leaves behind is dropped when the file
would pass `MAX_ENTRIES`: that write keeps only the texts the writing process used.
"""
from __future__ import annotations

import builtins
import marshal
import os
import sys
import types

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import CodeType

NAME = "dataclass_code"
# Several times the texts of the engine's classes; past it a write keeps only the texts used.
MAX_ENTRIES = 4096
# 2: each code object marshalled on its own, unmarshalled at its first use (a process uses a
# fraction of the file: unmarshalling all ~500 took a first build ~4 ms before its first compile)
_FORMAT = b"mcpp-dataclass-code-2\n"
_CODE = type(compile("", "<string>", "exec"))


def default_path() -> str | None:
    """Where this interpreter keeps the file, as it keeps this package's `.pyc` files; None
    when it keeps none (no cache tag)."""
    tag = sys.implementation.cache_tag
    if tag is None:
        return None
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.pycache_prefix:
        directory = os.path.join(sys.pycache_prefix, here.lstrip(os.sep))
    else:
        directory = os.path.join(here, "__pycache__")
    return os.path.join(directory, f"{NAME}.{tag}.bin")


def _header() -> bytes:
    from importlib._bootstrap_external import MAGIC_NUMBER  # what importlib.util re-exports

    return MAGIC_NUMBER + _FORMAT


class CodeCache:
    """The texts' code objects: those read from `path` (lazily, at the first `exec`) and those
    compiled in this process. `misses`: the texts compiled here."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.loaded: dict[str, bytes] | None = None  # text -> its code, marshalled
        self.used: dict[str, CodeType] = {}
        self.misses = 0
        self._saved_misses = 0

    def exec(self, source: object, globals: object = None, locals: object = None, /) -> None:  # noqa: A002
        """`dataclasses`' `exec(txt, globals, ns)`, the code of `txt` taken from the cache."""
        if type(source) is not str or type(globals) is not dict or type(locals) is not dict or locals:
            if globals is None:  # the caller's namespace, as the builtin would take it
                frame = sys._getframe(1)
                globals, locals = frame.f_globals, frame.f_locals if locals is None else locals
            builtins.exec(source, globals, locals)  # type: ignore[arg-type]
            return
        code = self.used.get(source)
        if code is None:
            if self.loaded is None:
                self.loaded = self._read()
            code = _code(self.loaded.get(source))
            if code is None:
                # dont_inherit: compiled as `dataclasses`' own `exec` compiles it, without this
                # module's `from __future__` flags
                code = compile(source, "<string>", "exec", dont_inherit=True)
                self.misses += 1
            self.used[source] = code
        builtins.exec(code, globals, locals)

    def _read(self) -> dict[str, bytes]:
        if self.path is None:
            return {}
        try:
            with open(self.path, "rb") as f:
                data = f.read()
            header = _header()
            if not data.startswith(header):
                return {}
            table = marshal.loads(memoryview(data)[len(header):])
        except Exception:  # noqa: BLE001 - a missing, unreadable or corrupt cache is an empty one
            return {}
        if type(table) is not dict:
            return {}
        return {k: v for k, v in table.items() if type(k) is str and type(v) is bytes}

    def save(self) -> bool:
        """Write the file back if this process compiled texts since the last save (and Python
        writes bytecode). True when it wrote. A file that cannot be written is left as it is."""
        if self.misses == self._saved_misses or self.path is None or sys.dont_write_bytecode:
            return False
        self._saved_misses = self.misses
        used = {text: marshal.dumps(code) for text, code in self.used.items()}
        table = {**(self.loaded or {}), **used}
        if len(table) > MAX_ENTRIES:
            table = used
        try:
            from mcpp.cas.atomic import PUBLIC, write_atomic

            write_atomic(self.path, _header() + marshal.dumps(table), mode=PUBLIC)
        except (OSError, ValueError):
            return False
        return True


def _code(marshalled: bytes | None) -> CodeType | None:
    """One entry's code object; None for none, or for bytes that are not one (compiled again)."""
    if marshalled is None:
        return None
    try:
        code = marshal.loads(marshalled)
    except Exception:  # noqa: BLE001 - a corrupt entry is a missing one
        return None
    return code if type(code) is _CODE else None


class _InspectOnFirstUse(types.ModuleType):
    """What `dataclasses` holds as `inspect` until it reads an attribute of it: then the real
    module, imported there and put in its place."""

    def __getattr__(self, name: str) -> object:
        import dataclasses

        if sys.modules.get("inspect") is self:
            del sys.modules["inspect"]
        import inspect

        dataclasses.inspect = inspect  # type: ignore[attr-defined]
        return getattr(inspect, name)


def _import_dataclasses() -> types.ModuleType:
    """`dataclasses`, imported without `inspect` where nothing has imported that yet.

    `dataclasses` imports `inspect` (with `ast`, `dis`, `tokenize` and `linecache`: ~5-10 ms of a
    first build's start on a 2-core machine, bench/RESULTS.md) for one call only, the signature
    it writes as the docstring of a class that has none; the engine's classes all have one, so
    a plain build never makes that call, and a class without one gets the real module then."""
    if "dataclasses" in sys.modules or "inspect" in sys.modules:
        import dataclasses

        return dataclasses
    stand_in = _InspectOnFirstUse("inspect")
    sys.modules["inspect"] = stand_in
    try:
        import dataclasses
    finally:
        if sys.modules.get("inspect") is stand_in:
            del sys.modules["inspect"]
    return dataclasses


def install(path: str | None = None) -> CodeCache:
    """Make `dataclasses` compile through a `CodeCache` of `path` (default: `default_path()`)
    from now on in this process. The caller calls its `save()` once the classes it imports first
    are made (a build killed later still leaves them); the process's exit saves what classes
    imported later (a command's own modules) added."""
    import atexit

    dataclasses = _import_dataclasses()

    cache = CodeCache(default_path() if path is None else path)
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]
    atexit.register(cache.save)
    return cache
