"""`mcpp metadata` lists what a build makes beyond the declared targets: the library a package
without a `lib` target archives (a package without targets, or any dependency) and the test
binaries `mcpp test` links from `tests/`; in text (`# builds ...` lines) and in JSON."""
from __future__ import annotations

import json
import os

PROJECT = {
    "app/mcpp.toml": """
        [package]
        name = "app"
        version = "0.1.0"

        [dependencies]
        util = { path = "../util" }
    """,
    "app/src/main.cpp": '#include "util.h"\nint main() { return twice(0); }\n',
    "app/src/helper.cpp": "int helper() { return 1; }\n",
    "app/tests/unit/smoke.cpp": "int main() { return 0; }\n",
    "app/tests/end.c": "int main(void) { return 0; }\n",
    "util/mcpp.toml": '[package]\nname = "util"\nversion = "0.1.0"\n',
    "util/include/util.h": "int twice(int);\n",
    "util/src/util.cpp": "int twice(int x) { return 2 * x; }\n",
    "util/tests/t.cpp": "int main() { return 0; }\n",
}


def _targets(meta: dict, package: str) -> list[dict]:
    return next(p for p in meta["packages"] if p["name"] == package)["targets"]


def test_json_lists_the_implicit_library_and_the_test_binaries_where_the_build_puts_them(project, mcpp):
    root = project(PROJECT)
    app = root / "app"
    meta = json.loads(mcpp("metadata", "--format", "json", cwd=app, check=True).out)
    out = str(app / "target" / "dev")
    assert _targets(meta, "util") == [
        {"kind": "lib", "name": "util", "main": None, "output": f"{out}/.mcpp/deps/libutil.a", "implicit": True}]
    assert _targets(meta, "app") == [
        {"kind": "bin", "name": "app", "main": "src/main.cpp", "output": f"{out}/app", "implicit": False},
        {"kind": "test", "name": "end", "main": "tests/end.c", "output": f"{out}/.mcpp/tests/app/end",
         "implicit": True},
        {"kind": "test", "name": "unit/smoke", "main": "tests/unit/smoke.cpp",
         "output": f"{out}/.mcpp/tests/app/unit/smoke", "implicit": True}]
    # What metadata names is what the build makes.
    assert mcpp("test", cwd=app).code == 0
    for package in ("app", "util"):
        for t in _targets(meta, package):
            assert os.path.isfile(t["output"]), t


def test_text_lists_them_after_each_package(project, mcpp):
    root = project(PROJECT)
    text = mcpp("metadata", cwd=root / "app", check=True).out
    builds = [line for line in text.splitlines() if line.startswith("# builds ")]
    assert builds == [
        "# builds lib util (implicit): target/dev/.mcpp/deps/libutil.a",
        "# builds bin app: target/dev/app",
        "# builds test end (implicit): target/dev/.mcpp/tests/app/end",
        "# builds test unit/smoke (implicit): target/dev/.mcpp/tests/app/unit/smoke",
    ]


def test_a_package_without_targets_is_its_library(project, mcpp):
    root = project({k[len("util/"):]: v for k, v in PROJECT.items() if k.startswith("util/")})
    meta = json.loads(mcpp("metadata", "--format", "json", cwd=root, check=True).out)
    assert [(t["kind"], t["name"], t["implicit"]) for t in _targets(meta, "util")] == [
        ("lib", "util", True), ("test", "t", True)]
    assert _targets(meta, "util")[0]["output"] == str(root / "target" / "dev" / "libutil.a")
