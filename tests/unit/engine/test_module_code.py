"""The modules' code kept in one file (engine/core/module_code.py): given only where the normal
import would load the same source's `.pyc`, written from the `.pyc` files Python wrote, and an
empty file whatever is wrong with it. Each case runs in a fresh interpreter, on a package of its
own."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

# Imports `pkg.mod` with the file at `bundle` on `sys.path` = [`where`, ...]; prints what the
# finder gave, the module's value and whether the file was written; `save` writes it.
SCRIPT = textwrap.dedent("""
    import json, os, sys
    bundle, where, save = sys.argv[1], sys.argv[2], sys.argv[3] == "save"
    # no "" (the working directory) first, as the engine's, unless asked for
    sys.path[:] = ([""] if os.environ.get("RELATIVE_FIRST") else []) + [where] + [p for p in sys.path if p]
    from mcpp.engine.core.module_code import install
    finder = install(bundle)
    import pkg.mod
    import top
    wrote = finder.save() if save else False
    print(json.dumps({"given": sorted(finder.given), "value": pkg.mod.VALUE, "top": top.VALUE,
                      "file": pkg.mod.__file__, "wrote": wrote}))
""")


def _run(tmp_path, where, save=True, extra_env=None) -> dict:
    import json

    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # Python writes bytecode unless the case says otherwise
    env.update(extra_env or {})
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "mc.bin"), str(where), "save" if save else ""],
                         capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _package(where, value: int = 1) -> None:
    (where / "pkg").mkdir(parents=True, exist_ok=True)
    (where / "pkg/__init__.py").write_text("")
    (where / "pkg/mod.py").write_text(f"VALUE = {value}\n")
    (where / "top.py").write_text(f"VALUE = {value}\n")


def _pycs(where) -> list[str]:
    return sorted(str(p.relative_to(where)) for p in where.rglob("*.pyc"))


def test_a_module_is_given_its_code_from_the_file_once_a_process_wrote_it(tmp_path):
    where = tmp_path / "src"
    _package(where)
    first = _run(tmp_path, where)
    assert first["given"] == [] and first["wrote"] is True and (tmp_path / "mc.bin").exists()
    for pyc in where.rglob("*.pyc"):  # the file holds their code now
        pyc.unlink()
    second = _run(tmp_path, where)
    assert second["given"] == ["pkg", "pkg.mod", "top"] and second["value"] == 1
    assert second["file"] == str(where / "pkg/mod.py")  # the normal module, its source named
    assert second["wrote"] is False  # nothing it lacked
    assert _pycs(where) == []  # its code came from the file: nothing was compiled from the source


def test_a_source_changed_since_is_imported_as_it_is_now_and_its_entry_is_written_again(tmp_path):
    where = tmp_path / "src"
    _package(where)
    _run(tmp_path, where)
    time.sleep(0.01)
    (where / "pkg/mod.py").write_text("VALUE = 22\n")
    changed = _run(tmp_path, where)
    assert changed["value"] == 22 and "pkg.mod" not in changed["given"] and changed["wrote"] is True
    again = _run(tmp_path, where)
    assert again["value"] == 22 and "pkg.mod" in again["given"]


def test_a_module_found_elsewhere_first_is_not_given_the_files_code(tmp_path):
    """The entry was made from `src/`; this process's path finds `other/` first: its modules,
    never the file's (a top-level module under another `sys.path` is another file's entry; a
    submodule is given only where its parent package's `__path__` holds the entry's directory)."""
    where = tmp_path / "src"
    _package(where)
    _run(tmp_path, where)
    other = tmp_path / "other"
    _package(other, value=7)
    shadowed = _run(tmp_path, other, save=False)
    assert shadowed == {**shadowed, "given": [], "value": 7, "top": 7, "file": str(other / "pkg/mod.py")}


def test_a_top_level_module_after_the_working_directory_on_the_path_is_not_given(tmp_path):
    """`""` first on `sys.path` finds the working directory's files first, wherever that is."""
    where = tmp_path / "src"
    _package(where)
    _run(tmp_path, where, extra_env={"RELATIVE_FIRST": "1"})
    again = _run(tmp_path, where, extra_env={"RELATIVE_FIRST": "1"})
    assert again["given"] == ["pkg.mod"] and again["value"] == 1  # the submodule: its package's first directory


@pytest.mark.parametrize("content", [b"", b"not a module file", b"\0" * 64])
def test_a_corrupt_or_foreign_file_is_an_empty_one(tmp_path, content):
    where = tmp_path / "src"
    _package(where)
    (tmp_path / "mc.bin").write_bytes(content)
    result = _run(tmp_path, where)
    assert result["given"] == [] and result["value"] == 1 and result["wrote"] is True


def test_a_truncated_file_is_an_empty_one(tmp_path):
    where = tmp_path / "src"
    _package(where)
    _run(tmp_path, where)
    data = (tmp_path / "mc.bin").read_bytes()
    (tmp_path / "mc.bin").write_bytes(data[:len(data) // 2])
    result = _run(tmp_path, where, save=False)
    assert result["value"] == 1 and result["top"] == 1


def test_nothing_is_written_where_python_writes_no_bytecode(tmp_path):
    where = tmp_path / "src"
    _package(where)
    result = _run(tmp_path, where, extra_env={"PYTHONDONTWRITEBYTECODE": "1"})
    assert result["wrote"] is False and not (tmp_path / "mc.bin").exists()
