"""Where a package's build program is: a module of its own, so that a build whose packages have
none never imports the evaluator (starlark-pyo3, the `mcpp` struct and its prelude)."""
from __future__ import annotations

import os
import stat

from ..core.conventions import PROGRAM_FILE
from ..core.errors import McppError, Position, display_path

PROGRAM_NAME = PROGRAM_FILE


def program_path(pkg_root: str) -> str | None:
    """The package's build.star, None when there is none. A build.star that is not a regular file
    (a FIFO, a socket, a device, a directory) is an error: it is never opened (opening a FIFO
    blocks) nor taken for no program."""
    path = os.path.join(pkg_root, PROGRAM_NAME)
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISREG(mode):
        return path
    raise McppError(f"`{PROGRAM_NAME}` is not a regular file; a build program must be one", Position(display_path(path)))
