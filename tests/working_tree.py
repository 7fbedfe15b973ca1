"""Which copy of mcpp the suite is testing: the working tree's, or an installed copy elsewhere.

The repository's folders (`engine/`, `cas/`, `sandbox/`, `starlark_rules/`) are imported as
`mcpp.engine`, `mcpp.cas`, ... (setup.py maps them). Only an editable install (`pip install -e .`)
makes those names resolve to this tree; after a plain `pip install .` they resolve to a copy in
site-packages, and a test run would pass or fail on that copy while the edits under test sit
unread. `problem` names what resolves outside the tree and how to fix it; conftest.py stops the
session on it, for this process and for the `mcpp` executable the e2e tests start.
"""
from __future__ import annotations

import importlib
import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("mcpp.engine", "mcpp.cas", "mcpp.sandbox", "mcpp.starlark_rules")

# Prints one `name=file` line per package, as the interpreter that runs it resolves them.
_LOCATE = (
    "import importlib\n"
    f"for name in {PACKAGES!r}:\n"
    "    try:\n"
    "        print(name + '=' + str(importlib.import_module(name).__file__))\n"
    "    except ImportError:\n"
    "        print(name + '=')\n"
)

FIX = f"install the working tree editable: `{REPO}/.venv/bin/pip install -e '{REPO}[test]'` (or `make install-test`)"


def problem(repo: Path, located: Mapping[str, str | None], who: str) -> str | None:
    """What is wrong when a package of `located` (name -> its `__file__`, None when it does not
    import) is not a file under `repo`; None when every one is. `who` names the importer."""
    root = repo.resolve()
    outside = []
    for name, file in located.items():
        if not file:
            outside.append(f"{name} does not import")
        elif not Path(file).resolve().is_relative_to(root):
            outside.append(f"{name} is {file}")
    if not outside:
        return None
    return (f"{who} does not import mcpp from the working tree {root}: " + "; ".join(outside)
            + f". The tests would exercise that copy, not this tree's code; {FIX}.")


CLIENT_SOURCE = REPO / "engine" / "server" / "native" / "client.c"


def stale_client(executable: str, source: Path = CLIENT_SOURCE) -> str | None:
    """What is wrong when `executable` (the installed `mcpp`) was built before the last change to
    the native client's source: the editable install imports the tree's Python, but compiles the
    client (setup.py) only when installed, so the e2e tests would drive the old program. None when
    it is newer, or either file is missing (no native client to compare)."""
    try:
        built, edited = os.stat(executable).st_mtime, os.stat(source).st_mtime
    except OSError:
        return None
    if built >= edited:
        return None
    return (f"the `mcpp` executable {executable} was built before the last change to {source}: "
            f"the tests would run the old native client; rebuild it: `make install-test` "
            f"(or `{REPO}/.venv/bin/pip install --no-deps -e '{REPO}'`)")


def located_here() -> dict[str, str | None]:
    """Where this interpreter (the one running pytest) finds each package."""
    found: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            found[name] = importlib.import_module(name).__file__
        except ImportError:
            found[name] = None
    return found


def interpreter_of(executable: str) -> str | None:
    """The Python a console script runs under: its `#!` line, or the `exec` line pip writes
    under `#!/bin/sh` when the interpreter's path is too long for a `#!` line. For `mcpp`, the
    native client (engine/server/native/client.c), or the script setup.py installs where no C
    compiler worked: that of `mcpp-py` beside it, the Python client it runs."""
    try:
        with open(executable, "rb") as f:
            head = f.read(512).decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    beside = os.path.join(os.path.dirname(executable), "mcpp-py")
    if os.path.basename(executable) == "mcpp" and os.path.exists(beside):
        return interpreter_of(beside)
    if not head or not head[0].startswith("#!"):
        return None
    if head[0].strip() == "#!/bin/sh" and len(head) > 1:
        m = re.match(r"'''exec' (\S+)", head[1])
        return m.group(1) if m else None
    return head[0][2:].strip().split()[0] or None


def located_by(executable: str) -> dict[str, str | None]:
    """Where the `mcpp` executable's interpreter finds each package, in this environment."""
    python = interpreter_of(executable)
    if python is None:
        return {name: None for name in PACKAGES}
    p = subprocess.run([python, "-c", _LOCATE], capture_output=True, text=True, env=dict(os.environ),
                       cwd="/", timeout=60)
    found: dict[str, str | None] = {name: None for name in PACKAGES}
    for line in p.stdout.splitlines():
        name, _, file = line.partition("=")
        if name in found:
            found[name] = file or None
    return found
