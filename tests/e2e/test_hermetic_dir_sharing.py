"""What `--sandbox dir` cannot confine it does not share: no result of a dir build is keyed
where a bwrap build finds it, not even a compile whose depfile it checked (engine/trust/policy.py);
an undeclared response file fails the action (sandbox/undeclared.py).

Each test is an attack with real compilers; each failed on the engine before that change."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.e2e_support import Mcpp

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

MAIN = '#include <cstdio>\nint main() { std::printf("%d\\n", VALUE); }\n'


def manifest(**build: list[str]) -> str:
    lines = ['[package]\nname = "p"\nversion = "0.1.0"\n']
    if build:
        lines.append("[build]")
        lines += [f"{k} = {v!r}".replace("'", '"') for k, v in build.items()]
    return "\n".join(lines) + "\n"


def run_binary(root: Path) -> str:
    return subprocess.run([str(root / "target" / "dev" / "p")], capture_output=True, text=True, check=True).stdout


def test_an_undeclared_response_file_is_refused_and_never_serves_a_bwrap_build(project, mcpp: Mcpp, tmp_path):
    """`@/abs/flags.rsp` is read by the compiler driver, which no depfile names: dir read it,
    keyed nothing of it, and a bwrap build after `rm -rf target` was served the stale object."""
    rsp = tmp_path / "flags.rsp"
    rsp.write_text("-DVALUE=1\n")
    root = project({"mcpp.toml": manifest(cxxflags=[f"@{rsp}"]), "src/main.cpp": MAIN})
    res = mcpp("build", "--sandbox", "dir", cwd=root)
    assert res.code != 0, f"dir read an undeclared response file:\n{res.err}"
    assert f"read undeclared input {rsp}" in res.err, res.err
    rsp.write_text("-DVALUE=2\n")
    shutil.rmtree(root / "target", ignore_errors=True)
    res = mcpp("build", "--sandbox", "bwrap", cwd=root)
    assert res.code != 0, "bwrap was served an object made from a file it cannot see"


def test_a_response_file_passed_to_the_linker_is_refused_under_dir(project, mcpp: Mcpp, tmp_path):
    """`-Wl,@/abs/link.rsp` hands the linker a file to read that no key covers: the link's
    arguments are checked like a compile's (its depfile names what the linker read), so the
    undeclared response file fails the link, under dir as under bwrap, naming the file."""
    rsp = tmp_path / "link.rsp"
    rsp.write_text("-O1\n")
    root = project({"mcpp.toml": manifest(ldflags=[f"-Wl,@{rsp}"]),
                    "src/main.cpp": "int main() { return 0; }\n"})
    for sandbox in ("dir", "bwrap"):
        res = mcpp("build", "--sandbox", sandbox, cwd=root)
        assert res.code == 1, f"{sandbox}: {res.out}\n{res.err}"
        assert f"action link p:p read undeclared input {rsp}" in res.err, res.err
        assert not list(root.glob("target/dev/p")), "no binary is produced"


RULE = """
out = mcpp.out_dir()
mcpp.action(id = "gen", role = "artifact", inputs = [], outputs = [out + "/value.txt"], tools = ["/bin/sh"],
            argv = ["/bin/sh", "-c", "cat {secret} > $0 2>/dev/null || echo none > $0", out + "/value.txt"])
"""


def test_a_rule_action_run_under_dir_is_not_served_to_a_bwrap_build(project, mcpp: Mcpp, tmp_path):
    """A rule action under dir reads anything by absolute path (here a file outside the build,
    which bwrap does not show): its result must not reach a bwrap build, which runs it again."""
    secret = tmp_path / "secret.txt"
    secret.write_text("dir-only\n")
    root = project({"mcpp.toml": manifest(), "src/main.cpp": "int main() { return 0; }\n",
                    "build.star": RULE.format(secret=secret)})
    res = mcpp.build_json("--sandbox", "dir", cwd=root)
    assert "gen" in " ".join(res.executed()), res.out
    made = next(root.glob("target/dev/**/value.txt"))
    assert made.read_text() == "dir-only\n"
    shutil.rmtree(root / "target")
    res = mcpp.build_json("--sandbox", "bwrap", cwd=root)
    assert any("gen" in a for a in res.executed()), f"bwrap was served the dir rule action:\n{res.out}"
    assert next(root.glob("target/dev/**/value.txt")).read_text() == "none\n"
    # dir builds still share their own results with each other
    shutil.rmtree(root / "target")
    res = mcpp.build_json("--sandbox", "dir", cwd=root)
    assert res.executed() == [], res.out


# A depfile names what the preprocessor opened, not every read that shapes the object: the
# assembler's `.incbin` (inline asm), `__has_include` of a file (only its existence) and the
# driver's `-fplugin=`/`-specs=` files appear in none. Only a sandbox that confines reads proves
# a compile's result, so nothing a dir build makes may serve a bwrap build.
INCBIN = ('#include <cstdio>\nextern const char blob[];\n'
          '__asm__(".section .rodata\\n.global blob\\nblob:\\n.incbin \\"{secret}\\"\\n.byte 0\\n.text\\n");\n'
          'int main() {{ std::printf("%s", blob); }}\n')
HAS_INCLUDE = ('#include <cstdio>\n#if __has_include("{secret}")\n#define VALUE 1\n#else\n#define VALUE 0\n#endif\n'
               'int main() {{ std::printf("%d\\n", VALUE); }}\n')


@pytest.mark.parametrize("source", [INCBIN, HAS_INCLUDE], ids=["incbin", "has_include"])
def test_a_compile_under_dir_that_reads_past_its_depfile_never_serves_a_bwrap_build(project, mcpp: Mcpp, tmp_path,
                                                                                    source):
    secret = tmp_path / "secret.txt"
    secret.write_text("dir-only\n")
    root = project({"mcpp.toml": manifest(), "src/main.cpp": source.format(secret=secret)})
    res = mcpp("build", "--sandbox", "dir", cwd=root)
    assert res.code == 0, res.err
    dir_made = run_binary(root)
    assert dir_made in ("dir-only\n", "1\n"), dir_made
    shutil.rmtree(root / "target")
    res = mcpp("build", "--sandbox", "bwrap", cwd=root)
    # bwrap compiles it afresh: the host file does not exist there
    if source is INCBIN:
        assert res.code != 0, f"bwrap was served the object dir compiled from a host file:\n{res.err}"
    else:
        assert res.code == 0, res.err
        assert run_binary(root) == "0\n", "bwrap was served the object dir compiled from a host file"
