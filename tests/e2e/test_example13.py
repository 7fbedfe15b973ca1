"""Example 13: code generators written as rule packages (docs/rules.md, "Example 13").

`app` uses two rule packages: `rules-embed` (embedc turns `assets/*` into a header and a source
in one action; a tar of the app's binary) and `rules-schema` (schemac, a rule module of two
files, options from the app's build.star, a check rule and a tree output). The library `geo`
compiles its schema and provides where it is; the app imports it. The app's output proves each
part ran; the tests drive `mcpp` on a copy of the example.
"""
from __future__ import annotations

import io
import shutil
import tarfile
from pathlib import Path

import pytest

from tests.e2e.e2e_support import Mcpp, copy_example

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

NAME = "13-code-generators"
OUTPUT = [
    "asset answer.txt (3 bytes): 42",                  # (a) embedc's source, compiled via generated()
    "asset greeting.txt (20 bytes): hello from an asset",
    "Rect{corner=Point{x=3, y=4}, width=5}",           # (b) geo's Point inside the app's Rect, describe option
    "Label{text=hello}",
    "docs: Label.md Rect.md",                          # (e) the pages of the tree output
]


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


def printed(res) -> list[str]:
    assert res.code == 0, f"{res.out}\n{res.err}"
    return res.out.splitlines()[-len(OUTPUT):]


@pytest.fixture
def example(tmp_path) -> Path:
    return copy_example(NAME, tmp_path)


def test_run_prints_what_each_generator_made_and_a_second_run_does_nothing(example: Path, mcpp: Mcpp):
    first = mcpp("run", cwd=example / "app")
    assert printed(first) == OUTPUT
    for tool in ("embedc", "schemac"):
        assert f"Building host tool {tool}:{tool} from {tool} v0.1.0" in first.err
    assert "Rules example.rules.embed (example:rules-embed)" in first.err
    assert "Rules example.rules.schema (example:rules-schema)" in first.err
    # (d) the artifact: the app's binary, executable, alone in a tar
    with tarfile.open(example / "target/dev/.mcpp/gen/app/app.tar") as tar:
        [member] = tar.getmembers()
        assert (member.name, member.mode, member.mtime) == ("app", 0o555, 0)
        assert tar.extractfile(member).read() == (example / "target/dev/app").read_bytes()

    second = mcpp("run", cwd=example / "app")
    assert printed(second) == OUTPUT
    assert "Building host tool" not in second.err and "Compiling" not in second.err


def test_a_schema_breaking_the_naming_rule_fails_the_build_at_the_users_line(example: Path, mcpp: Mcpp):
    """(c) schemac compiles `Width` happily; the check rule refuses it, in the user's words."""
    edit(example / "app/schemas/shape.schema", "int width = 5", "int Width = 5")
    res = mcpp("build", cwd=example / "app")
    assert res.code == 1
    assert "schemas/shape.schema:5: error: field 'Width' must be lower_case" in res.diagnostics.splitlines()
    assert "rule app:schema-check:schemas/shape.schema" in res.err
    assert "/execroot" not in res.err and "Traceback" not in res.err

    edit(example / "app/schemas/shape.schema", "int Width = 5", "int width = 6")
    res = mcpp("run", cwd=example / "app")
    assert printed(res)[2] == "Rect{corner=Point{x=3, y=4}, width=6}"


def test_the_tar_of_the_binary_is_the_same_bytes_under_every_sandbox(example: Path, tmp_path, mcpp: Mcpp):
    """(d) Each mode builds from nothing (its own store), so each runs every action itself:
    under off the tar reads the linker's file in `target/` in place."""
    tars = {}
    for mode in ("bwrap", "dir", "off"):
        shutil.rmtree(example / "target", ignore_errors=True)
        res = Mcpp(tmp_path / f"home-{mode}")("build", "--sandbox", mode, cwd=example / "app")
        assert res.code == 0, f"{mode}: {res.out}\n{res.err}"
        tars[mode] = (example / "target/dev/.mcpp/gen/app/app.tar").read_bytes()
        with tarfile.open(fileobj=io.BytesIO(tars[mode])) as tar:
            assert [(m.name, m.mode) for m in tar.getmembers()] == [("app", 0o555)], mode
    assert tars["bwrap"] == tars["dir"] == tars["off"]


def test_an_edit_of_the_librarys_schema_reaches_the_app(example: Path, mcpp: Mcpp):
    """(b) The app's schemac action reads geo's schema files (dep_info), and its compile geo's
    header: both follow an edit of the library."""
    assert printed(mcpp("run", cwd=example / "app")) == OUTPUT
    edit(example / "geo/schemas/point.schema", "int x = 3", "int x = 7")
    res = mcpp("run", cwd=example / "app")
    assert printed(res)[2] == "Rect{corner=Point{x=7, y=4}, width=5}"
    assert "Building host tool" not in res.err


def test_a_new_message_adds_a_page_to_the_tree_and_a_new_asset_an_entry(example: Path, mcpp: Mcpp):
    """(e) The tree's content is decided by the schema; the reader of the tree follows it.
    (a) The glob of assets is re-read: a new file is embedded."""
    assert printed(mcpp("run", cwd=example / "app")) == OUTPUT
    with (example / "app/schemas/shape.schema").open("a") as f:
        f.write("message Circle\n  int radius = 1\n")
    (example / "app/assets/zebra.txt").write_text("last\n")
    res = mcpp("run", cwd=example / "app")
    assert res.code == 0, res.err
    assert res.out.splitlines()[-1] == "docs: Circle.md Label.md Rect.md"
    assert "asset zebra.txt (5 bytes): last" in res.out.splitlines()


def test_an_unknown_schema_option_from_the_apps_build_star_is_an_error_in_the_rule(example: Path, mcpp: Mcpp):
    """The options reach the rule's helper file (loaded with `//src/common.star`), which refuses
    what schemac does not know, at its own line, called from the app's build.star."""
    edit(example / "app/build.star", 'options = {"describe": True}', 'options = {"colour": "red"}')
    res = mcpp("build", cwd=example / "app")
    assert res.code == 2
    first = res.diagnostics.splitlines()[0]
    assert first.endswith("rules-schema/src/common.star:17:13: error: fail: schema option `colour` is "
                          "unknown (known: describe)"), res.err
    assert "build.star:5, in <module>" in res.err
    assert "Traceback" not in res.err
