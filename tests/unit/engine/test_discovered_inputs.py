"""engine/exec/discovered_inputs.py: the files a compile read beyond its declared inputs, from its depfile."""
from __future__ import annotations

import pytest

from mcpp.engine.exec.discovered_inputs import discovered_inputs


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "ws"
    for rel in ("src/a.cpp", "include/h.hpp", "include/sub/g.hpp"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("//\n")
    outside = tmp_path / "elsewhere" / "x.hpp"
    outside.parent.mkdir()
    outside.write_text("//\n")
    return root, outside


@pytest.mark.parametrize("spelled", ["plain", "trailing slash", "dotted"])
def test_files_of_the_build_are_relative_and_others_absolute(tree, spelled):
    root, outside = tree
    execroot = {"plain": str(root), "trailing slash": f"{root}/", "dotted": f"{root}/include/.."}[spelled]
    depfile = (f"target/a.o: src/a.cpp include/h.hpp ./include/sub/../sub/g.hpp \\\n"
               f" {root}/include/h.hpp ../elsewhere/x.hpp {outside} /usr/include/stdio.h include/gone.hpp\n")
    got = discovered_inputs(depfile, execroot, {"src/a.cpp", "target/a.o"})
    # declared inputs and outputs, duplicates and files that no longer exist are left out;
    # a path that climbs out of the build is keyed by its absolute path
    assert got == tuple(sorted({"include/h.hpp", "include/sub/g.hpp", str(outside), "/usr/include/stdio.h"}))


def test_the_build_root_itself_and_a_sibling_with_the_same_prefix_are_not_inside(tree, tmp_path):
    root, _ = tree
    sibling = tmp_path / "ws2" / "y.hpp"  # shares "…/ws" as a string prefix, not as a directory
    sibling.parent.mkdir()
    sibling.write_text("//\n")
    got = discovered_inputs(f"a.o: . {sibling} ../ws2/y.hpp\n", str(root), set())
    assert got == (str(sibling),)


def test_a_file_outside_the_build_is_stat_once_per_build(tree, tmp_path):
    """Every compile names the same system headers: the pipeline passes one memo for the build,
    and a path found to be a file is not looked at again (here it is gone by the second compile,
    and still named: the key's digest, taken from the stat cache, is what notices a change); the
    memo keeps the depfile's spelling, so a second spelling is normalized to the same path."""
    root, outside = tree
    seen: dict[str, str] = {}
    first = discovered_inputs(f"a.o: src/a.cpp {outside}\n", str(root), {"src/a.cpp"}, seen)
    assert first == (str(outside),) and seen == {str(outside): str(outside)}
    spelled = str(outside.parent / "." / outside.name)
    assert discovered_inputs(f"b.o: {spelled}\n", str(root), set(), seen) == (str(outside),)
    assert seen[spelled] == str(outside)
    outside.unlink()
    assert discovered_inputs(f"b.o: {outside}\n", str(root), set(), seen) == (str(outside),)
    assert discovered_inputs(f"b.o: {outside}\n", str(root), set()) == ()  # without the set: stat again


def test_a_header_of_the_build_is_stat_once_per_build(tree):
    """The project's own headers too: many compiles name them, and each is looked at once."""
    root, _outside = tree
    seen: dict[str, str] = {}
    assert discovered_inputs("a.o: include/h.hpp\n", str(root), set(), seen) == ("include/h.hpp",)
    assert seen == {"include/h.hpp": "include/h.hpp"}
    (root / "include" / "h.hpp").unlink()
    assert discovered_inputs("c.o: include/h.hpp\n", str(root), set(), seen) == ("include/h.hpp",)
    assert discovered_inputs("c.o: include/h.hpp\n", str(root), set()) == ()  # without the set: stat again
    assert discovered_inputs("d.o: include/h.hpp\n", str(root), {"include/h.hpp"}, seen) == ()  # declared


def test_a_file_another_compile_discovered_is_left_out_where_it_is_declared(tree):
    """The build's memo answers for a file a second time without skipping what the second
    action declares: the discovered set does not depend on which compile ran first."""
    root, outside = tree
    seen: dict[str, str] = {}
    assert discovered_inputs(f"a.o: {outside}\n", str(root), set(), seen) == (str(outside),)
    assert discovered_inputs(f"b.o: {outside}\n", str(root), {str(outside)}, seen) == ()
    assert discovered_inputs(f"b.o: {outside}\n", str(root), {str(outside)}) == ()  # as without the memo
