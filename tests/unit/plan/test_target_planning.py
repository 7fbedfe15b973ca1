"""Per-target planning against a fake toolchain: what each binary links, whose defines a
compile gets, the shared library's own objects, and the C link driver."""
from __future__ import annotations

import textwrap

from tests.unit.plan.planning import action, plan_of

MANIFEST = """
    [package]
    name = "z"
    version = "1.3.1"
    [build]
    sources = ["*.c"]
    defines = ["PKG=1"]
    [targets.z]
    kind = "lib"
    [targets.z-shared]
    kind = "shared"
    soname = "libz.so.1"
    version = "1.3.1"
    ldflags = ["-Wl,--version-script=z.map"]
    link_inputs = ["z.map"]
    [targets.one]
    main = "ex/one.c"
    defines = ["WHO=1"]
    [targets.two]
    main = "ex/two.c"
    sources = ["ex/helper.c"]
    ldflags = ["-Wl,--as-needed"]
"""


def make(tmp_path):
    root = tmp_path / "z"
    files = {"mcpp.toml": MANIFEST, "a.c": "int a;\n", "b.c": "int b;\n", "z.map": "{ local: *; };\n",
             "ex/one.c": "int main(void){}\n", "ex/two.c": "int main(void){}\n", "ex/helper.c": "int h;\n"}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    return root


def test_each_binary_links_its_own_sources_and_the_library(tmp_path):
    plan = plan_of(make(tmp_path), execroot=tmp_path)
    one = action(plan, "link z:one")
    two = action(plan, "link z:two")
    objs = "z/target/dev/.mcpp/obj/"
    assert [i for i in one.inputs if i.endswith(".o")] == [f"{objs}z.one/ex/one.c.o", f"{objs}z/a.c.o", f"{objs}z/b.c.o"]
    assert [i for i in two.inputs if i.endswith(".o")] == [f"{objs}z/ex/two.c.o", f"{objs}z/ex/helper.c.o",
                                                            f"{objs}z/a.c.o", f"{objs}z/b.c.o"]
    assert "-Wl,--as-needed" in two.argv and "-Wl,--as-needed" not in one.argv
    assert not any("soname" in a for a in one.argv + two.argv)
    assert one.argv[0] == "/fake/bin/gcc"  # C sources alone: the C driver


def test_a_targets_defines_reach_its_own_compiles_only(tmp_path):
    plan = plan_of(make(tmp_path), execroot=tmp_path)
    assert "-DWHO=1" in action(plan, "compile z.one:ex/one.c").argv
    assert "-DPKG=1" in action(plan, "compile z.one:ex/one.c").argv
    assert "-DWHO=1" not in action(plan, "compile z:a.c").argv


def test_the_shared_library_links_pic_objects_with_its_soname_and_version_script(tmp_path):
    plan = plan_of(make(tmp_path), execroot=tmp_path)
    link = action(plan, "link z:z-shared")
    assert link.outputs == ("z/target/dev/libz.so.1.3.1", "z/target/dev/.mcpp/link-deps/libz.so.1.3.1.d")
    assert "-Wl,-soname,libz.so.1" in link.argv and "-Wl,--version-script=z/z.map" in link.argv
    assert "z/z.map" in link.inputs
    assert [i for i in link.inputs if i.endswith(".o")] == ["z/target/dev/.mcpp/obj-pic/z/a.c.o", "z/target/dev/.mcpp/obj-pic/z/b.c.o"]
    assert "-fPIC" in action(plan, "compile z:a.c (pic)").argv and "-fPIC" not in action(plan, "compile z:a.c").argv
    archive = action(plan, "archive z")
    assert archive.inputs == ("z/target/dev/.mcpp/obj/z/a.c.o", "z/target/dev/.mcpp/obj/z/b.c.o")
