"""What an action leaves beside its declared outputs is found (sandbox/outputs.py), so the build
can say so; staged inputs, the directories above declared files and the directories the action
directory held before the run are not."""
from __future__ import annotations

import os

from mcpp.sandbox.outputs import undeclared_outputs


def test_files_and_directories_beside_the_outputs_are_found(tmp_path):
    for rel in ("gen/app/kept.h", "gen/app/stray.h", "gen/app/inc/input.h", "gen/app/newdir/x", "obj/a.o",
                "other/untouched"):
        os.makedirs(tmp_path / os.path.dirname(rel), exist_ok=True)
        (tmp_path / rel).write_text("x")
    os.makedirs(tmp_path / "gen/app/left")  # an empty directory from an earlier action of the slot
    found = undeclared_outputs(str(tmp_path), ["gen/app/kept.h", "obj/a.o"], {"gen/app/inc/input.h"},
                               existing={"gen/app/left"})
    assert found == ["gen/app/newdir/", "gen/app/stray.h"]


def test_a_tree_output_is_declared_with_everything_in_it(tmp_path):
    os.makedirs(tmp_path / "gen/docs/sub")
    (tmp_path / "gen/docs/sub/page.md").write_text("x")
    assert undeclared_outputs(str(tmp_path), ["gen/docs/"], set()) == []
