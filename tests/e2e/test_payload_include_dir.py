"""`mcpp.include_dir()` of an installed payload's directory (docs/rules.md, "The `mcpp` struct"):
its headers are read where the payload lies, as system headers are (the sandbox mounts the
payloads; the compile's depfile keys what it read), so an edit of one recompiles its readers."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.e2e.e2e_support import Mcpp, copy_example

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


@pytest.mark.parametrize("sandbox", ["bwrap", "dir"])
def test_an_installed_payloads_include_dir_reaches_the_compiles(tmp_path, mcpp: Mcpp, sandbox):
    root = copy_example("10-payloads", tmp_path)
    include = root / "index/trees/gen-1.0.0/include"
    include.mkdir()
    (include / "payload.h").write_text("#define FROM_PAYLOAD 7\n")
    with open(root / "build.star", "a") as f:
        f.write('mcpp.include_dir(mcpp.xpkg_dir("xim:gen") + "/include")\n')
    main = root / "src/main.cpp"
    main.write_text('#include "payload.h"\n' + main.read_text().replace(
        "int main() {", 'int main() {\n    std::printf("payload %d\\n", FROM_PAYLOAD);'))
    env = {"MCPP_PAYLOAD_INDEX": "index"}
    res = mcpp("run", "--sandbox", sandbox, cwd=root, env=env)
    assert res.code == 0, res.err
    assert "payload 7" in res.out.splitlines()
    installed = next(Path(mcpp.home, "payloads/xim/gen").glob("*/include/payload.h"))
    installed.write_text("#define FROM_PAYLOAD 9\n")  # what the compile read is in its key
    res = mcpp("run", "--sandbox", sandbox, cwd=root, env=env)
    assert "payload 9" in res.out.splitlines(), res.err
