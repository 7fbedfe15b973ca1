"""The store ingest behind the build (cas/ingest.py), end to end with a real compiler: what it
stores, and that a store that cannot be written fails the build with a message, not a trace."""
from __future__ import annotations

import os
import shutil

from e2e_support import Mcpp, copy_example


def test_a_clean_build_leaves_every_entry_with_its_blobs_and_no_temp_files(tmp_path):
    mcpp = Mcpp(tmp_path / "home")
    root = copy_example("01-hello", tmp_path)
    first = mcpp.build_json(cwd=root)
    assert first.executed()
    names = [n for _, _, files in os.walk(mcpp.home) for n in files]
    assert not [n for n in names if n.startswith(".tmp-")]
    shutil.rmtree(root / "target")
    again = mcpp.build_json(cwd=root)  # every entry the ingest wrote names blobs that are there
    assert again.executed() == []
    assert {e["status"] for e in again.events if e.get("reason") == "action-finished"} == {"cached"}


def test_a_store_that_cannot_be_written_fails_the_build_and_the_actions_run_again(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "cas").write_text("not a directory\n")  # every blob write fails (also for root)
    mcpp = Mcpp(home)
    root = copy_example("01-hello", tmp_path)
    res = mcpp("build", cwd=root)
    assert res.code == 1, res.err
    # one error naming what is in the way, not one per action
    assert res.err.count("error:") == 1 and "Traceback" not in res.err, res.err
    assert f"error: `{home / 'cas'}` is a file where mcpp needs a directory" in res.err
    (home / "cas").unlink()
    ok = mcpp.build_json(cwd=root)
    assert len(ok.executed()) == 3  # nothing was recorded as done by the failed build
