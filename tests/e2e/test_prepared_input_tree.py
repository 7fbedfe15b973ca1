"""An action with hundreds of inputs (a link's objects; here a rule's data files) sees them as a
prepared tree kept between builds (sandbox/input_tree.py): after an edit only the changed input is
linked again, and the action still sees exactly its inputs with their new bytes."""
from __future__ import annotations

import os

from tests.e2e.e2e_support import Mcpp

N = 300  # above sandbox/input_tree.py's TREE_MIN
SCRIPT = "ls data > {out}/names.txt; cat data/*.txt > {out}/all.txt"
PROGRAM = f"""
out = mcpp.out_dir()
mcpp.action(id = "gather", argv = ["/bin/sh", "-c", "{SCRIPT}".format(out = out)],
            inputs = mcpp.glob("data/*.txt"), outputs = [out + "/names.txt", out + "/all.txt"],
            tools = ["/bin/sh"], role = "check")
"""


def data_project(project):
    files = {
        "mcpp.toml": '[package]\nname = "many"\nversion = "0.1.0"\n',
        "src/main.cpp": "int main() { return 0; }\n",
        "build.star": PROGRAM,
    }
    files.update({f"data/d{i:03d}.txt": f"{i}\n" for i in range(N)})
    return project(files)


def build(mcpp: Mcpp, root):
    res = mcpp("build", "--sandbox", "bwrap", cwd=root)
    assert res.code == 0, res.err
    gen = root / "target/dev/.mcpp/gen/many"
    return (gen / "names.txt").read_text().split(), (gen / "all.txt").read_text().split()


def the_tree(mcpp: Mcpp):
    [key] = os.listdir(mcpp.home / "sandbox" / "trees")
    return mcpp.home / "sandbox" / "trees" / key


def entries(tree):
    data = tree / "root" / "data"
    return {name: (st.st_ino, st.st_ctime_ns) for name in os.listdir(data) for st in [os.stat(data / name)]}


def test_an_edit_links_only_the_changed_input_and_the_action_reads_its_new_bytes(project, mcpp: Mcpp):
    root = data_project(project)
    names, values = build(mcpp, root)
    assert names == [f"d{i:03d}.txt" for i in range(N)] and values == [str(i) for i in range(N)]
    before = entries(the_tree(mcpp))
    assert len(before) == N

    (root / "data/d005.txt").write_text("edited\n")
    names, values = build(mcpp, root)
    assert values[5] == "edited" and len(names) == N
    after = entries(the_tree(mcpp))
    assert after.keys() == before.keys()
    assert after["d005.txt"][0] != before["d005.txt"][0]  # the edited file's new store copy
    assert {n for n in after if after[n] != before[n]} == {"d005.txt"}, "unchanged inputs were staged again"


def test_a_removed_input_is_gone_and_an_added_one_there(project, mcpp: Mcpp):
    root = data_project(project)
    build(mcpp, root)
    (root / "data/d007.txt").unlink()
    (root / "data/new.txt").write_text("new\n")
    names, values = build(mcpp, root)
    want = sorted([f"d{i:03d}.txt" for i in range(N) if i != 7] + ["new.txt"])
    assert names == want and "7" not in values and "new" in values
    assert sorted(entries(the_tree(mcpp))) == want


def test_a_tree_left_half_made_is_made_again(project, mcpp: Mcpp):
    root = data_project(project)
    build(mcpp, root)
    tree = the_tree(mcpp)
    (tree / "manifest").unlink()  # what an engine killed while it prepared the tree leaves
    (tree / "root/data/stray.txt").write_text("stray\n")
    (tree / "root/data/d001.txt").unlink()
    (root / "data/d002.txt").write_text("two\n")
    names, values = build(mcpp, root)
    assert names == [f"d{i:03d}.txt" for i in range(N)]
    assert values[1:3] == ["1", "two"] and "stray" not in values
    assert sorted(entries(tree)) == names


def test_cache_clean_removes_the_trees(project, mcpp: Mcpp):
    root = data_project(project)
    build(mcpp, root)
    assert the_tree(mcpp).is_dir()
    assert mcpp("cache", "clean", cwd=root).code == 0
    assert os.listdir(mcpp.home / "sandbox" / "trees") == []
    (root / "data/d003.txt").write_text("three\n")
    names, values = build(mcpp, root)
    assert values[3] == "three" and sorted(entries(the_tree(mcpp))) == names


def test_cache_gc_above_its_bound_removes_a_tree_unused_for_a_while(project, mcpp: Mcpp):
    root = data_project(project)
    build(mcpp, root)
    tree = the_tree(mcpp)
    res = mcpp("cache", "gc", "--max-size", "1K", cwd=root)
    assert res.code == 0 and tree.is_dir(), "a tree used within the grace window stays"
    long_ago = 1_000_000_000
    os.utime(tree / "manifest", (long_ago, long_ago))
    res = mcpp("cache", "gc", "--max-size", "1K", cwd=root)
    assert res.code == 0, res.err
    assert "1 prepared input trees" in res.out and not tree.exists()
