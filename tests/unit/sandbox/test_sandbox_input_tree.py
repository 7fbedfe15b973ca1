"""Prepared trees (sandbox/input_tree.py): an action with many inputs sees them as a tree kept
between its runs, and the next run links only what changed, yet still sees exactly its declared
inputs, read-only, each with its source's bytes, whatever a crash or a second build did."""
from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from mcpp.sandbox.input_tree import TREES_DIR, discard_trees, tree_key

LIST = "find objs | sort"


@pytest.fixture(params=["worker", "one bwrap each"])
def tree_sb(request, make):
    sb = make("bwrap")  # skips where bwrap cannot run
    sb.use_workers = request.param == "worker"
    sb.trees.min_inputs = 3  # the real threshold is a link's worth; the mechanism is the same
    return sb


@pytest.fixture
def blob(tmp_path):
    """blob(name, text) -> a read-only source file, as the store's materialized copies are."""
    store = tmp_path / "store"
    store.mkdir()

    def make(name: str, text: str) -> str:
        path = store / name
        path.write_text(text)
        path.chmod(0o444)
        return str(path)

    return make


def objects(blob, n=6, tag=""):
    return {f"objs/m{i % 2}/f{i}.o": blob(f"b{i}{tag}", f"{i}{tag}\n") for i in range(n)}


def run(sb, mkspec, script, inputs, **kw):
    res = sb.run(mkspec(["sh", "-c", script], inputs=inputs, outputs=kw.pop("outputs", ("out/x",)),
                        label=kw.pop("label", "//t:link"), prepared_tree=kw.pop("prepared_tree", True), **kw))
    assert res.exit_code == 0, res.stderr
    return res.stdout.decode()


def listing(inputs):
    dirs = {"objs"} | {os.path.dirname(rel) for rel in inputs}
    return sorted(dirs | set(inputs))


def tree_root(sb, label="//t:link", outputs=("out/x",)):
    return os.path.join(sb.trees.base, tree_key(label, outputs, None, None), "root")


def test_a_second_run_links_only_the_inputs_that_changed_and_sees_the_new_bytes(tree_sb, mkspec, blob):
    inputs = objects(blob)
    assert run(tree_sb, mkspec, LIST + "; cat objs/m0/f0.o", inputs).splitlines() == listing(inputs) + ["0"]
    assert os.path.isdir(tree_root(tree_sb))
    linked = {rel: os.stat(src).st_ctime_ns for rel, src in inputs.items()}  # a link(2) moves the ctime
    time.sleep(0.05)
    edited = dict(inputs, **{"objs/m0/f0.o": blob("new0", "new bytes\n")})
    before = os.stat(edited["objs/m0/f0.o"]).st_ctime_ns
    time.sleep(0.05)
    out = run(tree_sb, mkspec, LIST + "; cat objs/m0/f0.o objs/m1/f1.o", edited).splitlines()
    assert out == listing(edited) + ["new bytes", "1"]
    for rel, src in edited.items():
        if rel == "objs/m0/f0.o":
            assert os.stat(src).st_ctime_ns != before, "the changed input was linked into the tree"
        else:
            assert os.stat(src).st_ctime_ns == linked[rel], f"{rel} was staged again"


def test_an_input_removed_from_the_set_is_gone_with_its_directory(tree_sb, mkspec, blob):
    inputs = objects(blob, 8)
    run(tree_sb, mkspec, LIST, inputs)
    fewer = {rel: src for rel, src in inputs.items() if not rel.startswith("objs/m1/")}
    fewer["objs/m0/g.o"] = blob("g", "g\n")
    script = LIST + "; test ! -e objs/m1/f1.o && echo gone"
    assert run(tree_sb, mkspec, script, fewer).splitlines() == listing(fewer) + ["gone"]
    assert sorted(os.listdir(os.path.join(tree_root(tree_sb), "objs"))) == ["m0"]


def test_a_source_replaced_at_the_same_path_is_linked_again(tree_sb, mkspec, blob):
    inputs = objects(blob)
    run(tree_sb, mkspec, "true", inputs)
    src = inputs["objs/m1/f3.o"]
    tmp = src + ".new"
    with open(tmp, "w") as f:
        f.write("healed\n")
    os.replace(tmp, src)  # another inode under the same name (a store copy made again)
    assert run(tree_sb, mkspec, "cat objs/m1/f3.o", inputs) == "healed\n"


def test_a_tree_without_its_manifest_is_made_again_not_reused(tree_sb, mkspec, blob):
    inputs = objects(blob)
    run(tree_sb, mkspec, "true", inputs)
    root = tree_root(tree_sb)
    os.unlink(os.path.join(os.path.dirname(root), "manifest"))  # as a preparation killed half-way leaves it
    with open(os.path.join(root, "objs", "m0", "stray.o"), "w") as f:
        f.write("left by the half-made preparation\n")
    os.unlink(os.path.join(root, "objs", "m1", "f1.o"))
    assert run(tree_sb, mkspec, LIST + "; cat objs/m1/f1.o", inputs).splitlines() == listing(inputs) + ["1"]


def test_a_name_added_behind_the_engines_back_makes_the_tree_again(tree_sb, mkspec, blob):
    inputs = objects(blob)
    run(tree_sb, mkspec, "true", inputs)
    with open(os.path.join(tree_root(tree_sb), "objs", "m1", "planted.o"), "w") as f:
        f.write("not declared\n")
    assert run(tree_sb, mkspec, LIST, inputs).splitlines() == listing(inputs)


def test_a_preparation_killed_half_way_is_made_again(tree_sb, mkspec, blob, tmp_path):
    first = objects(blob)
    run(tree_sb, mkspec, "true", first)
    second = objects(blob, 10, tag="v2")
    key = tree_key("//t:link", ["out/x"], None, None)
    # Another engine starts preparing the next set and dies after two of its links.
    child = textwrap.dedent(f"""
        import os
        from mcpp.sandbox.input_tree import InputTrees
        real, n = os.link, [0]
        def link(*a, **k):
            n[0] += 1
            if n[0] > 2:
                os._exit(9)
            return real(*a, **k)
        os.link = link
        InputTrees({tree_sb.trees.base!r}, 3).hold({key!r}, {second!r}, {{"out/x"}}, ".")
    """)
    assert subprocess.run([sys.executable, "-c", child]).returncode == 9
    assert not os.path.exists(os.path.join(os.path.dirname(tree_root(tree_sb)), "manifest"))
    for inputs in (first, second):
        out = run(tree_sb, mkspec, LIST + "; cat objs/m1/f1.o", inputs).splitlines()
        assert out == listing(inputs) + [open(inputs["objs/m1/f1.o"]).read().strip()]
        assert tree_files(tree_sb) == sorted(inputs)


def tree_files(sb):
    root = tree_root(sb)
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, files in os.walk(root) for f in files)


def test_a_tree_another_run_holds_is_neither_used_nor_changed(tree_sb, mkspec, blob):
    inputs = objects(blob)
    run(tree_sb, mkspec, "true", inputs)
    home = os.path.dirname(tree_root(tree_sb))
    manifest = os.stat(os.path.join(home, "manifest"))
    fewer = dict(list(inputs.items())[:4])
    with open(os.path.join(home, "lock"), "r+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second build running the same link
        assert run(tree_sb, mkspec, LIST, fewer).splitlines() == listing(fewer)
        now = os.stat(os.path.join(home, "manifest"))
        assert (now.st_ino, now.st_mtime_ns) == (manifest.st_ino, manifest.st_mtime_ns)
        assert len(os.listdir(os.path.join(home, "root", "objs", "m1"))) == 3


def test_two_builds_running_the_same_action_at_once_each_see_their_own_inputs(make, mkspec, blob):
    sbs = [make("bwrap"), make("bwrap")]
    for sb in sbs:
        sb.trees.min_inputs = 3
    sets = [objects(blob, 6, tag="a"), objects(blob, 8, tag="b")]
    outs: list[list[str]] = [[], []]

    def build(i):
        for _ in range(4):
            outs[i].append(run(sbs[i], mkspec, "sleep 0.05; " + LIST + "; cat objs/m1/f1.o", sets[i]))

    threads = [threading.Thread(target=build, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, tag in enumerate("ab"):
        assert outs[i] == ["\n".join(listing(sets[i]) + [f"1{tag}"]) + "\n"] * 4


def test_the_action_cannot_write_the_tree_nor_reach_another_tree(make, mkspec, blob):
    sb = make("bwrap")
    sb.trees.min_inputs = 3
    assert sb.use_workers
    other = objects(blob, 6, tag="secret")
    run(sb, mkspec, "true", other, label="//t:other")
    inputs = objects(blob)
    script = textwrap.dedent("""
        echo x > objs/m0/f0.o 2>/dev/null && echo WROTE
        chmod u+w objs/m0/f0.o 2>/dev/null && echo CHMOD
        ln objs/m0/f0.o out/linked 2>/dev/null && echo LINKED
        touch objs/m0/new.o 2>/dev/null && echo ADDED
        ls -A /.mcpp-sandbox
        for fd in /proc/[0-9]*/fd/* /proc/[0-9]*/cwd /proc/[0-9]*/root; do
            ls "$fd/trees" 2>/dev/null && echo "REACHED $fd"
        done
        grep -rl secret /execroot /.mcpp-sandbox /tmp 2>/dev/null
        echo done
    """)
    assert run(sb, mkspec, script, inputs) == "done\n"
    assert open(inputs["objs/m0/f0.o"]).read() == "0\n"


def test_a_response_file_in_the_tree_is_read_for_the_files_it_names(tree_sb, mkspec, blob):
    inputs = objects(blob)
    inputs["objs/m0/list.rsp"] = blob("rsp", "@/etc/hostname\n")
    res = tree_sb.run(mkspec(["cat", "@objs/m0/list.rsp"], inputs=inputs, outputs=("out/x",),
                             label="//t:link", depfile="out/x.d", prepared_tree=True))
    assert res.exit_code == 1
    assert b"read undeclared input /etc/hostname" in res.stderr


def test_few_inputs_are_staged_one_by_one(make, mkspec, blob, work_root):
    sb = make("bwrap")  # the real threshold
    inputs = objects(blob, 10)
    assert run(sb, mkspec, LIST, inputs).splitlines() == listing(inputs)
    assert TREES_DIR not in os.listdir(os.path.join(work_root, "sandbox"))


def test_a_one_off_action_gets_no_tree(tree_sb, mkspec, blob, work_root):
    inputs = objects(blob)  # a remote worker's or a probe's: nothing would reuse its tree
    assert run(tree_sb, mkspec, LIST, inputs, prepared_tree=False).splitlines() == listing(inputs)
    assert TREES_DIR not in os.listdir(os.path.join(work_root, "sandbox"))


def test_discarding_trees_keeps_the_one_a_run_holds_and_those_used_since(make, mkspec, blob):
    sb = make("bwrap")
    sb.trees.min_inputs = 3
    for label in ("//t:a", "//t:b", "//t:c"):
        run(sb, mkspec, "true", objects(blob), label=label)
    base = sb.trees.base
    held = os.path.dirname(tree_root(sb, "//t:a"))
    recent = os.path.dirname(tree_root(sb, "//t:c"))
    os.utime(os.path.join(recent, "manifest"), (time.time() + 60, time.time() + 60))
    with open(os.path.join(held, "lock"), "r+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert discard_trees(base, used_before=time.time() + 30) == 1
        assert sorted(os.listdir(base)) == sorted(os.path.basename(p) for p in (held, recent))
        assert discard_trees(base) == 1
        assert os.listdir(base) == [os.path.basename(held)]
    assert run(sb, mkspec, LIST, objects(blob), label="//t:b").splitlines() == listing(objects(blob))


def test_identities_the_caller_saw_spare_the_trees_stats_and_still_show_a_replaced_source(
        tree_sb, mkspec, blob, monkeypatch):
    """`SandboxSpec.input_ids`: the engine stat'ed each store copy as it staged it; the tree takes
    that identity instead of a stat of its own, and a source replaced since (another identity)
    is still linked again."""
    inputs = objects(blob)
    ids = {}
    for src in inputs.values():
        st = os.stat(src)
        ids[src] = (st.st_dev, st.st_ino)
    run(tree_sb, mkspec, "true", inputs, input_ids=ids)
    stat_of = os.stat
    sources = set(inputs.values())
    statted = []

    def counting_stat(path, *a, **kw):
        if path in sources:
            statted.append(path)
        return stat_of(path, *a, **kw)

    monkeypatch.setattr(os, "stat", counting_stat)
    assert run(tree_sb, mkspec, "cat objs/m1/f3.o", inputs, input_ids=ids) == "3\n"
    assert statted == []
    src = inputs["objs/m1/f3.o"]
    with open(src + ".new", "w") as f:
        f.write("healed\n")
    os.replace(src + ".new", src)  # another inode under the same name
    st = stat_of(src)
    assert run(tree_sb, mkspec, "cat objs/m1/f3.o", inputs, input_ids=dict(ids, **{src: (st.st_dev, st.st_ino)})) \
        == "healed\n"
    assert statted == []
