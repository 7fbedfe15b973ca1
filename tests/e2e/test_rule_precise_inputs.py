"""A compile depends on the generated headers it reads, not on every generated file of its
package (docs/rules.md, "Generated headers"): it runs after the actions writing headers into
its include directories, and only the generated headers its depfile names enter its key."""
from __future__ import annotations

import shutil

import pytest

from mcpp.sandbox import probe_bwrap
from tests.e2e.e2e_support import Mcpp, write_tree

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

FILES = {
    "mcpp.toml": """
        [package]
        name = "gens"
        version = "0.1.0"
    """,
    "build.star": """
        out = mcpp.out_dir() + "/inc"
        for name in ["alpha", "beta"]:
            mcpp.action(id = name, argv = ["/bin/cp", "data/%s.txt" % name, out + "/%s.h" % name],
                        inputs = ["data/%s.txt" % name], outputs = [out + "/%s.h" % name],
                        tools = ["/bin/cp"], role = "check")
        mcpp.include_dir(out)
    """,
    "data/alpha.txt": "#define ALPHA 1\n",
    "data/beta.txt": "#define BETA 2\n",
    "src/a.cpp": '#include "alpha.h"\nint a() { return ALPHA; }\n',
    "src/b.cpp": '#include "beta.h"\nint b() { return BETA; }\n',
    "src/ab.cpp": '#include "alpha.h"\n#include "beta.h"\nint ab() { return ALPHA * 10 + BETA; }\n',
    "src/main.cpp": """
        #include <cstdio>
        int a(); int b(); int ab();
        int main() { std::printf("%d %d %d\\n", a(), b(), ab()); }
    """,
}


@pytest.mark.parametrize("sandbox", ["bwrap", "dir", "off"])
def test_editing_one_generated_header_recompiles_only_its_readers(mcpp: Mcpp, tmp_path, sandbox):
    if sandbox == "bwrap" and (why := probe_bwrap()) is not None:
        pytest.skip(f"bwrap does not work here: {why}")
    root = write_tree(tmp_path / "gens", FILES)
    first = mcpp.build_json("run", "--sandbox", sandbox, cwd=root)
    assert first.code == 0, first.err
    assert "1 2 12" in first.out
    assert sorted(first.executed("compile")) == [f"compile gens:src/{u}.cpp" for u in ("a", "ab", "b", "main")]

    (root / "data/alpha.txt").write_text("#define ALPHA 3\n")
    again = mcpp.build_json("run", "--sandbox", sandbox, cwd=root)
    assert again.code == 0, again.err
    assert "3 2 32" in again.out
    assert sorted(again.executed("compile")) == ["compile gens:src/a.cpp", "compile gens:src/ab.cpp"]
    assert again.executed("rule") == ["rule gens:alpha"]

    (root / "data/beta.txt").write_text("#define BETA 4\n")
    third = mcpp.build_json("run", "--sandbox", sandbox, cwd=root)
    assert third.code == 0, third.err
    assert "3 4 34" in third.out
    assert sorted(third.executed("compile")) == ["compile gens:src/ab.cpp", "compile gens:src/b.cpp"]
