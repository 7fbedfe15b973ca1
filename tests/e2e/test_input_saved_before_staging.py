"""An input saved anew between the build's hashing it and an action's staging it (an edit saved
during the build): the action runs on the new bytes, but its key names the old ones, so its
result is neither cached nor recorded (engine/exec/staging.py, `ActionPipeline._keep_uncached`).
Without that, putting the old bytes back later finds the new bytes' object under the old key."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from e2e_support import write_tree

PROJECT = {
    "mcpp.toml": '[package]\nname = "hello"\nversion = "0.1.0"\n',
    "src/main.cpp": "int util();\nint main() { return util(); }\n",
    "src/util.cpp": "int util() { return 0; }\n",
}
EDITED = "int util() { return 7; }\n"

# A first build in process (`mcpp` and this script's arguments) whose `src/util.cpp` is saved anew
# right after the build hashed it for the lanes' staging, before the staging reads it.
SAVED_AFTER_HASHING = """
import sys
import mcpp.engine.build.compose as compose
stager = compose.input_stager

def hashing_then_saving(execroot, digest_of, *args, **kwargs):
    saved = []

    def digest_then_save(rel):
        d = digest_of(rel)
        if rel == "src/util.cpp" and not saved:
            saved.append(rel)
            with open(rel, "w") as f:
                f.write(%r)
        return d
    return stager(execroot, digest_then_save, *args, **kwargs)

compose.input_stager = hashing_then_saving
from mcpp.engine.cli import dispatch
sys.argv = ["mcpp"] + sys.argv[1:]
dispatch.main()
""" % EDITED


@pytest.mark.parametrize("target", ["kept", "removed"])
def test_a_run_on_bytes_saved_after_hashing_is_not_cached_under_the_old_ones(tmp_path, mcpp, target):
    root = write_tree(tmp_path / "p", PROJECT)
    first = subprocess.run([sys.executable, "-c", SAVED_AFTER_HASHING, "build"], cwd=root, capture_output=True, text=True,
                           env={**os.environ, "MCPP_HOME": str(mcpp.home), "MCPP_NO_SERVER": "1"})
    assert first.returncode == 0, first.stderr
    assert (root / "src/util.cpp").read_text() == EDITED  # the save happened, during the build
    assert "`src/util.cpp` changed during the build" in first.stderr and "is not cached" in first.stderr
    assert subprocess.run([str(root / "target/dev/hello")]).returncode == 7  # the run read the new bytes
    # The old bytes back: their object must be compiled from them, neither called up to date
    # by the state (target kept) nor restored from a cache entry made from the new bytes.
    (root / "src/util.cpp").write_text(PROJECT["src/util.cpp"])
    if target == "removed":
        shutil.rmtree(root / "target")
    again = mcpp("build", "--message-format", "json", cwd=root)
    assert again.code == 0, again.err
    assert "compile hello:src/util.cpp" in again.executed("compile"), again.err
    assert subprocess.run([str(root / "target/dev/hello")]).returncode == 0


# `--sandbox off`: the compile of `src/util.cpp` reads the real tree; the file is saved anew after
# the build hashed it (its key's digest), just before the compile starts.
SAVED_BEFORE_READING = """
import sys
import mcpp.engine.exec.action_runner as action_runner
run = action_runner.SandboxRunner.run

def save_then_run(self, action):
    if action.id == "compile hello:src/util.cpp":
        with open("src/util.cpp", "w") as f:
            f.write(%r)
    return run(self, action)

action_runner.SandboxRunner.run = save_then_run
from mcpp.engine.cli import dispatch
sys.argv = ["mcpp", "build", "--sandbox", "off"]
dispatch.main()
""" % EDITED


def test_unsandboxed_a_source_saved_after_it_was_hashed_is_not_kept_under_its_old_bytes(tmp_path, mcpp):
    """Without the check, the old bytes' key named the new bytes' object: with the old bytes
    back, the build called it up to date."""
    root = write_tree(tmp_path / "p", PROJECT)
    first = subprocess.run([sys.executable, "-c", SAVED_BEFORE_READING], cwd=root, capture_output=True, text=True,
                           env={**os.environ, "MCPP_HOME": str(mcpp.home), "MCPP_NO_SERVER": "1"})
    assert first.returncode == 0, first.stderr
    assert (root / "src/util.cpp").read_text() == EDITED
    assert "`src/util.cpp` changed during the build" in first.stderr, first.stderr
    assert subprocess.run([str(root / "target/dev/hello")]).returncode == 7  # the run read the new bytes
    (root / "src/util.cpp").write_text(PROJECT["src/util.cpp"])
    again = mcpp("build", "--sandbox", "off", "--message-format", "json", cwd=root)
    assert again.code == 0, again.err
    assert "compile hello:src/util.cpp" in again.executed("compile"), again.err
    assert subprocess.run([str(root / "target/dev/hello")]).returncode == 0
