"""System libraries as dependencies: `z = { pkg-config = "zlib" }` takes zlib's flags from
pkg-config (the system's zlib.pc, or a copy in a PKG_CONFIG_PATH directory of the test),
`{ system = "z" }` is a bare `-lz`; a missing module is an error at the entry naming
PKG_CONFIG_PATH; a missing `-l` gets a hint about system libraries, not sources."""
from __future__ import annotations

import json
import shutil
import subprocess
import time

import pytest

pytestmark = pytest.mark.skipif(not shutil.which("pkg-config") or not subprocess.run(
    ["pkg-config", "--exists", "zlib"]).returncode == 0, reason="needs pkg-config and zlib's development files")

ZLIB_MAIN = """
    #include <stdio.h>
    #include <string.h>
    #include <zlib.h>
    #ifndef FROM_PC
    #define FROM_PC 0
    #endif
    int main(void) {
        const char *text = "hello hello hello hello hello hello";
        unsigned char packed[128], back[128];
        uLongf n = sizeof packed, m = sizeof back;
        if (compress(packed, &n, (const Bytef *)text, strlen(text)) != Z_OK) return 1;
        if (uncompress(back, &m, packed, n) != Z_OK) return 2;
        printf("%s %.*s %d\\n", zlibVersion(), (int)m, back, FROM_PC);
        return 0;
    }
"""


def zlib_package(project, dep: str):
    return project({
        "mcpp.toml": f"""
            [package]
            name = "zuser"
            version = "0.1.0"

            [dependencies]
            z = {dep}
        """,
        "src/main.c": ZLIB_MAIN,
    })


def system_zlib_pc() -> str:
    return subprocess.run(["pkg-config", "--path", "zlib"], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.mark.parametrize("dep", ['{ pkg-config = "zlib" }', '{ system = "z" }'])
def test_links_zlib_from_the_system_and_runs(mcpp, project, dep):
    root = zlib_package(project, dep)
    res = mcpp("run", cwd=root)
    assert res.code == 0, res.err
    version = subprocess.run(["pkg-config", "--modversion", "zlib"], capture_output=True, text=True).stdout.strip()
    assert res.out.strip() == f"{version} hello hello hello hello hello hello 0"


def test_an_edited_pc_file_recompiles_and_relinks(mcpp, project, tmp_path):
    pcdir = tmp_path / "pc"
    pcdir.mkdir()
    pc = pcdir / "zlib.pc"
    pc.write_text(open(system_zlib_pc()).read())
    env = {"PKG_CONFIG_PATH": str(pcdir)}
    root = zlib_package(project, '{ pkg-config = "zlib" }')
    first = mcpp("build", "--message-format", "json", cwd=root, env=env)
    assert first.code == 0, first.err
    assert any(i.startswith("link ") for i in first.executed())
    again = mcpp("build", "--message-format", "json", cwd=root, env=env)
    assert again.code == 0 and again.executed() == []
    # The copy's flags change: a define for the compile, one more library for the link.
    text = pc.read_text()
    text = text.replace("Cflags:", "Cflags: -DFROM_PC=7").replace("Libs:", "Libs: -lm")
    pc.write_text(text)
    edited = mcpp("build", "--message-format", "json", cwd=root, env=env)
    assert edited.code == 0, edited.err
    assert any(i.startswith("compile ") for i in edited.executed()), edited.executed()
    assert any(i.startswith("link ") for i in edited.executed()), edited.executed()
    commands = json.loads((root / "target" / "compile_commands.json").read_text())
    assert any("-DFROM_PC=7" in c["arguments"] for c in commands)
    run = mcpp("run", cwd=root, env=env)
    assert run.code == 0 and run.out.strip().endswith(" 7"), run.out + run.err


def test_a_missing_pkg_config_module_is_an_error_at_the_entry(mcpp, project, tmp_path):
    root = project({
        "mcpp.toml": """
            [package]
            name = "nolib"
            version = "0.1.0"

            [dependencies]
            nope = { pkg-config = "no-such-module-mcpp" }
        """,
        "src/main.c": "int main(void) { return 0; }\n",
    })
    res = mcpp("build", cwd=root, env={"PKG_CONFIG_PATH": str(tmp_path / "nowhere")})
    assert res.code == 2, res.err
    assert "Traceback" not in res.err
    assert "mcpp.toml:6:" in res.diagnostics
    assert "`no-such-module-mcpp`" in res.diagnostics
    assert f"PKG_CONFIG_PATH={tmp_path / 'nowhere'}" in res.diagnostics


@pytest.mark.parametrize("spec, message", [
    ('{ pkg-config = "zlib", path = "../z" }', "`path` does not apply to the system library `z`"),
    ('{ pkg-config = "zlib", system = "z" }', "names both `pkg-config` and `system`"),
    ('{ system = "-lz" }', "is not a library name"),
])
def test_a_malformed_system_entry_is_refused_at_its_position(mcpp, project, spec, message):
    root = project({
        "mcpp.toml": f"""
            [package]
            name = "bad"
            version = "0.1.0"

            [dependencies]
            z = {spec}
        """,
        "src/main.c": "int main(void) { return 0; }\n",
    })
    res = mcpp("build", cwd=root)
    assert res.code == 2 and "mcpp.toml:6:" in res.diagnostics and message in res.diagnostics, res.err


def test_a_library_the_linker_does_not_find_is_not_called_a_missing_source(mcpp, project):
    root = project({
        "mcpp.toml": """
            [package]
            name = "nolink"
            version = "0.1.0"

            [dependencies]
            q = { system = "mcpp_no_such_library" }
        """,
        "src/main.c": "int main(void) { return 0; }\n",
    })
    res = mcpp("build", cwd=root)
    assert res.code == 1
    assert "finds no library `mcpp_no_such_library`" in res.diagnostics, res.err
    assert "[build] sources" not in res.diagnostics


def test_a_pc_file_outside_the_system_directories_builds_under_the_sandbox(mcpp, project, tmp_path):
    """The directories a `.pc` file names (`-I/opt/...`) are shown to the sandbox read-only; a
    header read there is keyed like any system header (editing it recompiles)."""
    extra = tmp_path / "extra"
    (extra / "include").mkdir(parents=True)
    (extra / "include" / "extra.h").write_text("#define EXTRA_VALUE 5\n")
    pcdir = tmp_path / "pc"
    pcdir.mkdir()
    (pcdir / "extra.pc").write_text(f"prefix={extra}\nincludedir=${{prefix}}/include\n\nName: extra\n"
                                    f"Description: a header outside /usr\nVersion: 1.0\nCflags: -I${{includedir}}\n"
                                    f"Libs:\n")
    root = project({
        "mcpp.toml": """
            [package]
            name = "extrauser"
            version = "0.1.0"

            [dependencies]
            extra = { pkg-config = "extra" }
        """,
        "src/main.c": '#include <stdio.h>\n#include <extra.h>\nint main(void) { printf("%d\\n", EXTRA_VALUE); }\n',
    })
    env = {"PKG_CONFIG_PATH": str(pcdir)}
    res = mcpp("run", "--sandbox", "bwrap", cwd=root, env=env)
    assert res.code == 0 and res.out.strip() == "5", res.err
    (extra / "include" / "extra.h").write_text("#define EXTRA_VALUE 6\n")
    res = mcpp("run", "--sandbox", "bwrap", cwd=root, env=env)
    assert res.code == 0 and res.out.strip() == "6", res.err


def test_a_pc_file_appearing_earlier_on_pkg_config_path_is_taken(mcpp, project, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    (second / "zlib.pc").write_text(open(system_zlib_pc()).read())
    env = {"PKG_CONFIG_PATH": f"{first}:{second}"}
    root = zlib_package(project, '{ pkg-config = "zlib" }')
    res = mcpp("run", cwd=root, env=env)
    assert res.code == 0 and res.out.strip().endswith(" 0"), res.err
    time.sleep(1.1)  # past the file system's timestamp tick: the next build records a no-op
    assert mcpp("build", cwd=root, env=env).code == 0  # recorded: the next identical build is a no-op
    (first / "zlib.pc").write_text(open(system_zlib_pc()).read().replace("Cflags:", "Cflags: -DFROM_PC=3"))
    assert mcpp("build", cwd=root, env=env).code == 0
    out = subprocess.run([str(root / "target" / "dev" / "zuser")], capture_output=True, text=True).stdout
    assert out.strip().endswith(" 3"), out
