"""A tool's message names the user's file, not the root it saw in the sandbox (`/execroot/...` under
bwrap, a private directory under dir): shown when the action fails and when its output is
replayed from the cache."""
from __future__ import annotations

import shutil

import pytest

from mcpp.sandbox import probe_bwrap

from tests.e2e.e2e_support import Mcpp

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

# The check tool is `sh`: it prints where it found its input, and fails when the input says "bad".
PROGRAM = """
src = mcpp.manifest_dir() + "/data/input.txt"
stamp = mcpp.out_dir() + "/checked"
mcpp.action(id = "lint", argv = ["/bin/sh", "-c", "echo \\"$1:1: note: checked\\"; grep -q bad \\"$1\\" && echo \\"$1:1: error: bad input\\" >&2 && exit 1; touch \\"$2\\"", "sh", src, stamp],
            inputs = [src], outputs = [stamp], tools = ["/bin/sh", "/bin/grep", "/usr/bin/touch"], role = "check")
"""


@pytest.mark.parametrize("mode", ["bwrap", "dir", "off"])
def test_a_tool_message_names_the_users_path(project, mcpp: Mcpp, mode):
    if mode == "bwrap" and (why := probe_bwrap()) is not None:
        pytest.skip(f"bwrap does not work here: {why}")
    root = project({
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
        "src/main.cpp": "int main() { return 0; }\n",
        "data/input.txt": "bad\n",
        "build.star": PROGRAM,
    })
    res = mcpp("build", "--sandbox", mode, cwd=root)
    assert res.code == 1, res.err
    assert "data/input.txt:1: error: bad input" in res.err, res.err
    line = next(x for x in res.err.splitlines() if "error: bad input" in x)
    assert line.startswith("data/input.txt:1:"), res.err
    assert "/execroot" not in res.err and "@@EXECROOT@@" not in res.err

    (root / "data/input.txt").write_text("good\n")
    res = mcpp("build", "--sandbox", mode, cwd=root)
    assert res.code == 0, res.err
    assert "data/input.txt:1: note: checked" in res.err.splitlines(), res.err

    shutil.rmtree(root / "target")  # replayed from the store, the same words
    res = mcpp("build", "--sandbox", mode, cwd=root / "data")
    assert res.code == 0, res.err
    assert "input.txt:1: note: checked" in res.err.splitlines(), res.err
