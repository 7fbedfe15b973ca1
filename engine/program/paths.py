"""Where a package's build program is: a module of its own, so that a build whose packages have
none never imports the evaluator (starlark-pyo3, the `mcpp` struct and its prelude)."""
from __future__ import annotations

import os

PROGRAM_NAME = "build.star"


def program_path(pkg_root: str) -> str | None:
    path = os.path.join(pkg_root, PROGRAM_NAME)
    return path if os.path.isfile(path) else None
