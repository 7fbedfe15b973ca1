"""What an action can no longer do to the store or the host: change a staged input, hand back a
symlink as an output, leave a process behind, read /etc under dir."""
from __future__ import annotations

import os
import time

import pytest

from mcpp.sandbox.inputs import readonly_paths
from mcpp.sandbox.outputs import BadOutput, collect_outputs
from mcpp.sandbox.undeclared import SYSTEM_ROOTS, find_undeclared

# chmod u+w, same-size rewrite, chmod back, then a hard link into a writable directory: every
# way an owner (or root) has to change the file's bytes or keep a writable name for it
ATTACK = ("chmod u+w in/data.txt; printf 'XXXXXXXX\\n' > in/data.txt; chmod a-w in/data.txt; "
          "ln in/data.txt out/link 2>/dev/null; printf 'YYYYYYYY\\n' > out/link 2>/dev/null; "
          "cat in/data.txt > out/seen")


@pytest.mark.parametrize("mode", ["bwrap", "dir"])
def test_an_action_cannot_change_a_staged_input(mode, make, mkspec, tmp_path):
    src = tmp_path / "store-file"
    src.write_text("original\n")
    os.chmod(src, 0o444)
    sb = make(mode)
    r = sb.run(mkspec(["sh", "-c", ATTACK], inputs={"in/data.txt": str(src)}, outputs=("out/seen",),
                      label="//t:attack"))
    assert src.read_text() == "original\n"
    if mode == "bwrap":  # the read-only mount refused every step; the action went on
        assert r.exit_code == 0, r.stderr
        assert b"Read-only file system" in r.stderr
        assert r.outputs and open(r.outputs["out/seen"]).read() == "original\n"
        assert os.stat(r.outputs["out/seen"]).st_ino != os.stat(src).st_ino
    else:  # a private copy was changed: the action fails, nothing is collected
        assert r.exit_code == 1 and r.outputs == {}
        assert b"error: action //t:attack modified its input in/data.txt" in r.stderr
    # The slot's staged name goes with the slot; nothing else kept a link to the file.
    sb.shutdown()
    assert os.stat(src).st_nlink == 1


def test_inputs_in_a_directory_that_also_holds_outputs_are_read_only_one_by_one():
    assert readonly_paths(["src/a.c", "inc/x/y.h", "gen/in.h"], {"gen/out.c"}, ".") == ["src", "inc", "gen/in.h"]
    # the working directory and the directories above it stay writable
    assert readonly_paths(["pkg/src/a.c", "pkg/b.c"], set(), "pkg") == ["pkg/src", "pkg/b.c"]
    # an input that is also an output is the action's to rewrite (it is staged as a copy)
    assert readonly_paths(["lib.a"], {"lib.a"}, ".") == []


def _tree(tmp_path):
    root = tmp_path / "action"
    (root / "o").mkdir(parents=True)
    host = tmp_path / "host"
    host.mkdir()
    (host / "f").write_text("host file\n")
    return root, host


def test_a_symlinked_output_is_refused_and_nothing_moves(tmp_path):
    root, host = _tree(tmp_path)
    (root / "o" / "f").symlink_to(host / "f")
    with pytest.raises(BadOutput, match=r"output o/f: is a symbolic link"):
        collect_outputs(["o/f"], str(root), str(tmp_path / "dest"))
    assert (host / "f").read_text() == "host file\n"
    assert not (tmp_path / "dest").exists()


def test_a_symlinked_directory_above_an_output_is_refused(tmp_path):
    root, host = _tree(tmp_path)
    (root / "o").rmdir()
    (root / "o").symlink_to(host)
    with pytest.raises(BadOutput, match=r"output o/f: o is a symbolic link"):
        collect_outputs(["o/f"], str(root), str(tmp_path / "dest"))
    assert (host / "f").read_text() == "host file\n"


def test_a_deep_output_directory_is_reached_in_one_call_and_a_symlink_anywhere_refused(tmp_path, monkeypatch):
    """openat2 reaches `a/b/c/d/` in one call, refusing a symlink at any depth as the walk
    (one `open` per component, kept for the error message and for kernels without it) does."""
    from mcpp.sandbox import outputs

    root, host = _tree(tmp_path)
    deep = root / "a" / "b" / "c" / "d"
    deep.mkdir(parents=True)
    (deep / "x.o").write_text("object\n")
    walked: list[str] = []
    real_walk = outputs._walk_to_parent
    monkeypatch.setattr(outputs, "_walk_to_parent", lambda fd, rel: walked.append(rel) or real_walk(fd, rel))
    got = collect_outputs(["a/b/c/d/x.o"], str(root), str(tmp_path / "dest"))
    assert got == {"a/b/c/d/x.o": str(tmp_path / "dest/a/b/c/d/x.o")}
    assert outputs._beneath.works and walked == []  # this kernel has openat2: no walk
    (root / "a" / "b" / "c").rename(root / "a" / "b" / "moved")
    (root / "a" / "b" / "c").symlink_to(root / "a" / "b" / "moved")  # a link inside the tree, even
    (root / "a" / "b" / "moved" / "d" / "y.o").write_text("object\n")
    with pytest.raises(BadOutput, match=r"output a/b/c/d/y.o: a/b/c is a symbolic link"):
        collect_outputs(["a/b/c/d/y.o"], str(root), str(tmp_path / "dest"))
    assert walked == ["a/b/c/d/y.o"]  # refused by openat2, then named by the walk
    assert (root / "a" / "b" / "moved" / "d" / "y.o").exists()


def test_a_hard_link_to_a_host_file_is_refused(tmp_path):
    root, host = _tree(tmp_path)
    os.link(host / "f", root / "o" / "f")
    with pytest.raises(BadOutput, match=r"output o/f: is a hard link \(2 names\)"):
        collect_outputs(["o/f"], str(root), str(tmp_path / "dest"))


def test_regular_outputs_are_moved_and_absent_ones_left_out(tmp_path):
    root, _ = _tree(tmp_path)
    (root / "o" / "a").write_text("a\n")
    got = collect_outputs(["o/a", "o/missing", "p/q"], str(root), str(tmp_path / "dest"))
    assert got == {"o/a": str(tmp_path / "dest/o/a")}
    assert (tmp_path / "dest/o/a").read_text() == "a\n" and not (root / "o" / "a").exists()


def test_outputs_sharing_a_directory_are_each_checked(tmp_path):
    # a compile's object and depfile share one directory, reached once: the second output is
    # still checked on its own (a symlink beside a good output refuses both, nothing moves)
    root, host = _tree(tmp_path)
    (root / "o" / "a.o").write_text("object\n")
    (root / "o" / "a.d").symlink_to(host / "f")
    with pytest.raises(BadOutput, match=r"output o/a.d: is a symbolic link"):
        collect_outputs(["o/a.o", "o/a.d"], str(root), str(tmp_path / "dest"))
    assert (root / "o" / "a.o").read_text() == "object\n" and not (tmp_path / "dest").exists()
    (root / "o" / "a.d").unlink()
    (root / "o" / "a.d").write_text("a.o: a.c\n")
    got = collect_outputs(["o/a.o", "o/a.d", "o/absent"], str(root), str(tmp_path / "dest"))
    assert got == {"o/a.o": str(tmp_path / "dest/o/a.o"), "o/a.d": str(tmp_path / "dest/o/a.d")}
    assert (tmp_path / "dest/o/a.d").read_text() == "a.o: a.c\n" and os.listdir(root / "o") == []


@pytest.mark.parametrize("mode", ["bwrap", "dir"])
def test_a_process_that_keeps_forking_in_its_own_session_dies_with_the_action(mode, make, mkspec):
    # each generation forks the next and exits, so its pid never stays the same; it writes into
    # the action directory, which the next action of this thread reuses
    chain = "x() { sleep 0.01; echo late >> @@EXECROOT@@/mark; (x &); }; x"
    sb = make(mode)
    r = sb.run(mkspec(["sh", "-c", f"setsid sh -c '{chain}' & sleep 0.2; true"]))
    assert r.exit_code == 0, r.stderr
    r = sb.run(mkspec(["sh", "-c", "sleep 0.3; cat @@EXECROOT@@/mark 2>/dev/null | wc -l"]))
    assert (r.exit_code, r.stdout.strip()) == (0, b"0")


def test_dir_refuses_a_file_under_etc_that_bwrap_does_not_show():
    bad = find_undeclared(["/etc/hostname", "/usr/include/stdio.h", "/etc/alternatives/cc"], root="/r",
                          cwd="/r", declared=set(), allowed_roots=SYSTEM_ROOTS)
    assert bad == ["/etc/hostname"]


def test_without_the_capability_to_mount_actions_run_one_bwrap_each_and_inputs_stay_read_only(
        make, mkspec, tmp_path, monkeypatch):
    from mcpp.sandbox import worker

    monkeypatch.setattr(worker, "WORKER_CAPS", [])  # the executor cannot mount
    src = tmp_path / "store-file"
    src.write_text("original\n")
    sb = make("bwrap")
    r = sb.run(mkspec(["sh", "-c", ATTACK], inputs={"in/data.txt": str(src)}, outputs=("out/seen",)))
    assert r.exit_code == 0, r.stderr
    assert sb.use_workers is False
    assert src.read_text() == "original\n" and open(r.outputs["out/seen"]).read() == "original\n"


@pytest.mark.parametrize("mode", ["bwrap", "dir"])
def test_an_input_that_is_also_an_output_is_the_actions_to_rewrite(mode, make, mkspec, tmp_path):
    src = tmp_path / "lib.a"
    src.write_text("old\n")
    os.chmod(src, 0o444)
    r = make(mode).run(mkspec(["sh", "-c", "chmod u+w lib.a && echo new >> lib.a"], inputs={"lib.a": str(src)},
                              outputs=("lib.a",)))
    assert r.exit_code == 0, r.stderr
    assert open(r.outputs["lib.a"]).read() == "old\nnew\n"
    assert src.read_text() == "old\n"


# Inside a user namespace of its own an action holds every capability there; the mounts it
# inherits are locked, so it can neither unmount nor remount them, nor bind the tree beneath
# without them.
USERNS_ATTACK = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x10000000 | 0x00020000) != 0:  # CLONE_NEWUSER | CLONE_NEWNS
    print("no user namespaces"); raise SystemExit(0)
os.makedirs("/tmp/x", exist_ok=True)
libc.mount(b"/execroot", b"/tmp/x", None, 4096, None)  # MS_BIND, not recursive
libc.umount2(b"/execroot/in", 2)
libc.mount(None, b"/execroot/in", None, 32 | 4096, None)  # MS_REMOUNT | MS_BIND, read-write
for p in ("/tmp/x/in/data.txt", "/execroot/in/data.txt"):
    try:
        os.chmod(p, 0o644)
        open(p, "w").write("pwned\n")
        print("wrote", p)
    except OSError:
        pass
"""


def test_a_user_namespace_inside_the_action_does_not_lift_the_read_only_mounts(make, mkspec, tmp_path):
    src = tmp_path / "store-file"
    src.write_text("original\n")
    r = make("bwrap").run(mkspec(["python3", "-c", USERNS_ATTACK], inputs={"in/data.txt": str(src)}))
    assert r.exit_code == 0, r.stderr
    assert b"wrote" not in r.stdout
    assert src.read_text() == "original\n"


INJECT = r"""
import marshal, os
forged = marshal.dumps({"argv": ["sh", "-c", "echo injected > /execroot/planted"], "env": {}, "cwd": "/execroot",
                        "timeout": None, "ro": []}, 4)
reply = b'{"code": 0, "failure": null, "timed_out": false, "out": 0, "err": 0}\n'
reached = []
for pid in ("1", "self/../1"):
    for fd, data in (("0", len(forged).to_bytes(4, "little") + forged), ("1", reply)):
        try:
            with open(f"/proc/{pid}/fd/{fd}", "wb") as f:
                f.write(data)
            reached.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            pass
print(sorted(set(reached)))
"""


def test_an_action_cannot_reach_its_workers_request_or_reply_pipe(make, mkspec):
    """bwrap's pid 1 in the namespace runs as the action's user without capabilities, so an
    action may open its /proc/1/fd: the worker's pipes must not be there. A forged request would
    run a command of the action's choosing after it (with the store's files still staged), and a
    forged reply would shift every later answer by one: a failing action reported as passing."""
    sb = make("bwrap")
    attack = sb.run(mkspec(["/usr/bin/python3", "-c", INJECT]))
    assert attack.exit_code == 0, attack.stderr
    assert "pipe:" not in attack.stdout.decode()  # what it could open was /dev/null, not a pipe
    after = sb.run(mkspec(["sh", "-c", "ls; exit 3"]))
    assert (after.exit_code, after.stdout) == (3, b"")  # its own answer, in a slot with nothing planted
