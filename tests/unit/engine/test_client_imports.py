"""What answers a repeated `mcpp build` before the engine is imported stays that small: the warm
server's client and the no-op fast path import nothing beyond a few built-in modules (each
import of the standard library costs every command time: `typing` alone is milliseconds)."""
from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import sys
before = set(sys.modules)
from {module} import {name}
new = sorted(m for m in set(sys.modules) - before if not m.startswith("mcpp"))
import json  # only now: what it imports is not the module's
print(json.dumps(new))
"""


def _new_modules(module: str, name: str) -> set[str]:
    p = subprocess.run([sys.executable, "-c", PROBE.format(module=module, name=name)], capture_output=True,
                       text=True, check=True, timeout=60)
    return set(json.loads(p.stdout))


def test_the_servers_client_imports_only_built_in_modules():
    # `_socket` is the one extension module it must load (a shared library in most builds: each
    # costs a no-op ~0.3 ms to load, so `_struct` and `zlib` are not used); no `__future__`.
    assert _new_modules("mcpp.engine.server.client", "route") <= {"_socket", "_signal", "marshal"}


def test_the_fast_path_imports_no_heavy_module():
    heavy = {"typing", "re", "pathlib", "dataclasses", "enum", "tomllib", "__future__", "collections"}
    assert _new_modules("mcpp.engine.state.noop", "try_fast_noop") & heavy == set()
