"""Tree outputs (docs/rules.md, "Tree outputs"): an output ending in `/` is a directory whose
content the action decides; it is stored as a REAPI tree, restored whole, and a later action
can read it as an input."""
from __future__ import annotations

import os
import shutil

import pytest

from tests.e2e.e2e_support import Mcpp

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

MANIFEST = '[package]\nname = "p"\nversion = "0.1.0"\n'
PROGRAM = """
out = mcpp.out_dir()
mcpp.action(id = "docs", role = "check", tools = ["/bin/sh"], inputs = ["pages.txt"],
    argv = ["/bin/sh", "-c", "mkdir -p $0/sub/empty && cp $1 $0/a.txt && echo two > $0/sub/b.txt && "
            + "chmod +x $0/sub/b.txt && ln -s ../a.txt $0/sub/link{extra}", out + "/docs", "pages.txt"],
    outputs = [out + "/docs/"])
mcpp.action(id = "count", role = "check", tools = ["/bin/sh"], inputs = [out + "/docs/"],
    argv = ["/bin/sh", "-c", "cat $0/a.txt $0/sub/b.txt > $1", out + "/docs", out + "/count.txt"],
    outputs = [out + "/count.txt"])
"""


def tree_of(root):
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = ("link", os.readlink(p))
            elif os.path.isdir(p):
                out[rel] = "dir"
            else:
                out[rel] = (open(p).read(), bool(os.stat(p).st_mode & 0o111))
    return out


EXPECTED = {"a.txt": ("one\n", False), "sub": "dir", "sub/empty": "dir", "sub/b.txt": ("two\n", True),
            "sub/link": ("link", "../a.txt")}


@pytest.mark.parametrize("mode", ["bwrap", "dir", "off"])
def test_a_tree_output_is_made_read_by_a_later_action_and_restored_whole(project, mcpp: Mcpp, mode):
    root = project({"mcpp.toml": MANIFEST, "src/main.cpp": "int main() { return 0; }\n",
                    "pages.txt": "one\n", "build.star": PROGRAM.format(extra="")})
    gen = root / "target" / "dev" / ".mcpp" / "gen" / "p"
    res = mcpp.build_json("build", "--sandbox", mode, cwd=root)
    assert res.code == 0, res.err
    assert tree_of(gen / "docs") == EXPECTED
    assert (gen / "count.txt").read_text() == "one\ntwo\n"
    # From the store: the directory comes back whole, links, modes and empty directories included.
    shutil.rmtree(root / "target")
    again = mcpp.build_json("build", "--sandbox", mode, cwd=root)
    assert again.code == 0, again.err
    assert again.executed("rule") == [], again.out
    assert tree_of(gen / "docs") == EXPECTED
    # The reader follows the tree's content.
    (root / "pages.txt").write_text("uno\n")
    third = mcpp.build_json("build", "--sandbox", mode, cwd=root)
    assert third.code == 0, third.err
    assert (gen / "count.txt").read_text() == "uno\ntwo\n"
    assert sorted(third.executed("rule")) == ["rule p:count", "rule p:docs"]


def test_a_symlink_leaving_a_tree_output_fails_the_action(project, mcpp: Mcpp):
    root = project({"mcpp.toml": MANIFEST, "src/main.cpp": "int main() { return 0; }\n", "pages.txt": "one\n",
                    "build.star": PROGRAM.format(extra=" && ln -s /etc/passwd $0/sub/out")})
    res = mcpp("build", cwd=root)
    assert res.code != 0
    assert "output target/dev/.mcpp/gen/p/docs/sub/out is a symbolic link to `/etc/passwd`, which leaves the directory" \
        in res.err, res.err


@pytest.mark.parametrize("call,message", [
    ('inputs = ["src/"], outputs = [mcpp.out_dir() + "/t/"], role = "check"', "input `src/` ends in `/`"),
    ('inputs = [], outputs = [mcpp.out_dir() + "/t/"]', "gen/p/t/` is a tree (its files are known only once "
     'the action ran), so it cannot be compiled or linked with role = "object"'),
    ('inputs = [], outputs = [mcpp.out_dir() + "/t/", mcpp.out_dir() + "/t/x"], role = "check"',
     "gen/p/t/` would be the directory of output `t/x`"),
])
def test_a_tree_output_and_inputs_are_checked_at_the_call(project, mcpp: Mcpp, call, message):
    root = project({"mcpp.toml": MANIFEST, "src/main.cpp": "int main() { return 0; }\n",
                    "build.star": 'x = 1\nmcpp.action(id = "a", argv = ["/bin/true"], ' + call + ')\n'})
    res = mcpp("build", cwd=root)
    assert res.code == 2
    first = res.err.splitlines()[0]
    assert first.startswith("build.star:2:1: error: package `p`, action `a`: ") and message in first, res.err


def test_a_file_edited_inside_a_tree_output_is_put_back(project, mcpp: Mcpp):
    root = project({"mcpp.toml": MANIFEST, "src/main.cpp": "int main() { return 0; }\n",
                    "pages.txt": "one\n", "build.star": PROGRAM.format(extra="")})
    assert mcpp("build", cwd=root).code == 0
    assert mcpp("build", cwd=root).code == 0  # records the no-op fast path
    edited = root / "target" / "dev" / ".mcpp" / "gen" / "p" / "docs" / "sub" / "b.txt"
    edited.chmod(0o644)
    edited.write_text("tampered\n")
    res = mcpp("build", cwd=root)  # the same command line: the no-op fast path must notice it
    assert res.code == 0, res.err
    assert edited.read_text() == "two\n"
    assert tree_of(edited.parent.parent) == EXPECTED
