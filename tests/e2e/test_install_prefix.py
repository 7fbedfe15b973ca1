"""`mcpp install --prefix DIR`, consumed as a Make or CMake project would: a plain C program
compiled with `cc $(pkg-config --cflags --libs NAME)` (PKG_CONFIG_PATH at the prefix) links the
installed library, static or shared, and runs. (tests/e2e/test_install.py is about mcpp's own
wheel.)"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.skipif(not shutil.which("pkg-config") or not shutil.which("cc"),
                                reason="needs pkg-config and cc")

# A zlib-shaped C library: a public header in include/, a path dependency with its own archive
# and header, a tool binary, and a link flag a static consumer must repeat (-lm).
STATIC = {
    "mcpp.toml": """
        [package]
        name = "zed"
        version = "1.2.3"

        [dependencies]
        zbase = { path = "zbase" }

        [build]
        ldflags = ["-lm"]

        [targets.zed]
        kind = "lib"

        [targets.zedtool]
        kind = "bin"
        main = "src/tool.c"
    """,
    "include/zed.h": "#include <zbase.h>\nint zed_version(void);\ndouble zed_root(double);\n",
    "src/zed.c": '#include <math.h>\n#include "zed.h"\nint zed_version(void) { return zbase_major() * 100 + 23; }\n'
                 "double zed_root(double x) { return sqrt(x); }\n",
    "src/tool.c": '#include <stdio.h>\n#include "zed.h"\nint main(void) { printf("zedtool %d\\n", zed_version()); return 0; }\n',
    "zbase/mcpp.toml": '[package]\nname = "zbase"\nversion = "0.1.0"\n',
    "zbase/include/zbase.h": "int zbase_major(void);\n",
    "zbase/src/zbase.c": '#include "zbase.h"\nint zbase_major(void) { return 1; }\n',
}

CONSUMER = r"""
#include <stdio.h>
#include <zed.h>
int main(void) { printf("version %d root %.1f\n", zed_version(), zed_root(16.0)); return 0; }
"""


def consume(prefix, name: str, tmp_path, source: str = CONSUMER, env: dict | None = None) -> str:
    """Compile and run a consumer the way a Makefile would, against the installed `name`."""
    pc_env = {**os.environ, "PKG_CONFIG_PATH": str(prefix / "lib" / "pkgconfig")}
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", name], env=pc_env, capture_output=True,
                           text=True, check=True).stdout
    src = tmp_path / "consumer.c"
    src.write_text(source)
    exe = tmp_path / "consumer"
    cc = subprocess.run(["cc", str(src), "-o", str(exe), *shlex.split(flags)], capture_output=True, text=True)
    assert cc.returncode == 0, f"cc {flags}\n{cc.stderr}"
    run = subprocess.run([str(exe)], capture_output=True, text=True, env={**os.environ, **(env or {})})
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_a_static_library_its_binary_headers_and_pc_file(project, mcpp, tmp_path):
    root = project(STATIC)
    prefix = tmp_path / "prefix"
    res = mcpp("install", "--prefix", str(prefix), cwd=root)
    assert res.code == 0, res.out + res.err
    assert (prefix / "lib/libzed.a").is_file() and (prefix / "lib/libzbase.a").is_file()
    assert (prefix / "include/zed.h").is_file() and (prefix / "include/zbase.h").is_file()
    assert subprocess.run([str(prefix / "bin/zedtool")], capture_output=True, text=True).stdout == "zedtool 123\n"
    pc = (prefix / "lib/pkgconfig/zed.pc").read_text()
    assert f"prefix={prefix}\n" in pc and "Version: 1.2.3" in pc
    assert consume(prefix, "zed", tmp_path) == "version 123 root 4.0\n"
    # Installed from the release profile unless asked otherwise.
    assert (root / "target/release/zedtool").is_file()


def test_destdir_stages_while_the_pc_file_names_the_prefix(project, mcpp, tmp_path):
    root = project(STATIC)
    stage = tmp_path / "stage"
    res = mcpp("install", "--prefix", "/opt/zed", cwd=root, env={"DESTDIR": str(stage)})
    assert res.code == 0, res.out + res.err
    assert (stage / "opt/zed/lib/libzed.a").is_file()
    assert "prefix=/opt/zed\n" in (stage / "opt/zed/lib/pkgconfig/zed.pc").read_text()


# A shared library with a SONAME and no version: the real file is named by the SONAME, and the
# link editor's `libzs.so` points at it.
SHARED = {
    "mcpp.toml": """
        [package]
        name = "zs"
        version = "2.0.0"

        [targets.zs]
        kind = "shared"
        soname = "libzs.so.2"
    """,
    "include/zed.h": "int zed_version(void);\ndouble zed_root(double);\n",
    "src/zs.c": '#include "zed.h"\nint zed_version(void) { return 200; }\ndouble zed_root(double x) { return x / 4; }\n',
}


def test_a_shared_library_with_its_soname_link(project, mcpp, tmp_path):
    root = project(SHARED)
    prefix = tmp_path / "prefix"
    res = mcpp("install", "--prefix", str(prefix), cwd=root)
    assert res.code == 0, res.out + res.err
    lib = prefix / "lib"
    names = {p.name for p in lib.iterdir()}
    assert {"libzs.so", "libzs.so.2"} <= names, names
    real = [p for p in lib.iterdir() if p.name.startswith("libzs.so") and not p.is_symlink()]
    assert len(real) == 1, names
    for p in lib.iterdir():
        if p.is_symlink():
            assert os.readlink(p) == real[0].name  # relative links: the prefix can move
    out = consume(prefix, "zs", tmp_path, env={"LD_LIBRARY_PATH": str(lib)})
    assert out == "version 200 root 4.0\n"


def test_a_header_only_library_installs_its_headers_and_cflags(project, mcpp, tmp_path):
    root = project({
        "mcpp.toml": '[package]\nname = "hdr"\nversion = "0.3.0"\n\n[build]\nsources = []\n',
        "include/hdr/twice.h": "static inline int twice(int x) { return 2 * x; }\n",
    })
    prefix = tmp_path / "prefix"
    res = mcpp("install", "--prefix", str(prefix), cwd=root)
    assert res.code == 0, res.out + res.err
    assert (prefix / "include/hdr/twice.h").is_file()
    out = consume(prefix, "hdr", tmp_path,
                  '#include <stdio.h>\n#include <hdr/twice.h>\nint main(void) { printf("%d\\n", twice(21)); }\n')
    assert out == "42\n"


def test_install_needs_a_prefix(project, mcpp):
    root = project(SHARED)
    res = mcpp("install", cwd=root)
    assert res.code == 2 and "--prefix" in res.err and "Traceback" not in res.err


def test_the_zlib_shaped_library_with_a_versioned_shared_library(project, mcpp, tmp_path):
    """The shape that asked for it: a generated config header, a version script, a SONAME and a
    version, two example programs; the consumer links the shared library through pkg-config."""
    from tests.e2e.zlike_project import ADLER_ABC, FILES

    root = project(FILES)
    prefix = tmp_path / "prefix"
    res = mcpp("install", "--prefix", str(prefix), cwd=root)
    assert res.code == 0, res.out + res.err
    lib = prefix / "lib"
    assert os.readlink(lib / "libzlike.so") == "libzlike.so.1"
    assert os.readlink(lib / "libzlike.so.1") == "libzlike.so.1.3.1"
    assert (lib / "libzlike.so.1.3.1").is_file() and not (lib / "libzlike.so.1.3.1").is_symlink()
    assert (lib / "libzlike.a").is_file()
    assert (prefix / "include/zlike.h").is_file() and (prefix / "include/zconf.h").is_file()  # generated
    run = subprocess.run([str(prefix / "bin/minigzip")], capture_output=True, text=True)
    assert run.stdout == f"minigzip {ADLER_ABC} level=9\n"
    out = consume(prefix, "zlike", tmp_path,
                  '#include <stdio.h>\n#include <zlike.h>\n'
                  'int main(void) { printf("%u %d\\n", zl_adler("abc"), zl_config()); return 0; }\n',
                  env={"LD_LIBRARY_PATH": str(lib)})
    assert out == f"{ADLER_ABC} 131\n"
    if shutil.which("readelf"):  # linked against the shared library, by its SONAME
        dyn = subprocess.run(["readelf", "-d", str(tmp_path / "consumer")], capture_output=True, text=True).stdout
        assert "[libzlike.so.1]" in dyn, dyn
