"""Outputs are collected without following a symlink the action made: a symlinked output, or a
symlinked directory above one, is refused naming the action and the path, and nothing outside
the action's directory is read, moved or written."""
from __future__ import annotations

import pytest

from tests.e2e.e2e_support import Mcpp


def project_files(script: str, output: str) -> dict[str, str]:
    return {
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
        "src/main.cpp": "int main() { return 0; }\n",
        "build.star": f"""
out = mcpp.out_dir()
mcpp.action(id = "x", argv = ["/bin/sh", "-c", "{script}".format(out = out)], inputs = [],
            outputs = [out + "/{output}"], tools = ["/bin/sh"], role = "check")
""",
    }


@pytest.mark.parametrize("sandbox", ["bwrap", "dir"])
def test_a_symlinked_output_to_a_host_file_is_refused(project, mcpp: Mcpp, tmp_path, sandbox):
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret\n")
    root = project(project_files(f"/bin/ln -s {secret} {{out}}/leak.txt", "leak.txt"))
    res = mcpp("build", "--sandbox", sandbox, cwd=root)
    assert res.code != 0
    assert "error: action rule p:x: output target/dev/.mcpp/gen/p/leak.txt: is a symbolic link" in res.err, res.err
    leak = root / "target/dev/.mcpp/gen/p/leak.txt"
    assert not leak.exists() and not leak.is_symlink()
    assert secret.read_text() == "host secret\n"
    assert "Traceback" not in res.err


@pytest.mark.parametrize("sandbox", ["bwrap", "dir"])
def test_a_symlinked_directory_above_an_output_is_refused_and_the_host_file_stays(project, mcpp: Mcpp,
                                                                                 tmp_path, sandbox):
    host_dir = tmp_path / "host"
    host_dir.mkdir()
    (host_dir / "f.txt").write_text("host file\n")
    root = project(project_files(f"/bin/rm -rf {{out}}/d; /bin/ln -s {host_dir} {{out}}/d", "d/f.txt"))
    res = mcpp("build", "--sandbox", sandbox, cwd=root)
    assert res.code != 0
    assert "error: action rule p:x: output target/dev/.mcpp/gen/p/d/f.txt: target/dev/.mcpp/gen/p/d is a symbolic link" \
        in res.err, res.err
    assert (host_dir / "f.txt").read_text() == "host file\n"  # not moved into target/ or the store
    assert not (root / "target/dev/.mcpp/gen/p/d/f.txt").exists()
    assert "Traceback" not in res.err
