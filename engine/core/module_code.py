"""The compiled code of the modules a command imports, kept in one file beside their `.pyc` files.

A first build imports ~250 modules before its first compile (the engine's and the standard
library's that are not frozen into the interpreter), each from its own `.pyc` file. Where those
files are not in the page cache (a fresh CI machine; on a machine that pages out what nobody read
for a minute, the first build after a pause) each is a read from the disk, one after the other,
on the command's way to its first compile. This module keeps their code in one file, read as one
sequence (mapped: a process touches only the pages of the modules it imports), and `install()`
(engine/entry.py, first thing) puts a finder first on `sys.meta_path` that gives a module its
code from there.

A module is given its code from the file only where the normal import would find the same source
and load its `.pyc`: its source file still has the size and modification time (nanoseconds) the
entry was made from, and the entry's directory is where this import searches first (the first
directory of the parent package's `__path__`; for a top-level module, the same `sys.path` as the
entry was found on, with no relative directory before the entry's). Anything else
(another file found first, a source edited since, a module not in the file) is left to the
normal finders, so the file only ever saves reads, never changes what runs. Tracebacks, `__file__`,
`__cached__` and `__spec__` are the normal ones: the loader is the standard source loader, with
its code taken from the entry.

`ModuleCode.save()` writes the file again when this process imported, from `.pyc` files, modules
the file lacks: their code is the `.pyc`'s (read back; the import has just read it), so the file
holds what Python compiled, never anything compiled here. It is named `module_code.<cache tag>.bin`
in this package's `__pycache__` (under `sys.pycache_prefix` when one is set), as
engine/core/dataclass_code.py names its file, under the same rules: starts with the interpreter's
bytecode magic number, written atomically, never written where Python writes no bytecode, and
bounded (`MAX_ENTRIES`: past it a write keeps only the modules the writing process imported).
A missing, unreadable, corrupt or foreign file is an empty one, never an error.
"""
from __future__ import annotations

import marshal
import mmap
import os
import sys
from importlib._bootstrap_external import (  # what importlib.machinery and importlib.util re-export
    MAGIC_NUMBER,
    SourceFileLoader,
    cache_from_source,
    spec_from_file_location,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec

NAME = "module_code"
MAX_ENTRIES = 2048  # several times the modules a command imports
_FORMAT = b"mcpp-module-code-1\n"
_CODE = type(compile("", "<string>", "exec"))
# a `.pyc` header (PEP 552): magic, flags, source mtime, source size; flags 0: checked by mtime
_PYC_HEADER = 16


def default_path() -> str | None:
    """Where this interpreter keeps the file for this process's `sys.path` (beside this package's
    `.pyc` files; one file per import path, since a top-level module's entry holds only for the
    path it was found on); None when it keeps no bytecode files (no cache tag)."""
    from .dataclass_code import default_path as beside

    found = beside()
    if found is None:
        return None
    from .fnv import fnv1a_64

    path_tag = fnv1a_64("\0".join(sys.path).encode("utf-8", "surrogateescape"))
    return os.path.join(os.path.dirname(found), f"{NAME}.{sys.implementation.cache_tag}.{path_tag:016x}.bin")


class _Loader(SourceFileLoader):
    """The standard source loader, whose module's code is the entry's (once: a reload reads the
    `.pyc` or the source again)."""

    def __init__(self, fullname: str, path: str, code: memoryview) -> None:
        super().__init__(fullname, path)
        self._entry: memoryview | None = code

    def get_code(self, fullname: str):  # type: ignore[override]
        entry, self._entry = self._entry, None
        if entry is not None and fullname == self.name:
            try:
                code = marshal.loads(entry)
            except Exception:  # noqa: BLE001 - a corrupt entry: the normal way
                code = None
            if type(code) is _CODE:
                return code
        return super().get_code(fullname)


class ModuleCode:
    """The finder (first on `sys.meta_path`) and the file it reads: `index` maps a module's name to
    (source path, source mtime in ns, source size, whether a package, offset, length), read at
    the first import; `given`: the names it gave their code."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.index: dict[str, tuple] | None = None
        self.sys_path: list[str] = []
        self.found_in: set[str] = set()
        self.data: memoryview = memoryview(b"")
        self.given: set[str] = set()
        self.stale: set[str] = set()  # names whose entry's source has changed since

    def find_spec(self, name: str, path=None, target=None) -> ModuleSpec | None:
        if self.index is None:
            self._open()
        entry = self.index.get(name)  # type: ignore[union-attr]
        if entry is None or not _well_formed(entry, len(self.data)):
            return None
        source, mtime_ns, size, package, start, length = entry
        where = os.path.dirname(os.path.dirname(source) if package else source)
        if path is None:  # top level: found where sys.path says, the same list as when recorded
            if sys.path != self.sys_path or where not in self.found_in:
                return None
        elif next(iter(path), None) != where:  # a submodule: the first directory searched is the entry's
            return None
        try:
            st = os.stat(source)
        except OSError:
            return None
        if st.st_mtime_ns != mtime_ns or st.st_size != size:
            self.stale.add(name)
            return None
        self.given.add(name)
        return spec_from_file_location(name, source, loader=_Loader(name, source, self.data[start:start + length]),
                                       submodule_search_locations=[os.path.dirname(source)] if package else None)

    def invalidate_caches(self) -> None:
        pass

    def _open(self) -> None:
        self.index = {}
        if self.path is None:
            return
        try:
            with open(self.path, "rb") as f:
                data = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
        except (OSError, ValueError):  # missing, or empty
            return
        view = memoryview(data)
        header = MAGIC_NUMBER + _FORMAT
        try:
            if bytes(view[:len(header)]) != header:
                return
            length = int.from_bytes(view[len(header):len(header) + 8], "little")
            table = marshal.loads(view[len(header) + 8:len(header) + 8 + length])
            sys_path, index = table
            if type(sys_path) is not list or type(index) is not dict:
                return
        except Exception:  # noqa: BLE001 - a corrupt file is an empty one
            return
        base = len(header) + 8 + length
        self.sys_path = sys_path
        # the directories a top-level entry may be in: up to the first relative entry ("" or ".",
        # the working directory), which finds other files in another directory
        for entry in sys_path:
            if type(entry) is not str or not os.path.isabs(entry):
                break
            self.found_in.add(entry)
        self.data = view[base:]
        self.index = index

    def save(self) -> bool:
        """Write the file again where this process imported modules (from `.pyc` files checked
        against their sources) that it lacks; True when it wrote. Nothing is raised: it runs at
        the command's exit."""
        if self.path is None or sys.dont_write_bytecode:
            return False
        try:
            return self._save(self.path)
        except Exception:  # noqa: BLE001 - only a cache: the next command imports as Python does
            return False

    def _save(self, path: str) -> bool:
        if self.index is None:
            self._open()
        index = {n: e for n, e in (self.index or {}).items() if _well_formed(e, len(self.data))}
        if self.sys_path != sys.path:  # its top-level entries were found on another path
            index = {n: e for n, e in index.items() if "." in n}
        fresh = {}
        for name, module in list(sys.modules.items()):
            if name == "__main__" or (name in index and name not in self.stale):
                continue
            entry = _entry_of(module)
            if entry is not None:
                fresh[name] = entry
        if not fresh:
            return False
        table: dict[str, tuple[tuple, bytes | memoryview]] = {}
        keep = index if len(index) + len(fresh) <= MAX_ENTRIES else {n: index[n] for n in self.given if n in index}
        for name, (source, mtime_ns, size, package, start, length) in keep.items():
            table[name] = ((source, mtime_ns, size, package), self.data[start:start + length])
        table.update(fresh)
        blobs, out_index, offset = [], {}, 0
        for name, (meta, code) in table.items():
            out_index[name] = (*meta, offset, len(code))
            blobs.append(code)
            offset += len(code)
        head = marshal.dumps([list(sys.path), out_index])
        try:
            from mcpp.cas.atomic import PUBLIC, write_atomic

            write_atomic(path, b"".join([MAGIC_NUMBER, _FORMAT, len(head).to_bytes(8, "little"), head, *blobs]),
                         mode=PUBLIC)
        except (OSError, ValueError):
            return False
        return True


def _well_formed(entry: object, data_size: int) -> bool:
    """Whether `entry` is (source, mtime ns, size, package, offset, length) within the data."""
    if type(entry) is not tuple or len(entry) != 6:
        return False
    source, mtime_ns, size, package, start, length = entry
    return (type(source) is str and type(mtime_ns) is int and type(size) is int and type(package) is bool
            and type(start) is int and type(length) is int and 0 <= start and 0 <= length and start + length <= data_size)


def _entry_of(module) -> tuple[tuple, bytes] | None:
    """((source, mtime ns, size, package), marshalled code) of a module imported from a `.pyc`
    that matches its source now, as the import checked it; None for any other module."""
    spec = getattr(module, "__spec__", None)
    if spec is None or type(spec.loader) is not SourceFileLoader or not spec.has_location:
        return None
    source = spec.origin
    if not isinstance(source, str) or not source.endswith(".py"):
        return None
    try:
        st = os.stat(source)
        with open(cache_from_source(source), "rb") as f:
            pyc = f.read()
    except (OSError, ValueError, NotImplementedError):
        return None
    flags = int.from_bytes(pyc[4:8], "little")
    if (pyc[:4] != MAGIC_NUMBER or flags != 0 or int.from_bytes(pyc[8:12], "little") != int(st.st_mtime) & 0xFFFFFFFF
            or int.from_bytes(pyc[12:16], "little") != st.st_size & 0xFFFFFFFF):
        return None
    package = spec.submodule_search_locations is not None
    return (source, st.st_mtime_ns, st.st_size, package), pyc[_PYC_HEADER:]


def install(path: str | None = None) -> ModuleCode:
    """Put a `ModuleCode` of `path` (default: `default_path()`) first on `sys.meta_path`; the
    caller calls its `save()` once the modules it imports first are imported."""
    finder = ModuleCode(default_path() if path is None else path)
    sys.meta_path.insert(0, finder)
    return finder
