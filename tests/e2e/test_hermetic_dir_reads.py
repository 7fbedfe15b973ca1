"""`--sandbox dir` refuses what bwrap refuses: a compile that reads a file outside the staged
tree and the system roots bwrap shows (here a file under /etc) fails naming it."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.e2e_support import Mcpp


def host_file_source() -> tuple[str, str]:
    """(a /etc file, a main.cpp that compiles when it includes that file's text)."""
    hostname = Path("/etc/hostname")
    if hostname.exists() and re.fullmatch(r"[A-Za-z_]\w*", hostname.read_text().strip()):
        name = hostname.read_text().strip()
        return str(hostname), f'int {name} = 0;\nint main() {{ return\n#include "/etc/hostname"\n; }}\n'
    version = Path("/etc/debian_version")
    if version.exists() and re.fullmatch(r"\d+(\.\d+)?", version.read_text().strip()):
        return str(version), 'int main() { double v =\n#include "/etc/debian_version"\n; return v < 0; }\n'
    pytest.skip("no file under /etc whose text is a C++ expression")


@pytest.mark.parametrize("sandbox", ["bwrap", "dir"])
def test_a_compile_reading_a_host_file_fails_naming_it(project, mcpp: Mcpp, sandbox):
    path, main = host_file_source()
    root = project({
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
        "src/main.cpp": main,
    })
    res = mcpp("build", "--sandbox", sandbox, cwd=root)
    assert res.code != 0
    if sandbox == "dir":
        assert f"read undeclared input {path}" in res.err, res.err
    else:  # the file does not exist inside the namespace
        assert path in res.err and "No such file" in res.err, res.err
    assert not (root / "target/dev/p").exists()
