"""Per-source flags in the manifest (docs/manifest.md, `[build.sources[]]`): a source entry's
`cflags`, `cxxflags` and `defines` reach the compiles of the sources its glob selects and no
other, enter their keys and are in compile_commands.json."""
from __future__ import annotations

import json
import shutil

import pytest

from tests.e2e.e2e_support import Mcpp, write_tree

pytestmark = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("gcc") is None, reason="needs gcc")

FILES = {
    "mcpp.toml": """
        [package]
        name = "sf"
        version = "0.1.0"

        [build]
        defines = ["ALL=1"]

        [[build.sources]]
        glob = "src/*.{cpp,c}"

        [[build.sources]]
        glob = "src/special.cpp"
        cxxflags = ["-DFROM_CXXFLAGS=7"]
        defines = ["SPECIAL=1"]

        [[build.sources]]
        glob = "src/*.c"
        cflags = ["-DFROM_CFLAGS=3"]
        cxxflags = ["-DNOT_FOR_C=1"]
    """,
    "src/main.cpp": """
        #include <cstdio>
        #if defined(SPECIAL) || defined(FROM_CXXFLAGS) || defined(FROM_CFLAGS)
        #error main.cpp must see none of the source entries' flags
        #endif
        int special();
        extern "C" int plain_c();
        int main() { std::printf("special=%d c=%d all=%d\\n", special(), plain_c(), ALL); }
    """,
    "src/special.cpp": "int special() { return SPECIAL * 10 + FROM_CXXFLAGS; }\n",
    "src/plain.c": """
        #ifdef NOT_FOR_C
        #error cxxflags must not reach a C compile
        #endif
        int plain_c(void) { return FROM_CFLAGS; }
    """,
}


def test_a_source_entrys_flags_reach_only_its_sources(mcpp: Mcpp, tmp_path):
    root = write_tree(tmp_path / "sf", FILES)
    first = mcpp.build_json("run", cwd=root)
    assert first.code == 0, first.err
    assert "special=17 c=3 all=1" in first.out

    commands = {e["file"].rsplit("/", 1)[1]: e["arguments"]
                for e in json.loads((root / "target/compile_commands.json").read_text())}
    assert "-DSPECIAL=1" in commands["special.cpp"] and "-DFROM_CXXFLAGS=7" in commands["special.cpp"]
    assert not any("SPECIAL" in a or "FROM_" in a for a in commands["main.cpp"])
    assert "-DFROM_CFLAGS=3" in commands["plain.c"] and "-DNOT_FOR_C=1" not in commands["plain.c"]

    # keyed: a change to the entry's flags recompiles its sources alone
    (root / "mcpp.toml").write_text((root / "mcpp.toml").read_text().replace("SPECIAL=1", "SPECIAL=2"))
    again = mcpp.build_json("run", cwd=root)
    assert again.code == 0, again.err
    assert "special=27 c=3 all=1" in again.out
    assert again.executed("compile") == ["compile sf:src/special.cpp"]
