"""Example 14: a rule set that declares libraries, binaries and tests (examples/14-rule-set).

`rules-idl` builds its schema compiler from source; `gen_library` compiles a tree output whose
file names only the schema decides (`mcpp.compile` of `dir/`, `mcpp.library`), `gen_test`
declares one test per data file, and `shapes` hands its library to `app` as an `IdlInfo`
record of the rule's provider. The tests drive `mcpp` on a copy of the example.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.e2e.e2e_support import Mcpp, copy_example

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

OUTPUT = ['Scene{title="demo", frame=Rect{corner=Point{x=3, y=4}, width=5, height=2}, scale=1.5}',
          "linked with: shapes"]


@pytest.fixture
def example(tmp_path) -> Path:
    return copy_example("14-rule-set", tmp_path)


def test_run_links_the_generated_libraries_a_second_build_runs_nothing_and_install_takes_them(example: Path, mcpp: Mcpp):
    res = mcpp("run", cwd=example / "app")
    assert res.code == 0, res.err
    assert res.out.splitlines()[-2:] == OUTPUT
    assert "Building host tool idlc:idlc from idlc v0.1.0" in res.err
    assert res.err.count("Compiling app v0.1.0") == 1  # once, though the build planned twice
    again = mcpp.build_json("build", cwd=example / "app")
    assert again.executed() == []
    meta = json.loads(mcpp("metadata", "--format", "json", cwd=example / "app", check=True).out)
    rule = {(p["name"], t["kind"], t["name"], t.get("testonly", False)) for p in meta["packages"]
            for t in p["targets"] if t.get("rule")}
    assert rule == {("shapes", "lib", "shapes", False), ("app", "lib", "scene", False),
                    ("app", "bin", "scene-check", True), ("app", "test", "scene-intro", False),
                    ("app", "test", "scene-outro", False)}
    prefix = example / "prefix"
    inst = mcpp("install", "--profile", "dev", "--prefix", str(prefix), cwd=example / "app")
    assert inst.code == 0, inst.err
    assert (prefix / "bin/app").is_file() and (prefix / "lib/libscene.a").is_file()
    assert not (prefix / "bin/scene-check").exists()  # testonly: built for `mcpp test` alone


def test_one_test_per_data_file_and_a_bad_file_fails_its_own(example: Path, mcpp: Mcpp):
    app = example / "app"
    ok = mcpp("test", cwd=app)
    assert ok.code == 0, ok.err
    assert "scene-intro ... ok" in ok.out and "scene-outro ... ok" in ok.out
    assert "2 passed; 0 failed" in ok.out
    (app / "data" / "bad.txt").write_text("Scene title=x size=3\n")
    bad = mcpp("test", cwd=app)
    assert bad.code == 1
    assert "scene-bad ... FAIL" in bad.out and "bad.txt:1: Scene has no field size" in bad.out
    assert "2 passed; 1 failed" in bad.out
    assert not (example / "target/dev/scene-check").exists()  # testonly: among the tests, not a bin


def test_the_tree_is_listed_again_when_the_schema_changes(example: Path, mcpp: Mcpp):
    app = example / "app"
    assert mcpp("build", cwd=app).code == 0
    schema = example / "shapes/schemas/shapes.idl"
    schema.write_text(schema.read_text() + "\nstruct Circle {\n  Point center\n  int radius\n}\n")
    grown = mcpp.build_json("build", cwd=app)
    compiles = grown.executed("compile")
    assert "compile shapes@compile-1:gen/shapes/Circle.cpp" in compiles, compiles
    assert "compile shapes@compile-1:gen/shapes/Point.cpp" in compiles  # the tree's digest changed
    # a new struct's header reaches the dependent's compiles too: the app includes it
    main = app / "src/main.cpp"
    main.write_text('#include "Circle.h"\n' + main.read_text().replace(
        'std::cout << s', 'Circle c; c.radius = 2; std::cout << c << "\\n" << s'))
    res = mcpp("run", cwd=app)
    assert res.code == 0, res.err
    assert "Circle{center=Point{x=0, y=0}, radius=2}" in res.out
    schema.write_text(schema.read_text().split("\nstruct Circle")[0] + "\n")
    gone = mcpp("build", cwd=app)
    assert gone.code != 0
    assert "Circle.h" in gone.err  # the header went with the struct
