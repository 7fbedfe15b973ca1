"""The cache of the code `dataclasses` generates (engine/core/dataclass_code.py): a second process
compiles none of the engine's dataclass methods, a bad file is an empty cache that gets rewritten,
no file is written where Python writes no bytecode, and the classes made from cached code behave
as compiled ones."""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from mcpp.engine.core import dataclass_code
from mcpp.engine.core.dataclass_code import CodeCache

IMPORT_ENGINE = """
import json, sys
from mcpp.engine.core import dataclass_code
cache = dataclass_code.install(sys.argv[1])
import mcpp.engine.cli.app
print(json.dumps({"misses": cache.misses, "used": len(cache.used), "saved": cache.save()}))
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    return {**env, **extra}


def _import_engine(path: str, **env: str) -> dict:
    p = subprocess.run([sys.executable, "-c", IMPORT_ENGINE, path], capture_output=True, text=True,
                       env=_env(**env), timeout=120)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    return json.loads(p.stdout)


def test_a_second_process_compiles_none_of_the_engines_dataclass_code(tmp_path):
    path = str(tmp_path / "__pycache__" / "dataclass_code.bin")
    first = _import_engine(path)
    assert first["misses"] == first["used"] > 100 and first["saved"]
    second = _import_engine(path)
    assert second == {"misses": 0, "used": first["used"], "saved": False}


@pytest.mark.parametrize("content", [
    b"",
    b"garbage \x00\xff" * 50,
    dataclass_code._header() + b"\xff\x00not marshal",
    dataclass_code._header() + b"\xe9" + b"\x00" * 4,  # a marshal object cut short
    b"\x00\x00\r\n" + dataclass_code._FORMAT + b"{}",  # another interpreter's magic number
])
def test_a_corrupt_or_foreign_file_is_ignored_and_rewritten(tmp_path, content):
    path = tmp_path / "dataclass_code.bin"
    path.write_bytes(content)
    first = _import_engine(str(path))
    assert first["misses"] > 100 and first["saved"]
    assert _import_engine(str(path))["misses"] == 0


def test_a_file_of_other_types_is_an_empty_cache(tmp_path):
    import marshal

    path = tmp_path / "dataclass_code.bin"
    path.write_bytes(dataclass_code._header() + marshal.dumps({"def f(): pass": "not code", 1: b"x"}))
    assert CodeCache(str(path))._read() == {}
    text = "def __create_fn__():\n def f(): pass\n return f"
    path.write_bytes(dataclass_code._header() + marshal.dumps({text: marshal.dumps("not code")}))
    cache = CodeCache(str(path))
    cache.exec(text, {}, {})  # an entry that is not a code object is compiled again
    assert cache.misses == 1
    path.write_bytes(dataclass_code._header() + marshal.dumps([1, 2]))
    assert CodeCache(str(path))._read() == {}


def test_no_file_is_written_where_python_writes_no_bytecode(tmp_path):
    path = tmp_path / "dataclass_code.bin"
    assert not _import_engine(str(path), PYTHONDONTWRITEBYTECODE="1")["saved"]
    assert not path.exists() and list(tmp_path.iterdir()) == []
    _import_engine(str(path))  # written where bytecode is
    before = path.read_bytes()
    assert _import_engine(str(path), PYTHONDONTWRITEBYTECODE="1")["misses"] == 0  # still read
    assert path.read_bytes() == before


def test_the_entry_point_keeps_the_file_beside_the_bytecode(tmp_path):
    prefix = tmp_path / "pyc"
    run = ("import sys; sys.argv = ['mcpp', '--version']\n"
           "from mcpp.engine.entry import main\nmain()")
    p = subprocess.run([sys.executable, "-X", f"pycache_prefix={prefix}", "-c", run], capture_output=True,
                       text=True, env=_env(MCPP_NO_SERVER="1", MCPP_HOME=str(tmp_path / "home")), timeout=120)
    assert p.returncode == 0, p.stderr
    core = os.path.dirname(os.path.abspath(dataclass_code.__file__))
    expected = os.path.join(str(prefix), core.lstrip(os.sep), f"dataclass_code.{sys.implementation.cache_tag}.bin")
    assert os.path.exists(expected)
    assert len(CodeCache(expected)._read()) > 100


def test_default_path_is_in_the_packages_pycache_with_the_cache_tag():
    if sys.pycache_prefix:
        pytest.skip("a pycache prefix is set")
    path = dataclass_code.default_path()
    assert path == os.path.join(os.path.dirname(os.path.abspath(dataclass_code.__file__)), "__pycache__",
                                f"dataclass_code.{sys.implementation.cache_tag}.bin")


def _make(cache: CodeCache, monkeypatch) -> type:
    monkeypatch.setattr(dataclasses, "exec", cache.exec, raising=False)

    @dataclasses.dataclass(frozen=True, order=True)
    class Point:
        """A point."""
        x: int
        y: int = 0
        tags: tuple[str, ...] = dataclasses.field(default=(), compare=False)

    return Point


def test_classes_made_from_cached_code_behave_as_compiled_ones(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    path = str(tmp_path / "dataclass_code.bin")
    compiled = CodeCache(path)
    A = _make(compiled, monkeypatch)
    assert compiled.misses > 0 and compiled.save()
    cached = CodeCache(path)
    B = _make(cached, monkeypatch)
    assert cached.misses == 0 and cached.used.keys() == compiled.used.keys()
    for cls in (A, B):
        p = cls(1, 2, ("a",))
        assert repr(p).endswith("Point(x=1, y=2, tags=('a',))")
        assert p == cls(1, 2) and p != cls(1, 3) and cls(1) < cls(2)
        assert hash(p) == hash(cls(1, 2))
        with pytest.raises(dataclasses.FrozenInstanceError):
            p.x = 5  # type: ignore[misc]
        with pytest.raises(TypeError):
            cls()  # type: ignore[call-arg]
        assert cls(3).y == 0 and cls(3).tags == ()


def test_other_calls_go_to_the_builtin_exec(tmp_path):
    cache = CodeCache(str(tmp_path / "dataclass_code.bin"))
    g: dict = {}
    cache.exec("x = 1", g)  # no locals dict: not the shape dataclasses uses
    code = compile("y = 2", "<string>", "exec")
    cache.exec(code, g, {})  # not a str
    ns = {"z": 0}
    cache.exec("z = 3", g, ns)  # locals not empty
    assert g["x"] == 1 and ns["z"] == 3 and cache.misses == 0 and cache.used == {}
    cache.exec("w = 4")  # the caller's namespace, as the builtin takes it
    assert cache.misses == 0 and cache.loaded is None


def test_the_file_is_bounded_a_write_past_the_limit_keeps_only_the_texts_used(tmp_path, monkeypatch):
    import marshal

    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(dataclass_code, "MAX_ENTRIES", 3)
    path = tmp_path / "dataclass_code.bin"
    stale = {f"def __create_fn__():\n def f{i}(): pass\n return f{i}": marshal.dumps(compile("pass", "<string>", "exec"))
             for i in range(3)}
    path.write_bytes(dataclass_code._header() + marshal.dumps(stale))
    cache = CodeCache(str(path))
    used = "def __create_fn__():\n def g(): return 1\n return g"
    cache.exec(used, {}, {})
    assert cache.misses == 1 and cache.save()
    assert set(CodeCache(str(path))._read()) == {used}  # four would pass the limit: only the one used
    grown = CodeCache(str(path))
    monkeypatch.setattr(dataclass_code, "MAX_ENTRIES", 10)
    other = "def __create_fn__():\n def h(): return 2\n return h"
    grown.exec(other, {}, {})
    assert grown.save() and set(CodeCache(str(path))._read()) == {used, other}  # under it: the union


def test_install_imports_dataclasses_without_inspect_until_a_class_without_a_docstring_needs_it():
    """`inspect` is imported for the one call `dataclasses` makes of it: the signature it writes
    as the docstring of a class without one. Until then a process has not loaded it."""
    p = subprocess.run([sys.executable, "-c", """
import json, sys
from mcpp.engine.core import dataclass_code
dataclass_code.install()
import dataclasses
import mcpp.engine.cli.launch  # every class of a plain build's path
before = "inspect" in sys.modules

@dataclasses.dataclass
class Plain:
    a: int
    b: str = "x"

print(json.dumps([before, Plain.__doc__, "inspect" in sys.modules, dataclasses.inspect is sys.modules["inspect"]]))
"""], capture_output=True, text=True, check=True, timeout=60)
    assert json.loads(p.stdout) == [False, "Plain(a: int, b: str = 'x')", True, True]


def test_install_after_inspect_was_imported_leaves_dataclasses_as_it_is():
    p = subprocess.run([sys.executable, "-c", """
import inspect, sys
from mcpp.engine.core import dataclass_code
dataclass_code.install()
import dataclasses
print(dataclasses.inspect is inspect)
"""], capture_output=True, text=True, check=True, timeout=60)
    assert p.stdout.strip() == "True"
