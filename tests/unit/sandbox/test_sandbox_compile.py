"""A real gcc compile in each mode: inputs staged, outputs collected, undeclared reads caught."""
from __future__ import annotations

import os

import pytest

from mcpp.sandbox import prefix_map_flags
from mcpp.sandbox.directory import COPIES_SUFFIX
from mcpp.sandbox.slot import SLOT_SUFFIX

MODES = ("bwrap", "dir", "off")

A_C = '#include "a.h"\nint f(void) { return A + __LINE__; }\n'
A_H = "#define A 41\n"


def write_tree(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def leftovers(work_root):
    """What the sandbox left behind, ignoring the per-thread slots, which stay for the next
    action (holding the last action's files until that one is prepared: an action sees none of
    them, test_sandbox_workers.py), and dir's per-thread private input copies."""
    base = os.path.join(work_root, "sandbox")
    names = sorted(os.listdir(base)) if os.path.isdir(base) else []
    return [n for n in names if not n.endswith((SLOT_SUFFIX, COPIES_SUFFIX))]


@pytest.mark.parametrize("mode", MODES)
def test_compile_with_declared_header_collects_declared_outputs_only(mode, make, mkspec, gcc, tmp_path, work_root):
    proj = write_tree(tmp_path / "proj", {"src/a.c": A_C, "inc/a.h": A_H})
    sb = make(mode)
    spec = mkspec(
        [gcc, *prefix_map_flags(), "-c", "src/a.c", "-Iinc", "-o", "obj/a.o", "-MD", "-MF", "obj/a.d",
         "-DJUNK", ],
        inputs={"src/a.c": str(proj / "src/a.c"), "inc/a.h": str(proj / "inc/a.h")},
        outputs=("obj/a.o", "obj/a.d", "obj/never.o"),
        tools=(gcc,),
        depfile="obj/a.d",
        root=str(proj),
    )
    r = sb.run(spec)
    assert r.exit_code == 0, r.stderr
    assert set(r.outputs) == {"obj/a.o", "obj/a.d"}  # a declared output not produced is absent
    with open(r.outputs["obj/a.o"], "rb") as f:
        assert f.read(4) == b"\x7fELF"
    assert r.undeclared == []
    if mode == "off":
        assert r.outputs["obj/a.o"] == str(proj / "obj/a.o")
        return
    # moved out of the action directory, which is gone; the source tree is untouched
    results = sb.pool.results_dir()
    assert leftovers(work_root) == [os.path.basename(results)]
    assert all(p.startswith(results + "/") for p in r.outputs.values())
    assert not (proj / "obj").exists()
    sb.release(r)
    assert os.listdir(results) == []
    sb.shutdown()
    assert leftovers(work_root) == []


@pytest.mark.parametrize("mode", ["bwrap", "dir"])
def test_undeclared_files_written_by_the_action_are_discarded(mode, make, mkspec, work_root):
    sb = make(mode)
    r = sb.run(mkspec(["sh", "-c", "echo x > out.txt; mkdir -p d; echo y > d/junk; echo z > junk"],
                      outputs=("out.txt",)))
    assert r.exit_code == 0, r.stderr
    assert list(r.outputs) == ["out.txt"]
    assert os.listdir(sb.pool.results_dir()) == [os.path.basename(r.outputs["out.txt"])]
    sb.release(r)
    assert os.listdir(sb.pool.results_dir()) == []
    sb.shutdown()
    assert leftovers(work_root) == []


@pytest.mark.parametrize("mode", ["bwrap", "dir"])
def test_inputs_are_hard_links_or_copies_not_symlinks(mode, make, mkspec, tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("hello\n")
    sb = make(mode)
    r = sb.run(mkspec(["sh", "-c", "test ! -L in.txt && stat -c %i in.txt && cat in.txt"],
                      inputs={"in.txt": str(src)}))
    assert r.exit_code == 0, r.stderr
    inode, text = r.stdout.decode().split("\n", 1)
    assert text == "hello\n"
    # bwrap: a second link to the same inode (mounted read-only); dir: a private copy
    assert (int(inode) == os.stat(src).st_ino) == (mode == "bwrap")


def test_undeclared_header_through_absolute_include_fails_under_bwrap(make, mkspec, gcc, tmp_path):
    outside = write_tree(tmp_path / "outside", {"secret.h": "#define A 1\n"})
    proj = write_tree(tmp_path / "proj", {"a.c": '#include "secret.h"\nint x = A;\n'})
    sb = make("bwrap")
    r = sb.run(mkspec([gcc, "-c", "a.c", f"-I{outside}", "-o", "a.o", "-MD", "-MF", "a.d"],
                      inputs={"a.c": str(proj / "a.c")}, outputs=("a.o", "a.d"), tools=(gcc,), depfile="a.d"))
    assert r.exit_code != 0
    assert b"secret.h" in r.stderr
    assert "a.o" not in r.outputs


def test_undeclared_header_through_absolute_include_is_reported_in_dir_mode(make, mkspec, gcc, tmp_path):
    outside = write_tree(tmp_path / "outside", {"secret.h": "#define A 1\n"})
    proj = write_tree(tmp_path / "proj", {"a.c": '#include "secret.h"\nint x = A;\n'})
    sb = make("dir")
    r = sb.run(mkspec([gcc, "-c", "a.c", f"-I{outside}", "-o", "a.o", "-MD", "-MF", "a.d"],
                      inputs={"a.c": str(proj / "a.c")}, outputs=("a.o", "a.d"), tools=(gcc,), depfile="a.d",
                      label="//app:a.o"))
    secret = str(outside / "secret.h")
    assert r.undeclared == [secret]
    assert r.exit_code != 0
    assert f"error: action //app:a.o read undeclared input {secret}".encode() in r.stderr
    assert r.outputs == {}  # tainted outputs are not collected


def test_declared_header_in_dir_mode_passes_the_depfile_check_with_system_headers(make, mkspec, gcc, tmp_path):
    proj = write_tree(tmp_path / "proj", {"a.c": '#include <stdio.h>\n#include "a.h"\nint x = A;\n', "a.h": A_H})
    sb = make("dir")
    r = sb.run(mkspec([gcc, *prefix_map_flags(), "-c", "a.c", "-o", "a.o", "-MD", "-MF", "a.d"],
                      inputs={"a.c": str(proj / "a.c"), "a.h": str(proj / "a.h")},
                      outputs=("a.o",), tools=(gcc,), depfile="a.d"))
    assert r.exit_code == 0, r.stderr
    assert r.undeclared == [] and "a.o" in r.outputs


@pytest.mark.parametrize("mode", ["bwrap", "dir"])
def test_debug_objects_are_byte_identical_across_input_directories(mode, make, mkspec, gcc, tmp_path):
    sb = make(mode)
    objects = []
    for name in ("checkout-one", "checkout-two"):
        proj = write_tree(tmp_path / name, {"src/a.c": A_C, "inc/a.h": A_H})
        r = sb.run(mkspec(
            [gcc, *prefix_map_flags(), "-g", "-O0", "-c", "src/a.c", "-I@@EXECROOT@@/inc", "-o", "obj/a.o"],
            inputs={"src/a.c": str(proj / "src/a.c"), "inc/a.h": str(proj / "inc/a.h")},
            outputs=("obj/a.o",), tools=(gcc,),
        ))
        assert r.exit_code == 0, r.stderr
        with open(r.outputs["obj/a.o"], "rb") as f:
            objects.append(f.read())
        sb.release(r)
    assert objects[0] == objects[1]
    assert str(tmp_path).encode() not in objects[0]
    assert b"/sandbox/" not in objects[0]


def test_bwrap_and_dir_objects_are_byte_identical(make, mkspec, gcc, tmp_path):
    proj = write_tree(tmp_path / "proj", {"src/a.c": A_C, "inc/a.h": A_H})
    objects = []
    for mode in ("bwrap", "dir"):
        sb = make(mode)
        r = sb.run(mkspec(
            [gcc, *prefix_map_flags(), "-g", "-c", "src/a.c", "-Iinc", "-o", "a.o"],
            inputs={"src/a.c": str(proj / "src/a.c"), "inc/a.h": str(proj / "inc/a.h")},
            outputs=("a.o",), tools=(gcc,),
        ))
        assert r.exit_code == 0, r.stderr
        with open(r.outputs["a.o"], "rb") as f:
            objects.append(f.read())
    assert objects[0] == objects[1]


@pytest.mark.parametrize("mode", ["bwrap", "dir"])
def test_concurrent_actions_do_not_see_each_other(mode, make, mkspec, tmp_path, work_root):
    from concurrent.futures import ThreadPoolExecutor

    sb = make(mode)
    srcs = []
    for i in range(24):
        p = tmp_path / f"in{i}.txt"
        p.write_text(f"{i}\n")
        srcs.append(p)

    def one(i):
        r = sb.run(mkspec(["sh", "-c", "ls; cat in.txt > out.txt"], inputs={"in.txt": str(srcs[i])},
                          outputs=("out.txt",)))
        assert r.exit_code == 0, r.stderr
        assert r.stdout == b"in.txt\n"
        with open(r.outputs["out.txt"]) as f:
            text = f.read()
        sb.release(r)
        return text

    with ThreadPoolExecutor(6) as ex:
        assert list(ex.map(one, range(24))) == [f"{i}\n" for i in range(24)]
    assert leftovers(work_root) == [os.path.basename(sb.pool.results_dir())]
    assert os.listdir(sb.pool.results_dir()) == []


@pytest.mark.parametrize("mode", ("bwrap", "dir"))
def test_the_depfile_check_hands_its_parse_to_the_engine(mode, make, mkspec, gcc, tmp_path):
    """The engine takes the dependencies the check parsed (`SandboxResult.deps`) instead of
    reading and parsing the collected depfile a second time; a depfile that is not ASCII is
    left for the engine to decode its own way."""
    from mcpp.sandbox import parse_depfile, read_depfile

    proj = write_tree(tmp_path / "proj", {"src/a.c": A_C, "inc/a.h": A_H})
    sb = make(mode)
    spec = mkspec([gcc, *prefix_map_flags(), "-c", "src/a.c", "-Iinc", "-o", "obj/a.o", "-MD", "-MF", "obj/a.d"],
                  inputs={"src/a.c": str(proj / "src/a.c"), "inc/a.h": str(proj / "inc/a.h")},
                  outputs=("obj/a.o", "obj/a.d"), tools=(gcc,), depfile="obj/a.d", root=str(proj))
    r = sb.run(spec)
    assert r.exit_code == 0, r.stderr
    assert r.deps == parse_depfile(read_depfile(r.outputs["obj/a.d"]))
    assert "src/a.c" in r.deps and "inc/a.h" in r.deps

    odd = write_tree(tmp_path / "odd", {"src/\u00e9.c": A_C, "inc/a.h": A_H})
    spec = mkspec([gcc, *prefix_map_flags(), "-c", "src/\u00e9.c", "-Iinc", "-o", "obj/a.o", "-MD", "-MF", "obj/a.d"],
                  inputs={"src/\u00e9.c": str(odd / "src/\u00e9.c"), "inc/a.h": str(odd / "inc/a.h")},
                  outputs=("obj/a.o", "obj/a.d"), tools=(gcc,), depfile="obj/a.d", root=str(odd))
    r = sb.run(spec)
    assert r.exit_code == 0, r.stderr
    assert r.deps is None
