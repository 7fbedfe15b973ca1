"""A build program's actions are keyed by what their tools are, not where they lie
(docs/rules.md, "What an action's key holds"): a host tool rebuilt into another store path with
the same bytes re-runs nothing, and another compiler re-runs only the actions that declare it."""
from __future__ import annotations

import shutil

import pytest

from tests.e2e.e2e_support import Mcpp, write_tree

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

TOOL = {
    "upper/mcpp.toml": """
        [package]
        name = "upper"
        version = "0.1.0"
        [targets.upper]
        kind = "bin"
        main = "src/main.cpp"
    """,
    "upper/README.md": "A tool that upper-cases a file.\n",
    "upper/src/main.cpp": """
        #include <cctype>
        #include <fstream>
        #include <iterator>
        #include <string>
        int main(int argc, char** argv) {
            if (argc != 3) return 2;
            std::ifstream in(argv[1]);
            std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            for (char& c : s) c = (char)std::toupper((unsigned char)c);
            std::ofstream(argv[2]) << s;
        }
    """,
    "app/mcpp.toml": """
        [package]
        name = "app"
        version = "0.1.0"
        [dependencies]
        upper = { path = "../upper", tools = ["upper"] }
    """,
    "app/data/word.txt": "hello\n",
    "app/build.star": """
        out = mcpp.out_dir()
        up = mcpp.dep_bin("upper", "upper")
        mcpp.action(id = "upper", argv = [up, "data/word.txt", out + "/word.txt"], inputs = ["data/word.txt"],
                    outputs = [out + "/word.txt"], tools = [up], role = "check")
        """ + """
        out = mcpp.out_dir()
        mcpp.action(id = "copy", argv = ["/bin/cp", "data/word.txt", out + "/copy.txt"], inputs = ["data/word.txt"],
                    outputs = [out + "/copy.txt"], tools = ["/bin/cp"], role = "check")
        mcpp.action(id = "python", argv = ["/usr/bin/python3", "-c",
                    "import sys; open(sys.argv[2], 'w').write(open(sys.argv[1]).read()[::-1])",
                    "data/word.txt", out + "/rev.txt"], inputs = ["data/word.txt"],
                    outputs = [out + "/rev.txt"], tools = ["/usr/bin/python3"], role = "check")
        tc = mcpp.toolchain()
        mcpp.action(id = "probe-cc", argv = [tc.cxx, "-dM", "-E", "-x", "c++", "/dev/null", "-o", out + "/macros.txt"],
                    inputs = [], outputs = [out + "/macros.txt"], tools = [tc.cxx], role = "check")
    """,
    "app/src/main.cpp": "int main() { return 0; }\n",
}


def rules(res) -> list[str]:
    return sorted(res.executed("rule"))


def test_a_tool_rebuilt_at_another_path_with_the_same_bytes_reruns_nothing(mcpp: Mcpp, tmp_path):
    root = write_tree(tmp_path / "ws", TOOL)
    app = root / "app"
    first = mcpp.build_json("build", cwd=app)
    assert first.code == 0, first.err
    assert rules(first) == ["rule app:copy", "rule app:probe-cc", "rule app:python", "rule app:upper"]
    assert (app / "target/dev/.mcpp/gen/app/word.txt").read_text() == "HELLO\n"

    (root / "upper/README.md").write_text("A tool that upper-cases a file, documented again.\n")
    again = mcpp.build_json("build", cwd=app)
    assert again.code == 0, again.err
    assert "Building host tool upper:upper" in again.err  # a new store entry, at a new path
    assert again.executed() == []

    (root / "upper/src/main.cpp").write_text(TOOL["upper/src/main.cpp"].replace("std::toupper", "std::tolower"))
    changed = mcpp.build_json("build", cwd=app)
    assert changed.code == 0, changed.err
    assert rules(changed) == ["rule app:upper"]  # other bytes: the action that runs the tool, alone
    assert (app / "target/dev/.mcpp/gen/app/word.txt").read_text() == "hello\n"


@pytest.mark.skipif(shutil.which("clang++") is None and not shutil.which("clang++-19"), reason="needs clang")
def test_switching_compilers_reruns_only_the_actions_that_declare_the_compiler(mcpp: Mcpp, tmp_path):
    files = {k: v for k, v in TOOL.items() if k.startswith("app/")}
    files["app/mcpp.toml"] = files["app/mcpp.toml"].split("[dependencies]")[0]
    files["app/build.star"] = TOOL["app/build.star"].split('"check")\n', 1)[1]  # without the host tool
    app = write_tree(tmp_path / "solo", files) / "app"
    gcc = mcpp.build_json("build", cwd=app)
    assert gcc.code == 0, gcc.err
    assert rules(gcc) == ["rule app:copy", "rule app:probe-cc", "rule app:python"]

    clang = mcpp.build_json("build", "--toolchain", "clang", cwd=app)
    assert clang.code == 0, clang.err
    assert rules(clang) == ["rule app:probe-cc"]
    assert "__clang__" in (app / "target/dev/.mcpp/gen/app/macros.txt").read_text()
