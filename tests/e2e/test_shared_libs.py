"""Shared libraries done right: a SONAME and versioned file names with their chain of links, a
version script as a declared input of the link (staged under bwrap, relinked when it changes),
and position-independent objects kept apart from the static library's."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from tests.e2e.zlike_project import ADLER_ABC, FILES as ZLIKE

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("readelf") is None,
                                reason="needs gcc and binutils")


def dynamic(lib) -> str:
    return subprocess.run(["readelf", "-d", "--dyn-syms", "-W", str(lib)], capture_output=True, text=True,
                          check=True).stdout


def exported(lib) -> set[str]:
    text = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1].split("@")[0] for line in text.splitlines() if " T " in line}


@pytest.mark.parametrize("sandbox", ["bwrap", "dir"])
def test_soname_versioned_names_and_the_version_script(project, mcpp, sandbox):
    root = project(ZLIKE)
    res = mcpp("build", "--sandbox", sandbox, cwd=root)
    assert res.code == 0, res.err
    out = root / "target" / "dev"
    real = out / "libzlike.so.1.3.1"
    assert real.is_file() and not real.is_symlink()
    assert os.readlink(out / "libzlike.so.1") == "libzlike.so.1.3.1"
    assert os.readlink(out / "libzlike.so") == "libzlike.so.1"
    assert "Library soname: [libzlike.so.1]" in dynamic(real)
    # the version script (a declared link input, staged into the sandbox) hides zl_combine
    assert exported(real) == {"zl_adler", "zl_config"}
    # the executables never get a SONAME
    assert "soname" not in dynamic(out / "example").lower()


def test_a_consumer_links_the_shared_library_through_its_soname(project, mcpp, tmp_path):
    root = project(ZLIKE)
    mcpp("build", cwd=root, check=True)
    out = root / "target" / "dev"
    main = tmp_path / "use.c"
    main.write_text('#include <stdio.h>\n#include "zlike.h"\nint main(void) { printf("%u\\n", zl_adler("abc")); }\n')
    exe = tmp_path / "use"
    gen = out / ".mcpp" / "gen" / "zlike"
    subprocess.run(["gcc", "-I", str(root), "-I", str(gen), str(main), "-L", str(out), "-lzlike", "-o", str(exe)],
                   check=True)
    assert "Shared library: [libzlike.so.1]" in dynamic(exe)
    run = subprocess.run([str(exe)], capture_output=True, text=True, env={**os.environ, "LD_LIBRARY_PATH": str(out)})
    assert run.stdout.strip() == str(ADLER_ABC)


def test_the_link_reruns_when_the_version_script_changes(project, mcpp):
    root = project(ZLIKE)
    mcpp("build", "--sandbox", "dir", cwd=root, check=True)
    (root / "zlike.map").write_text("ZLIKE_1.0 {\n  global: zl_adler; zl_config; zl_combine;\n  local: *;\n};\n")
    res = mcpp.build_json("build", "--sandbox", "dir", cwd=root)
    assert res.executed() == ["link zlike:zlike-shared"]
    assert exported(root / "target" / "dev" / "libzlike.so.1.3.1") == {"zl_adler", "zl_config", "zl_combine"}


def test_pic_objects_are_kept_apart_from_the_static_librarys(project, mcpp):
    root = project(ZLIKE)
    mcpp("build", cwd=root, check=True)
    commands = json.loads((root / "target" / "compile_commands.json").read_text())
    by_output = {os.path.relpath(c["output"], root / "target" / "dev"): c["arguments"] for c in commands}
    assert "-fPIC" in by_output[".mcpp/obj-pic/zlike/adler.c.o"]
    assert "-fPIC" not in by_output[".mcpp/obj/zlike/adler.c.o"]
    members = subprocess.run(["ar", "t", str(root / "target" / "dev" / "libzlike.a")], capture_output=True,
                             text=True, check=True).stdout.split()
    assert sorted(members) == ["adler.c.o", "config.c.o", "zutil.c.o"]


def test_a_shared_only_package_compiles_its_sources_once(project, mcpp):
    root = project({
        "mcpp.toml": '[package]\nname = "plug"\nversion = "0.1.0"\n[targets.plug]\nkind = "shared"\nversion = "2.0"\n',
        "src/plug.c": "int plug(void) { return 1; }\n",
    })
    res = mcpp.build_json("build", cwd=root)
    assert sorted(res.executed()) == ["compile plug:src/plug.c", "link plug:plug"]
    out = root / "target" / "dev"
    assert "Library soname: [libplug.so.2]" in dynamic(out / "libplug.so.2.0")
    assert os.readlink(out / "libplug.so") == "libplug.so.2"
