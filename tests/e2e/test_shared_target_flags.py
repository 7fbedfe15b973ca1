"""A shared target with compile settings of its own compiles the library code linked into it
with them: `-fvisibility=hidden` on `kind = "shared"` leaves only the annotated symbols
exported, and its `defines` reach the library's sources, while the static library keeps the
package's own flags."""
from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("nm") is None,
                                reason="needs gcc and binutils")

FILES = {
    "mcpp.toml": """
        [package]
        name = "vis"
        version = "0.1.0"

        [build]
        include_dirs = ["include"]

        [targets.vis]
        kind = "lib"

        [targets.vis-shared]
        kind = "shared"
        soname = "libvis.so.1"
        cflags = ["-fvisibility=hidden"]
        defines = ["VIS_VALUE=7"]
    """,
    "include/vis.h": """
        #define VIS_EXPORT __attribute__((visibility("default")))
        VIS_EXPORT int vis_api(void);
        VIS_EXPORT int vis_value(void);
        int vis_helper(void);
    """,
    "src/api.c": '#include "vis.h"\nint vis_api(void) { return vis_helper() + 1; }\n',
    "src/helper.c": '#include "vis.h"\nint vis_helper(void) { return 41; }\n',
    "src/value.c": '#include "vis.h"\n#ifndef VIS_VALUE\n#define VIS_VALUE 1\n#endif\nint vis_value(void) { return VIS_VALUE; }\n',
}


def exported(lib) -> set[str]:
    text = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in text.splitlines() if " T " in line}


@pytest.mark.parametrize("sandbox", ["bwrap", "dir"])
def test_a_shared_targets_flags_reach_the_library_code_it_links(project, mcpp, sandbox):
    root = project(FILES)
    res = mcpp("build", "--sandbox", sandbox, cwd=root)
    assert res.code == 0, res.err
    out = root / "target" / "dev"
    assert exported(out / "libvis.so") == {"vis_api", "vis_value"}
    lib = ctypes.CDLL(str(out / "libvis.so"))
    assert lib.vis_api() == 42 and lib.vis_value() == 7
    # the static library's objects keep the package's flags: nothing hidden, no define
    commands = json.loads((root / "target" / "compile_commands.json").read_text())
    by_output = {os.path.relpath(c["output"], out): c["arguments"] for c in commands}
    assert "-fvisibility=hidden" not in by_output[".mcpp/obj/vis/src/helper.c.o"]
    assert "-DVIS_VALUE=7" not in by_output[".mcpp/obj/vis/src/value.c.o"]
    shared = by_output[".mcpp/obj-pic/vis.vis-shared/src/helper.c.o"]
    assert "-fvisibility=hidden" in shared and "-fPIC" in shared
    static = subprocess.run(["nm", "--defined-only", str(out / "libvis.a")], capture_output=True, text=True,
                            check=True).stdout
    assert " T vis_helper" in static


def test_editing_the_shared_targets_flags_recompiles_only_its_objects(project, mcpp):
    root = project(FILES)
    mcpp("build", "--sandbox", "dir", cwd=root, check=True)
    manifest = root / "mcpp.toml"
    manifest.write_text(manifest.read_text().replace('"VIS_VALUE=7"', '"VIS_VALUE=9"'))
    res = mcpp.build_json("build", "--sandbox", "dir", cwd=root)
    compiled = res.executed("compile")
    assert compiled and all(c.startswith("compile vis.vis-shared:") for c in compiled), compiled
    assert ctypes.CDLL(str(root / "target" / "dev" / "libvis.so")).vis_value() == 9
