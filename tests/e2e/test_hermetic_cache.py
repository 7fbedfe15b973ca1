"""What may enter the shared caches, and what a build may read: attacks on the promise that a
result in the store is the result of exactly its keyed inputs (docs/ARCHITECTURE.md).

Each test is an attack with real actions and real compilers; each failed on the engine before
the change it guards."""
from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
import uuid
from pathlib import Path

import pytest

from tests.e2e.e2e_support import Mcpp

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

MANIFEST = '[package]\nname = "p"\nversion = "0.1.0"\n'


def run_binary(root: Path) -> str:
    return subprocess.run([str(root / "target" / "dev" / "p")], capture_output=True, text=True, check=True).stdout


# -- `--sandbox off` results stay out of the hermetic caches ---------------------------------------

@pytest.mark.parametrize("mode", ["bwrap", "dir"])
def test_an_off_result_never_serves_a_hermetic_build(project, mcpp: Mcpp, tmp_path, mode):
    """`off` reads a header outside the build that bwrap and dir refuse; before, the hermetic
    build was served the `off` result from the action cache (and from `target/` as fresh)."""
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "value.h").write_text("#define VALUE 7\n")
    root = project({"mcpp.toml": MANIFEST,
                    "src/main.cpp": '#include <cstdio>\n#include "../../secret/value.h"\n'
                                    'int main() { std::printf("%d\\n", VALUE); }\n'})
    off = mcpp("build", "--sandbox", "off", cwd=root)
    assert off.code == 0, off.err
    assert run_binary(root) == "7\n"
    hermetic = mcpp("build", "--sandbox", mode, cwd=root)
    assert hermetic.code != 0, f"{mode} build was served the off result:\n{hermetic.out}{hermetic.err}"
    assert "value.h" in hermetic.err
    shutil.rmtree(root / "target")
    again = mcpp("build", "--sandbox", mode, cwd=root)
    assert again.code != 0, f"{mode} build after rm -rf target restored the off result"
    # `off` builds may still share their own results with each other.
    shutil.rmtree(root / "target")
    res = mcpp.build_json("--sandbox", "off", cwd=root)
    assert res.executed() == [], res.out


def test_a_hermetic_build_after_an_off_build_runs_the_action(project, mcpp: Mcpp):
    root = project({"mcpp.toml": MANIFEST, "src/main.cpp": "int main() { return 0; }\n"})
    mcpp.build_json("--sandbox", "off", cwd=root)
    res = mcpp.build_json("--sandbox", "dir", cwd=root)
    assert sorted(res.executed()) == ["compile p:src/main.cpp", "link p:p"], res.out
    res = mcpp.build_json("--sandbox", "dir", cwd=root)
    assert res.executed() == []


# -- every file a compile's depfile names is in its key -------------------------------------------

@pytest.fixture
def system_header():
    """A header under /usr/local/include, made for the test and removed after it."""
    directory = Path("/usr/local/include")
    if os.geteuid() != 0 or not os.access(directory, os.W_OK):
        pytest.skip("needs to write /usr/local/include (CI runs as root)")
    path = directory / f"mcpp_test_{uuid.uuid4().hex[:12]}.h"
    yield path
    path.unlink(missing_ok=True)


@pytest.mark.parametrize("mode", ["bwrap", "dir"])
def test_a_changed_system_header_rebuilds_and_rm_target_does_not_restore_the_old_object(
        project, mcpp: Mcpp, system_header: Path, mode):
    system_header.write_text("#define VALUE 1\n")
    root = project({"mcpp.toml": MANIFEST,
                    "src/main.cpp": f'#include <cstdio>\n#include <{system_header.name}>\n'
                                    'int main() { std::printf("%d\\n", VALUE); }\n'})
    mcpp("build", "--sandbox", mode, cwd=root, check=True)
    assert run_binary(root) == "1\n"
    system_header.write_text("#define VALUE 2\n")
    res = mcpp.build_json("--sandbox", mode, cwd=root)
    assert "compile p:src/main.cpp" in res.executed(), res.out
    assert run_binary(root) == "2\n"
    # The plain no-op fast path must notice it too.
    system_header.write_text("#define VALUE 3\n")
    mcpp("build", "--sandbox", mode, cwd=root, check=True)
    assert run_binary(root) == "3\n"
    shutil.rmtree(root / "target")
    system_header.write_text("#define VALUE 4\n")
    mcpp("build", "--sandbox", mode, cwd=root, check=True)
    assert run_binary(root) == "4\n"
    # Unchanged, the header is answered from the stat cache: nothing is hashed again.
    res = mcpp.build_json("--sandbox", mode, cwd=root)
    done = [e for e in res.events if e.get("reason") == "build-finished"][0]
    assert done["files_hashed"] == 0 and res.executed() == []


# -- what rule actions read and write is ordered, or refused, at plan time -------------------------

RULE_MAIN = '#include <cstdio>\nextern "C" int extra();\nint main() { std::printf("%d\\n", extra()); }\n'


@pytest.mark.parametrize("mode", ["bwrap", "dir"])
def test_a_rule_action_reading_a_compile_output_of_its_package_runs_after_the_compile(project, mcpp: Mcpp, mode):
    root = project({
        "mcpp.toml": MANIFEST,
        "src/main.cpp": RULE_MAIN,
        "src/lib.cpp": "int lib_value() { return 1; }\n",
        "build.star": """
            out = mcpp.out_dir()
            obj = mcpp.manifest_dir() + "/target/" + mcpp.profile() + "/.mcpp/obj/p/src/lib.cpp.o"
            # Needs the compile's object (it fails when the file is empty or missing), makes another.
            mcpp.action(id = "extra", role = "object", inputs = [obj], outputs = [out + "/extra.o"],
                        tools = ["/bin/sh", "/usr/bin/gcc"],
                        argv = ["/bin/sh", "-c", "test -s \\"$0\\" && echo 'int extra(void){return 7;}' "
                                + "| /usr/bin/gcc -x c -c - -o \\"$1\\"", obj, out + "/extra.o"])
        """,
    })
    res = mcpp("build", "--sandbox", mode, cwd=root)
    assert res.code == 0, res.err
    assert run_binary(root) == "7\n"


@pytest.mark.parametrize("body,both", [
    ("""
        mcpp.action(id = "one", argv = ["/bin/sh", "-c", "echo 1 > $0", out + "/x"], inputs = [],
                    outputs = [out + "/x"], tools = ["/bin/sh"], role = "artifact")
        mcpp.action(id = "two", argv = ["/bin/sh", "-c", "echo 2 > $0", out + "/x"], inputs = [],
                    outputs = [out + "/x"], tools = ["/bin/sh"], role = "artifact")
     """, ("`one`", "`two`", "both declare the output")),
    ("""
        mcpp.action(id = "one", argv = ["/bin/cp", out + "/b", out + "/a"], inputs = [out + "/b"],
                    outputs = [out + "/a"], tools = ["/bin/cp"], role = "artifact")
        mcpp.action(id = "two", argv = ["/bin/cp", out + "/a", out + "/b"], inputs = [out + "/a"],
                    outputs = [out + "/b"], tools = ["/bin/cp"], role = "artifact")
     """, ("`one`", "`two`", "cycle")),
])
def test_duplicate_outputs_and_cycles_of_rule_actions_are_refused_before_anything_runs(
        project, mcpp: Mcpp, body, both):
    root = project({
        "mcpp.toml": MANIFEST,
        "src/main.cpp": "int main() { return 0; }\n",
        "build.star": "out = mcpp.out_dir()\n" + textwrap.dedent(body),
    })
    res = mcpp("build", "--message-format", "json", cwd=root)
    assert res.code == 2, res.out + res.err
    assert all(word in res.err for word in both), res.err
    assert "Traceback" not in res.err
    assert not any(e.get("reason") == "action-finished" for e in res.events), "an action ran first"


# -- inputs and a build program's reads that are symlinks out of the package -----------------------

@pytest.mark.parametrize("mode", ["bwrap", "dir"])
def test_a_source_symlinked_out_of_the_package_is_refused_naming_the_link(project, mcpp: Mcpp, tmp_path, mode):
    (tmp_path / "host").mkdir()
    (tmp_path / "host" / "secret.cpp").write_text("int main() { return 0; }\n")
    root = project({"mcpp.toml": MANIFEST, "src/lib.cpp": "int f() { return 1; }\n"})
    os.symlink(tmp_path / "host" / "secret.cpp", root / "src" / "main.cpp")
    res = mcpp("build", "--sandbox", mode, "--message-format", "json", cwd=root)
    assert res.code == 2, res.out + res.err
    assert "src/main.cpp` is a symlink to" in res.err and "Traceback" not in res.err, res.err
    assert not any(e.get("reason") == "action-finished" for e in res.events)


@pytest.mark.parametrize("program,where,link", [
    ('x = mcpp.glob("rootlink/etc/*")\n', "build.star:1:", "rootlink` is a symlink to `/`"),
    ('x = mcpp.glob("**/*.txt")\n', "build.star:1:", "rootlink` is a symlink to `/`"),
    ('x = mcpp.read_file("notes.txt")\n', "build.star:1:", "notes.txt` is a symlink to `/etc/hostname`"),
    ('mcpp.action(id = "cp", argv = ["/bin/cp", "notes.txt", mcpp.out_dir() + "/n"], inputs = ["notes.txt"],\n'
     '            outputs = [mcpp.out_dir() + "/n"], tools = ["/bin/cp"], role = "artifact")\n',
     "action `cp`: input `notes.txt`", "notes.txt` is a symlink to `/etc/hostname`"),
])
def test_a_build_program_cannot_read_or_list_host_files_through_a_symlink(project, mcpp: Mcpp, program, where, link):
    root = project({"mcpp.toml": MANIFEST, "src/main.cpp": "int main() { return 0; }\n", "build.star": program})
    os.symlink("/", root / "rootlink")
    os.symlink("/etc/hostname", root / "notes.txt")
    res = mcpp("build", cwd=root)
    assert res.code == 2, res.out + res.err
    assert where in res.err and link in res.err and "Traceback" not in res.err, res.err


# -- an unreadable source directory or file ------------------------------------------------------

def unprivileged() -> list[str]:
    """A command prefix under which mcpp obeys file modes as a non-root user does.

    CI runs as root, whose CAP_DAC_OVERRIDE reads a mode-000 directory anyway. A user made with
    useradd cannot run this test's interpreter when it lives under /root (mode 0700, as on CI),
    so root instead drops the two capabilities that bypass file modes (setpriv): the kernel then
    checks mode bits for it exactly as for any user."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: cannot drop the capability that reads mode-000 files")
    caps = "-dac_override,-dac_read_search"
    return ["setpriv", f"--bounding-set={caps}", f"--inh-caps={caps}", "--"]


def run_unprivileged(mcpp: Mcpp, root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MCPP_HOME": str(mcpp.home)}
    env.pop("MCPP_NO_FAST_PATH", None)
    return subprocess.run([*unprivileged(), mcpp.exe, *args], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("mode", ["bwrap", "dir"])
def test_an_unreadable_source_directory_or_file_is_an_error_and_never_a_remembered_build(project, mcpp: Mcpp, mode):
    root = project({"mcpp.toml": MANIFEST, "src/main.cpp": "int main() { return 0; }\n"})
    binary = root / "target" / "dev" / "p"
    try:
        os.chmod(root / "src", 0)
        res = run_unprivileged(mcpp, root, "build", "--sandbox", mode)
        assert res.returncode == 2, res.stdout + res.stderr
        assert f"cannot read directory `{root / 'src'}`" in res.stderr and "Traceback" not in res.stderr
        os.chmod(root / "src", 0o755)
        shutil.rmtree(root / "target", ignore_errors=True)
        res = run_unprivileged(mcpp, root, "build", "--sandbox", mode)
        assert res.returncode == 0 and binary.exists(), res.stdout + res.stderr
        os.chmod(root / "src" / "main.cpp", 0)
        res = run_unprivileged(mcpp, root, "build", "--sandbox", mode, "--message-format", "json")
        assert res.returncode == 2 and f"cannot read `{root / 'src' / 'main.cpp'}`" in res.stderr, res.stderr
    finally:
        os.chmod(root / "src", 0o755)
        os.chmod(root / "src" / "main.cpp", 0o644)
