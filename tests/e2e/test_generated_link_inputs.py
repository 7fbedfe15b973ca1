"""A link input the build program generates (zlib-ng's version script, made from a template):
named `$OUT/<file>` or by its name under `out_dir()`, it links on a clean tree, per profile (a
release link never reads the dev copy), and an edit of the template relinks."""
from __future__ import annotations

import shutil
import subprocess

import pytest

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("readelf") is None,
                                reason="needs gcc and binutils")


def files(link_input: str) -> dict[str, str]:
    return {
        "mcpp.toml": f"""
            [package]
            name = "zng"
            version = "2.0.0"

            [build]
            sources = ["*.c"]
            include_dirs = ["."]

            [targets.zng]
            kind = "lib"

            [targets.zng-shared]
            kind = "shared"
            soname = "libzng.so.2"
            ldflags = ["-Wl,--version-script={link_input}"]
            link_inputs = ["{link_input}"]
        """,
        # The map is made from its template, as zlib-ng's CMake configures zlib-ng.map.
        "build.star": """
            out = mcpp.out_dir()
            mcpp.action(id = "map", role = "check", tools = ["/bin/sh"], inputs = ["zng.map.in"],
                        argv = ["/bin/sh", "-c", "sed 's/@PREFIX@/zng_/g' $0 > $1", "zng.map.in", out + "/zng.map"],
                        outputs = [out + "/zng.map"])
        """,
        "zng.map.in": "ZNG_2.0 {\n  global: @PREFIX@adler; @PREFIX@version;\n  local: *;\n};\n",
        "zng.h": "unsigned zng_adler(const char* s);\nconst char* zng_version(void);\n",
        "adler.c": '#include "zng.h"\nunsigned zng_adler(const char* s) { unsigned a = 1; while (*s) a += '
                   '(unsigned char)*s++; return a + zng_internal(); }\n',
        "internal.c": "unsigned zng_internal(void) { return 7; }\n",
        "version.c": '#include "zng.h"\nconst char* zng_version(void) { return "2.0.0"; }\n',
    }


def versioned(lib) -> dict[str, str]:
    """Defined dynamic symbols -> their version node (`zng_adler@@ZNG_2.0` -> ZNG_2.0)."""
    text = subprocess.run(["readelf", "--dyn-syms", "-W", str(lib)], capture_output=True, text=True, check=True).stdout
    out = {}
    for line in text.splitlines():
        cols = line.split()
        if len(cols) >= 8 and cols[6] != "UND" and "@" in cols[7]:
            name, _, node = cols[7].partition("@")
            out[name] = node.lstrip("@")
    return out


@pytest.mark.parametrize("link_input", ["$OUT/zng.map", "zng.map"])
def test_a_generated_version_script_links_on_a_clean_tree_in_dev_and_release(project, mcpp, link_input):
    root = project(files(link_input))
    assert not (root / "zng.map").exists()
    res = mcpp("build", cwd=root)
    assert res.code == 0, res.err
    assert versioned(root / "target" / "dev" / "libzng.so") == {"zng_adler": "ZNG_2.0", "zng_version": "ZNG_2.0"}
    # the release link reads the release build's own map: a changed template shows only there
    template = root / "zng.map.in"
    template.write_text(template.read_text().replace("ZNG_2.0", "ZNG_2.1"))
    res = mcpp("build", "--release", cwd=root)
    assert res.code == 0, res.err
    assert versioned(root / "target" / "release" / "libzng.so") == {"zng_adler": "ZNG_2.1", "zng_version": "ZNG_2.1"}
    assert versioned(root / "target" / "dev" / "libzng.so")["zng_adler"] == "ZNG_2.0"


def test_editing_the_template_relinks(project, mcpp):
    root = project(files("$OUT/zng.map"))
    mcpp("build", "--sandbox", "bwrap", cwd=root, check=True)
    template = root / "zng.map.in"
    template.write_text(template.read_text().replace("@PREFIX@version;", ""))
    res = mcpp.build_json("build", "--sandbox", "bwrap", cwd=root)
    assert res.executed() == ["rule zng:map", "link zng:zng-shared"], res.executed()
    assert versioned(root / "target" / "dev" / "libzng.so") == {"zng_adler": "ZNG_2.0"}


def test_a_generated_link_input_no_action_makes_is_an_error_at_the_key(project, mcpp):
    proj = files("$OUT/zng.map")
    proj["build.star"] = "pass\n"
    root = project(proj)
    res = mcpp("build", cwd=root)
    assert res.code == 2, res.err
    assert "mcpp.toml:16:" in res.err, res.err
    assert "link input `$OUT/zng.map` of target `zng-shared` is not an output of any action" in res.err
    assert "Traceback" not in res.err
