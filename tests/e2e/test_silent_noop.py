"""A package whose build program generates a header into a directory it adds to the include
path, with `include_dirs = ["."]` (zlib's generated zconf.h), builds everything it plans; and a
build that planned actions but ran none of them, or left an artifact unmade, is never reported
as success."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.e2e.zlike_project import FILES as ZLIKE

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


def finished(res) -> dict:
    return next(e for e in res.events if e.get("reason") == "build-finished")


def planned(res) -> int:
    return next(e for e in res.events if e.get("reason") == "build-started")["actions"]


@pytest.mark.parametrize("sandbox", ["bwrap", "dir", "off"])
def test_a_generated_header_in_an_include_dir_builds_every_planned_action(project, mcpp, sandbox):
    root = project(ZLIKE)
    res = mcpp.build_json("build", "--sandbox", sandbox, cwd=root)
    done = finished(res)
    assert done["executed"] + done["cached"] == planned(res) > 3
    out = root / "target" / "dev"
    for artifact in ("libzlike.a", "libzlike.so.1.3.1", "example", "minigzip"):
        assert (out / artifact).is_file(), artifact
    assert subprocess.run([out / "example"], capture_output=True, text=True).stdout.split()[-1] == "131"
    # the header changes: every compile that includes it runs again, and the result shows it
    (root / "zconf.h.in").write_text("#define ZLIKE_CONFIG 132\n")
    res = mcpp.build_json("build", "--sandbox", sandbox, cwd=root)
    assert "compile zlike:config.c" in res.executed() and "rule zlike:zconf" in res.executed()
    assert subprocess.run([out / "example"], capture_output=True, text=True).stdout.split()[-1] == "132"


def test_the_artifacts_come_back_when_removed(project, mcpp):
    root = project(ZLIKE)
    mcpp("build", cwd=root, check=True)
    out = root / "target" / "dev"
    (out / "libzlike.a").unlink()
    (out / "example").unlink()
    mcpp("build", cwd=root, check=True)
    assert (out / "libzlike.a").is_file() and (out / "example").is_file()


def test_sources_outside_the_globs_are_named_though_the_build_program_has_actions(project, mcpp):
    """zlib's shape without `[build] sources`: its C files sit at the root, outside the default
    `src/**` globs. The build program's header action used to be the package's only action, so
    the build finished with nothing compiled and no word about it."""
    manifest = '[package]\nname = "zlike"\nversion = "1.3.1"\n[build]\ninclude_dirs = ["."]\n'
    root = project({**{k: v for k, v in ZLIKE.items() if not k.startswith("test/")}, "mcpp.toml": manifest})
    res = mcpp("build", cwd=root)
    assert res.code == 0, res.err
    assert ("mcpp.toml:1:2: warning: package `zlike` has no sources (nothing matches `src/**/*.c`, `src/**/*.cpp`, "
            "`src/**/*.cc`, ...), so it builds nothing; its C/C++ files (`adler.c`, `config.c`, `zutil.c`) are not "
            "compiled: name them in [build] sources") in res.err
    # a package of build-program actions alone, with no C/C++ files, builds nothing on purpose: no warning
    for name in ("adler.c", "config.c", "zutil.c"):
        (root / name).unlink()
    res = mcpp("build", cwd=root)
    assert res.code == 0 and "warning" not in res.err, res.err


RULE_PACKAGE = {
    "app/mcpp.toml": ('[package]\nname = "app"\nversion = "0.1.0"\n[dependencies]\n'
                      'demo.rules-x = { path = "../rules-x", features = ["x"] }\n'),
    "app/src/main.cpp": "int main() { return 0; }\n",
    "rules-x/mcpp.toml": ('[package]\nname = "rules-x"\nversion = "0.1.0"\nnamespace = "demo"\n'
                          '[features.x]\nsources = ["src/x.star"]\nrule_module = "demo.rules.x"\n'),
    "rules-x/src/x.star": "def nothing():\n    pass\n",
}


def test_a_rule_package_holds_starlark_and_does_not_warn_unless_cpp_lies_in_it(project, mcpp):
    root = project(RULE_PACKAGE, name="quiet")
    res = mcpp("build", cwd=root / "app")
    assert res.code == 0, res.err
    assert "warning" not in res.err, res.err
    root = project({**RULE_PACKAGE, "rules-x/helper.cpp": "int helper() { return 1; }\n"}, name="stray")
    res = mcpp("build", cwd=root / "app")
    assert res.code == 0, res.err
    assert "warning: package `rules-x` has no sources" in res.err and "`helper.cpp`" in res.err, res.err
