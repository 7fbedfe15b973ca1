"""Per-target settings (`[targets.<name>]` defines, flags, sources, include_dirs, deps), the
defaults a migrating manifest relies on (standard, C link driver), what a dependency's own
binaries and compile_commands.json leave in a consumer's tree. On a zlib-shaped library
(tests/e2e/zlike_project.py)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from tests.e2e.zlike_project import ADLER_ABC, FILES as ZLIKE

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


def needed(binary) -> list[str]:
    text = subprocess.run(["readelf", "-d", str(binary)], capture_output=True, text=True, check=True).stdout
    return [line.split("[", 1)[1].rstrip("]") for line in text.splitlines() if "(NEEDED)" in line]


def symbols(binary) -> str:
    return subprocess.run(["nm", str(binary)], capture_output=True, text=True, check=True).stdout


def test_two_examples_get_their_own_defines_and_sources(project, mcpp):
    root = project(ZLIKE)
    mcpp("build", cwd=root, check=True)
    out = root / "target" / "dev"
    example = subprocess.run([out / "example"], capture_output=True, text=True, check=True).stdout
    minigzip = subprocess.run([out / "minigzip"], capture_output=True, text=True, check=True).stdout
    assert example == f"example {ADLER_ABC} 131\n"
    assert minigzip == f"minigzip {ADLER_ABC} level=9\n"
    # A binary links its own sources and the package's library: not the other example's files.
    assert " level" not in symbols(out / "example") and " T level" in symbols(out / "minigzip")
    # The library's sources compile once, without any target's defines.
    commands = json.loads((root / "target" / "compile_commands.json").read_text())
    adler = [c["arguments"] for c in commands if c["file"].endswith("/adler.c")]
    assert len(adler) == 2  # the static library's object and the shared library's -fPIC one
    assert not any(a.startswith("-DEXAMPLE_NAME") or a.startswith("-DMINIGZIP") for args in adler for a in args)


def test_a_c_program_links_with_the_c_driver(project, mcpp):
    root = project(ZLIKE)
    mcpp("build", cwd=root, check=True)
    assert not any(n.startswith("libstdc++") for n in needed(root / "target" / "dev" / "example"))


def test_one_test_target_gets_no_exceptions_and_a_dev_dependency(project, mcpp):
    root = project({
        "mcpp.toml": """
            [package]
            name = "lib"
            version = "0.1.0"
            [dev-dependencies]
            checks = { path = "checks" }
            [targets.lib]
            kind = "lib"
            [targets.noexcept]
            kind = "test"
            main = "tests/noexcept.cpp"
            cxxflags = ["-fno-exceptions"]
            defines = ["EXPECTED=3"]
        """,
        "src/lib.cpp": """
            #include <stdexcept>
            int lib_value() {
            #ifndef __cpp_exceptions
                return -1;  // the test's flag must not reach the library
            #endif
                return 3;
            }
        """,
        "tests/noexcept.cpp": """
            #include "checks.h"
            int lib_value();
            int main() {
            #ifdef __cpp_exceptions
                return 10;
            #endif
                return check_equal(lib_value(), EXPECTED);
            }
        """,
        "tests/plain.cpp": "int main() { try { throw 1; } catch (int) { return 0; } }\n",
        "checks/mcpp.toml": '[package]\nname = "checks"\nversion = "0.1.0"\n[build]\ninclude_dirs = ["include"]\n',
        "checks/include/checks.h": "int check_equal(int a, int b);\n",
        "checks/src/checks.cpp": "int check_equal(int a, int b) { return a == b ? 0 : 1; }\n",
    })
    res = mcpp("test", cwd=root)
    assert res.code == 0, res.out + res.err
    assert "noexcept ... ok" in res.out and "plain ... ok" in res.out
    # built once, not also as an auto-discovered tests/*.cpp
    assert not (root / "target" / "dev" / ".mcpp" / "tests" / "lib" / "noexcept.cpp").exists()
    built = sorted(os.listdir(root / "target" / "dev" / ".mcpp" / "tests" / "lib"))
    assert built == ["noexcept", "plain"]


def test_a_binary_names_a_dev_dependency_it_links(project, mcpp):
    root = project({
        "mcpp.toml": """
            [package]
            name = "app"
            version = "0.1.0"
            [dev-dependencies]
            helper = { path = "helper" }
            [targets.demo]
            main = "examples/demo.cpp"
            deps = ["helper"]
        """,
        "examples/demo.cpp": '#include <cstdio>\n#include "helper.h"\nint main() { std::printf("%d\\n", helper()); }\n',
        "helper/mcpp.toml": '[package]\nname = "helper"\nversion = "0.1.0"\n[build]\ninclude_dirs = ["include"]\n',
        "helper/include/helper.h": "int helper();\n",
        "helper/src/helper.cpp": "int helper() { return 17; }\n",
    })
    res = mcpp("run", "demo", cwd=root)
    assert res.code == 0, res.err
    assert res.out.strip().splitlines()[-1] == "17"


@pytest.mark.parametrize("line, message", [
    ('defnies = ["X"]', "mcpp.toml:6:1: error: unknown key `defnies` in [targets.tool]; did you mean `defines`?"),
    ('Include-Dirs = ["x"]', "mcpp.toml:6:1: error: unknown key `Include-Dirs` in [targets.tool]; did you mean "
                             "`include_dirs`?"),
    ('soname = "libtool.so.1"', "mcpp.toml:6:1: error: `soname` applies to `shared` targets only"),
    ('ldflags = ["-Wl,-soname,libtool.so"]', "mcpp.toml:6:12: error: `-Wl,-soname,libtool.so`: a SONAME is written "
                                             "`soname = \"...\"` on a `shared` target"),
    ('deps = ["nothere"]', "mcpp.toml:6:9: error: target `tool` depends on `nothere`, which neither [dependencies] "
                           "nor [dev-dependencies] declares"),
])
def test_a_wrong_target_key_is_an_error_at_its_position(project, mcpp, line, message):
    root = project({
        "mcpp.toml": f'[package]\nname = "p"\nversion = "0.1.0"\n[targets.tool]\nmain = "src/main.cpp"\n{line}\n',
        "src/main.cpp": "int main() {}\n",
    })
    res = mcpp("build", cwd=root)
    assert res.code == 2 and "Traceback" not in res.err, res.err
    assert message in res.err, res.err


def test_a_soname_in_package_ldflags_is_refused(project, mcpp):
    root = project({
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n[build]\nldflags = ["-Wl,-soname,libp.so.1"]\n',
        "src/main.cpp": "int main() {}\n",
    })
    res = mcpp("build", cwd=root)
    assert res.code == 2, res.err
    assert "mcpp.toml:5:12: error: `-Wl,-soname,libp.so.1` in [build] ldflags would reach every executable" in res.err


def test_the_default_standard_is_cxx23(project, mcpp):
    root = project({
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
        "src/main.cpp": "#include <cstdio>\nint main() { std::printf(\"%ld\\n\", (long)__cplusplus); }\n",
    })
    res = mcpp("run", cwd=root)
    assert res.code == 0, res.err
    assert int(res.out.strip().splitlines()[-1]) > 202002  # past C++20 (gcc 12 says 202100 for c++23)


def test_a_dependencys_examples_are_not_built_into_the_consumer(project, mcpp):
    files = {f"zlike/{k}": v for k, v in ZLIKE.items()}
    root = project({
        **files,
        "app/mcpp.toml": '[package]\nname = "app"\nversion = "0.1.0"\n[dependencies]\nzlike = { path = "../zlike" }\n',
        "app/src/main.cpp": '#include <cstdio>\nextern "C" {\n#include "zlike.h"\n}\n'
                            'int main() { std::printf("%d\\n", zl_config()); }\n',
    })
    res = mcpp("run", cwd=root / "app")
    assert res.code == 0, res.err
    assert res.out.strip().splitlines()[-1] == "131"
    out = root / "app" / "target" / "dev"
    assert not (out / "example").exists() and not (out / "minigzip").exists()
    assert not any(p.name.startswith("zlike.") for p in (out / ".mcpp" / "obj").iterdir())


def test_compile_commands_is_linked_at_the_root_only_when_asked(project, mcpp):
    root = project({
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
        "src/main.cpp": "int main() {}\n",
    })
    mcpp("build", cwd=root, check=True)
    assert (root / "target" / "compile_commands.json").is_file()
    assert not os.path.lexists(root / "compile_commands.json")
    (root / "mcpp.toml").write_text('[package]\nname = "p"\nversion = "0.1.0"\n[build]\ncompile_commands = "root"\n')
    mcpp("build", cwd=root, check=True)
    link = root / "compile_commands.json"
    assert os.readlink(link) == os.path.join("target", "compile_commands.json")
    assert json.loads(link.read_text())[0]["file"].endswith("src/main.cpp")
    (root / "mcpp.toml").write_text('[package]\nname = "p"\nversion = "0.1.0"\n')
    mcpp("build", cwd=root, check=True)
    assert not os.path.lexists(link)
