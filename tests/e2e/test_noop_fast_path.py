"""The no-op fast path answers from stats alone, and steps aside for any change."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from e2e_support import copy_example

PROBE = ("import os, sys; sys.argv = ['mcpp', 'build']\n"
         "os._exit = sys.exit  # an answered command ends with os._exit: let the probe look first\n"
         "import mcpp.engine.entry\n"
         "try:\n    mcpp.engine.entry.main()\n"
         "except SystemExit:\n    pass\n"
         "print('ENGINE LOADED' if 'mcpp.engine.build.compose' in sys.modules else 'FAST PATH', file=sys.stderr)\n")


def build_in_process(root, mcpp, *args) -> str:
    """`mcpp build ARGS` in a process of its own: whether it answered without the engine."""
    probe = PROBE.replace("['mcpp', 'build']", repr(["mcpp", "build", *args]))
    env = {**os.environ, "MCPP_HOME": str(mcpp.home), "MCPP_NO_SERVER": "1"}  # the probe looks at this process
    p = subprocess.run([sys.executable, "-c", probe], cwd=root, env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stderr.strip().splitlines()[-1]


def settle(mcpp, root):
    """Two plain builds: the second re-records once every file is older than the record."""
    mcpp("build", cwd=root, check=True)
    mcpp("build", cwd=root, check=True)


def assert_answered_without_the_engine(root, mcpp) -> None:
    """`mcpp build` in `root` is answered from stats, in process and through `mcpp`."""
    assert build_in_process(root, mcpp) == "FAST PATH"
    # Under 0.1 s through `mcpp` too; the best of three, so that one answer delayed by a loaded
    # machine (CI runs the suite on two cores, two tests at a time) does not decide it.
    said = []
    for _ in range(3):
        res = mcpp("build", cwd=root)
        said.append(res.err)
        if res.err.startswith("    Finished dev [unoptimized + debuginfo] in 0.0"):
            return
    raise AssertionError(f"no answer under 0.1 s in three no-op builds: {said}")


def test_noop_after_a_build_does_not_load_the_engine(tmp_path, mcpp):
    root = copy_example("01-hello", tmp_path)
    settle(mcpp, root)
    assert_answered_without_the_engine(root, mcpp)


def test_a_header_edit_takes_the_full_path_and_rebuilds(tmp_path, mcpp):
    root = copy_example("01-hello", tmp_path)
    settle(mcpp, root)
    hdr = root / "src" / "greeting.hpp"
    hdr.write_text(hdr.read_text() + "// edited\n")
    assert build_in_process(root, mcpp) == "ENGINE LOADED"
    assert "Hello" in subprocess.run([root / "target" / "dev" / "hello"], capture_output=True, text=True).stdout


def test_a_new_source_file_is_seen(tmp_path, mcpp):
    root = copy_example("01-hello", tmp_path)
    settle(mcpp, root)
    (root / "src" / "extra.cpp").write_text("int extra_function() { return 1; }\n")
    res = mcpp("build", cwd=root)
    assert "Compiling hello" in res.err
    assert (root / "target" / "dev" / ".mcpp" / "obj" / "hello" / "src" / "extra.cpp.o").is_file()


def test_a_deleted_output_is_restored(tmp_path, mcpp):
    root = copy_example("01-hello", tmp_path)
    settle(mcpp, root)
    (root / "target" / "dev" / "hello").unlink()
    mcpp("build", cwd=root, check=True)
    assert (root / "target" / "dev" / "hello").is_file()


def test_a_build_that_warned_is_not_answered_by_the_fast_path(project, mcpp):
    root = project({"mcpp.toml": '[package]\nname = "w"\nversion = "0.1.0"\nflavour = 1\n',
                    "src/main.cpp": "int main() {}\n"})
    settle(mcpp, root)
    assert build_in_process(root, mcpp) == "ENGINE LOADED"
    assert "unknown key `flavour`" in mcpp("build", cwd=root).err  # the warning is shown every time


def test_an_unrelated_file_beside_the_manifest_keeps_the_fast_path(tmp_path, mcpp):
    root = copy_example("01-hello", tmp_path)
    settle(mcpp, root)
    (root / ".ninja_log").write_text("another tool's log\n")
    (root / "notes.txt").write_text("not a source\n")
    assert build_in_process(root, mcpp) == "FAST PATH"


def test_a_manifest_appearing_above_takes_the_full_path(tmp_path, mcpp):
    root = copy_example("01-hello", tmp_path / "ws")
    settle(mcpp, root)
    (tmp_path / "ws" / "mcpp.toml").write_text('[workspace]\nmembers = ["01-hello"]\n')
    assert build_in_process(root, mcpp) == "ENGINE LOADED"


JSON = ("--message-format", "json")


def recorded(root, mcpp, timeout: float = 20.0) -> bool:
    """Whether a no-op record of `mcpp build` in `root` appears within `timeout` seconds (a
    server's build child writes a JSON build's record after its reply)."""
    from mcpp.engine.state import noop

    env = {**os.environ, "MCPP_HOME": str(mcpp.home)}
    deadline = time.monotonic() + timeout
    while noop.load_record(["build"], str(root), env) is None:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_json_build_records_for_the_next_plain_build(tmp_path, mcpp):
    root = copy_example("01-hello", tmp_path)
    mcpp("build", *JSON, cwd=root, check=True)
    mcpp("build", "--message-format=json", cwd=root, check=True)  # both spellings file one record
    assert recorded(root, mcpp)
    assert_answered_without_the_engine(root, mcpp)


def test_a_json_build_is_never_answered_by_the_fast_path(tmp_path, mcpp):
    root = copy_example("01-hello", tmp_path)
    settle(mcpp, root)
    assert build_in_process(root, mcpp, *JSON) == "ENGINE LOADED"
    assert build_in_process(root, mcpp, "--message-format=json") == "ENGINE LOADED"
    assert build_in_process(root, mcpp, "--message-format", "human") == "FAST PATH"
    res = mcpp("build", *JSON, cwd=root, check=True)  # through the server too, where one runs
    events = [json.loads(line) for line in res.out.splitlines() if line.startswith("{")]
    assert sum(e.get("reason") == "action-finished" for e in events) >= 2, res.out


def test_a_json_build_that_warned_records_nothing(project, mcpp):
    root = project({"mcpp.toml": '[package]\nname = "w"\nversion = "0.1.0"\nflavour = 1\n',
                    "src/main.cpp": "int main() {}\n"})
    mcpp("build", *JSON, cwd=root, check=True)
    mcpp("build", *JSON, cwd=root, check=True)
    assert build_in_process(root, mcpp) == "ENGINE LOADED"
    assert "unknown key `flavour`" in mcpp("build", cwd=root).err
