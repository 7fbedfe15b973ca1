"""`mcpp new`: scaffold a package. Transactional: a bad name or an existing path creates nothing."""
from __future__ import annotations

import os
import re
import shutil
import tempfile

from .errors import McppError

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


def _files(name: str, lib: bool) -> dict[str, str]:
    manifest = f'[package]\nname = "{name}"\nversion = "0.1.0"\nstandard = "c++20"\n'
    module = name.replace("-", "_")
    if lib:
        return {
            "mcpp.toml": manifest,
            f"src/{module}.cppm": (
                f"export module {module};\n\nexport namespace {module} {{\n"
                "int add(int a, int b) { return a + b; }\n}\n"),
            "tests/basic.cpp": (
                f"import {module};\n\nint main() {{\n    return {module}::add(2, 2) == 4 ? 0 : 1;\n}}\n"),
            ".gitignore": "/target\ncompile_commands.json\n",
        }
    return {
        "mcpp.toml": manifest,
        "src/main.cpp": '#include <cstdio>\n\nint main() {\n    std::puts("Hello, world!");\n    return 0;\n}\n',
        ".gitignore": "/target\ncompile_commands.json\n",
    }


def new_package(cwd: str, name: str, lib: bool) -> str:
    base = os.path.basename(os.path.normpath(name))
    if not _NAME.match(base):
        raise McppError(f"invalid package name `{base}`: use letters, digits, `-` and `_`, starting with a letter")
    dest = os.path.abspath(os.path.join(cwd, name))
    if os.path.exists(dest):
        raise McppError(f"destination `{name}` already exists")
    parent = os.path.dirname(dest)
    if not os.path.isdir(parent):
        raise McppError(f"parent directory `{os.path.dirname(name)}` does not exist")
    # Write everything in a sibling temporary directory, then rename it into place in one step.
    staging = tempfile.mkdtemp(prefix=f".{base}.", dir=parent)
    try:
        for rel, text in _files(base, lib).items():
            path = os.path.join(staging, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        os.rename(staging, dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return dest
