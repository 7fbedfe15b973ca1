"""`mcpp install` for a CMake user: the generated header wins over a shipped one of the same
name, `install = false` keeps a binary out, the `.pc` file is named after the library and carries
`description` and the package's defines, and `lib/cmake/<name>/` lets a CMake project's
`find_package(<name>)` link the installed library (CMake from its pip wheel, else the system's);
a module library ships its interfaces there."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.zlike_project import ADLER_ABC, FILES, MANIFEST


def cmake() -> str | None:
    beside = Path(sys.executable).parent / "cmake"
    return str(beside) if beside.exists() else shutil.which("cmake")


def test_generated_header_install_false_and_the_pc_file(project, mcpp, tmp_path):
    manifest = MANIFEST.replace('version = "1.3.1"\n', 'version = "1.3.1"\n    include = ["zlike.h", "zconf.h"]\n'
                                '    description = "a zlib-shaped library"\n', 1)
    manifest = manifest.replace('cflags = ["-std=c11"]', 'cflags = ["-std=c11"]\n    defines = ["ZLIKE_CONST=const"]')
    manifest = manifest.replace('main = "test/example.c"', 'main = "test/example.c"\n    install = false')
    root = project({**FILES, "mcpp.toml": manifest, "zconf.h": "#define ZLIKE_CONFIG 1 /* shipped */\n"})
    prefix = tmp_path / "prefix"
    res = mcpp("install", "--prefix", str(prefix), cwd=root)
    assert res.code == 0, res.out + res.err
    assert (prefix / "include" / "zconf.h").read_text() == "#define ZLIKE_CONFIG 131\n"  # the generated one
    assert (prefix / "bin" / "minigzip").is_file()
    assert not (prefix / "bin" / "example").exists()
    pc = (prefix / "lib" / "pkgconfig" / "zlike.pc").read_text()
    assert "Description: a zlib-shaped library\n" in pc
    assert "Cflags: -I${includedir} -DZLIKE_CONST=const\n" in pc


def test_the_pc_file_is_named_after_the_library(project, mcpp, tmp_path):
    root = project({
        "mcpp.toml": """
            [package]
            name = "zlib"
            version = "1.3.1"

            [targets.z-shared]
            kind = "shared"
            soname = "libz.so.1"
            version = "1.3.1"
        """,
        "include/zz.h": "int zz(void);\n",
        "src/zz.c": "int zz(void) { return 7; }\n",
    })
    prefix = tmp_path / "prefix"
    res = mcpp("install", "--prefix", str(prefix), cwd=root)
    assert res.code == 0, res.out + res.err
    assert sorted(os.listdir(prefix / "lib" / "pkgconfig")) == ["z.pc"]
    assert "Libs: -L${libdir} -lz\n" in (prefix / "lib" / "pkgconfig" / "z.pc").read_text()


@pytest.mark.skipif(cmake() is None, reason="needs cmake")
def test_find_package_links_the_installed_library(project, mcpp, tmp_path):
    root = project(FILES)
    prefix = tmp_path / "prefix"
    res = mcpp("install", "--prefix", str(prefix), cwd=root)
    assert res.code == 0, res.out + res.err
    config = prefix / "lib" / "cmake" / "zlike"
    assert (config / "zlike-config.cmake").is_file() and (config / "zlike-config-version.cmake").is_file()
    consumer = tmp_path / "consumer"
    consumer.mkdir()
    (consumer / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(consumer C)\n"
        "find_package(zlike 1.3 REQUIRED)\n"
        "add_executable(consumer main.c)\ntarget_link_libraries(consumer PRIVATE zlike::zlike)\n")
    (consumer / "main.c").write_text('#include <stdio.h>\n#include <zlike.h>\n'
                                     'int main(void) { printf("%u %d\\n", zl_adler("abc"), zl_config()); }\n')
    build = tmp_path / "cbuild"
    moved = tmp_path / "moved"
    shutil.move(str(prefix), str(moved))  # the config names paths relative to itself: the prefix can move
    for argv in ([cmake(), "-S", str(consumer), "-B", str(build), f"-DCMAKE_PREFIX_PATH={moved}"],
                 [cmake(), "--build", str(build)]):
        p = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
    run = subprocess.run([str(build / "consumer")], capture_output=True, text=True)
    assert run.stdout == f"{ADLER_ABC} 131\n", run.stderr
    # a newer major version than the installed one is not found
    (consumer / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.16)\nproject(consumer C)\n"
                                             "find_package(zlike 2 REQUIRED)\n")
    p = subprocess.run([cmake(), "-S", str(consumer), "-B", str(tmp_path / "b2"), f"-DCMAKE_PREFIX_PATH={moved}"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode != 0 and "1.3.1" in p.stderr, p.stderr


def cmake_version() -> tuple[int, ...]:
    out = subprocess.run([cmake(), "--version"], capture_output=True, text=True).stdout.split()
    return tuple(int(x) for x in out[2].split(".")[:2]) if len(out) > 2 else (0,)


def test_a_module_library_ships_its_interfaces(project, mcpp, tmp_path):
    root = project({
        "mcpp.toml": '[package]\nname = "greet"\nversion = "0.2.0"\n',
        "src/greet.cppm": "export module greet;\nexport int greet_answer() { return 42; }\n",
    })
    prefix = tmp_path / "prefix"
    res = mcpp("install", "--prefix", str(prefix), cwd=root)
    assert res.code == 0, res.out + res.err
    base = prefix / "lib" / "cmake" / "greet"
    assert (base / "modules" / "greet.cppm").read_text() == (root / "src" / "greet.cppm").read_text()
    config = (base / "greet-config.cmake").read_text()
    assert 'set(greet_MODULE_INTERFACES "${_mcpp_prefix}/lib/cmake/greet/modules/greet.cppm")' in config
    assert "add_library(greet::greet STATIC IMPORTED)" in config


@pytest.mark.skipif(cmake() is None or cmake_version() < (3, 28) or not shutil.which("ninja")
                    or not shutil.which("clang++-19"),
                    reason="CMake 3.28+ builds imported modules with a scanning compiler (clang-19; gcc 14+) and Ninja")
def test_find_package_imports_the_modules_of_an_installed_module_library(project, mcpp, tmp_path):
    """CMake builds the installed interface for the consumer's compiler and standard (here
    clang-19, which gcc 12's CMake support lacks) and links mcpp's archive."""
    root = project({
        "mcpp.toml": '[package]\nname = "greet"\nversion = "0.2.0"\n',
        "src/greet.cppm": "export module greet;\nexport int greet_answer() { return 42; }\n",
    })
    prefix = tmp_path / "prefix"
    assert mcpp("install", "--prefix", str(prefix), cwd=root).code == 0
    consumer = tmp_path / "consumer"
    consumer.mkdir()
    (consumer / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.28)\nproject(consumer CXX)\nset(CMAKE_CXX_STANDARD 23)\n"
        "find_package(greet 0.2 REQUIRED)\nadd_executable(consumer main.cpp)\n"
        "target_link_libraries(consumer PRIVATE greet::greet)\n")
    (consumer / "main.cpp").write_text('import greet;\n#include <cstdio>\nint main() { std::printf("%d\\n", '
                                       'greet_answer()); }\n')
    build = tmp_path / "cbuild"
    for argv in ([cmake(), "-S", str(consumer), "-B", str(build), "-G", "Ninja", "-DCMAKE_CXX_COMPILER=clang++-19",
                  f"-DCMAKE_PREFIX_PATH={prefix}"], [cmake(), "--build", str(build)]):
        p = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
    assert subprocess.run([str(build / "consumer")], capture_output=True, text=True).stdout == "42\n"
