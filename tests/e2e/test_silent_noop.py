"""A package whose build program generates a header into a directory it adds to the include
path, with `include_dirs = ["."]` (zlib's generated zconf.h), builds everything it plans; and a
build that planned actions but ran none of them, or left an artifact unmade, is never reported
as success."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.e2e.zlike_project import FILES as ZLIKE

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


def finished(res) -> dict:
    return next(e for e in res.events if e.get("reason") == "build-finished")


def planned(res) -> int:
    return next(e for e in res.events if e.get("reason") == "build-started")["actions"]


@pytest.mark.parametrize("sandbox", ["bwrap", "dir", "off"])
def test_a_generated_header_in_an_include_dir_builds_every_planned_action(project, mcpp, sandbox):
    root = project(ZLIKE)
    res = mcpp.build_json("build", "--sandbox", sandbox, cwd=root)
    done = finished(res)
    assert done["executed"] + done["cached"] == planned(res) > 3
    out = root / "target" / "dev"
    for artifact in ("lib/libzlike.a", "libzlike.so.1.3.1", "example", "minigzip"):
        assert (out / artifact).is_file(), artifact
    assert subprocess.run([out / "example"], capture_output=True, text=True).stdout.split()[-1] == "131"
    # the header changes: every compile that includes it runs again, and the result shows it
    (root / "zconf.h.in").write_text("#define ZLIKE_CONFIG 132\n")
    res = mcpp.build_json("build", "--sandbox", sandbox, cwd=root)
    assert "compile zlike:config.c" in res.executed() and "rule zlike:zconf" in res.executed()
    assert subprocess.run([out / "example"], capture_output=True, text=True).stdout.split()[-1] == "132"


def test_the_artifacts_come_back_when_removed(project, mcpp):
    root = project(ZLIKE)
    mcpp("build", cwd=root, check=True)
    out = root / "target" / "dev"
    shutil.rmtree(out / "lib")
    (out / "example").unlink()
    mcpp("build", cwd=root, check=True)
    assert (out / "lib" / "libzlike.a").is_file() and (out / "example").is_file()
