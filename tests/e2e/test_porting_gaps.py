"""What a CMake project ported as it is runs into: an include directory above the build, a C
program's `src/main.c`, a test-only dev-dependency under `mcpp build`, an inline table wrapped
over two lines, a broken manifest of an unrelated project above the package, and module imports
across packages of two standards (and the standard `mcpp new` writes)."""
from __future__ import annotations

import pytest


def test_an_include_directory_above_the_build_is_refused_at_its_entry(mcpp, project, tmp_path):
    (tmp_path / "shared.h").write_text("#define SHARED 1\n")
    root = project({
        "mcpp.toml": """
            [package]
            name = "up"
            version = "0.1.0"

            [build]
            include_dirs = ["../.."]
        """,
        "src/main.c": '#include "shared.h"\nint main(void) { return SHARED - 1; }\n',
    }, name="deep/up")
    for sandbox in ("off", "bwrap"):
        res = mcpp("build", "--sandbox", sandbox, cwd=root)
        assert res.code == 2, res.err
        assert "mcpp.toml:6:17: error: include directory `../..`" in res.diagnostics, res.err
        assert "outside the build's root" in res.diagnostics and "No such file" not in res.err


def test_src_main_c_is_the_default_binary(mcpp, project):
    root = project({
        "mcpp.toml": """
            [package]
            name = "cprog"
            version = "0.1.0"
        """,
        "src/main.c": '#include <stdio.h>\nint main(void) { puts("from c"); return 0; }\n',
    })
    res = mcpp("run", cwd=root)
    assert res.code == 0, res.err
    assert res.out.strip() == "from c"


def test_build_does_not_compile_a_dev_dependency_only_tests_use(mcpp, project):
    root = project({
        "framework/mcpp.toml": """
            [package]
            name = "framework"
            version = "0.1.0"
        """,
        "framework/src/framework.c": "int framework_check(int x) { return x == 3; }\n",
        "app/mcpp.toml": """
            [package]
            name = "app"
            version = "0.1.0"

            [dev-dependencies]
            framework = { path = "../framework" }

            [targets.app]
            main = "src/main.c"

            [targets.check]
            kind = "test"
            main = "check/check.c"
            deps = ["framework"]
        """,
        "app/src/main.c": "int main(void) { return 0; }\n",
        "app/check/check.c": "int framework_check(int);\nint main(void) { return !framework_check(3); }\n",
    })
    app = root / "app"
    res = mcpp("build", "--message-format", "json", cwd=app)
    assert res.code == 0, res.err
    assert not [i for i in res.executed() if "framework" in i], res.executed()
    test = mcpp("test", cwd=app)
    assert test.code == 0, test.err
    assert "check" in test.out + test.err


def test_a_wrapped_inline_table_is_positioned_with_a_note(mcpp, project):
    root = project({
        "mcpp.toml": """
            [package]
            name = "wrapped"
            version = "0.1.0"

            [dependencies]
            greet = { path = "../greet",
                      features = ["loud"] }
        """,
        "src/main.c": "int main(void) { return 0; }\n",
    })
    res = mcpp("build", cwd=root)
    assert res.code == 2, res.err
    assert "mcpp.toml:6:" in res.diagnostics and "malformed TOML" in res.diagnostics, res.err
    assert "mcpp.toml:6:9: note: this inline table" in res.diagnostics, res.err
    assert "Traceback" not in res.err


def test_a_broken_unrelated_parent_manifest_does_not_stop_a_nested_package(mcpp, project):
    root = project({
        "mcpp.toml": "this is [not toml\n",
        "vendor/zlib/mcpp.toml": """
            [package]
            name = "zed"
            version = "0.1.0"
        """,
        "vendor/zlib/src/main.c": '#include <stdio.h>\nint main(void) { puts("nested"); return 0; }\n',
    })
    res = mcpp("run", cwd=root / "vendor" / "zlib")
    assert res.code == 0, res.err
    assert res.out.strip() == "nested"


def test_a_broken_parent_workspace_that_lists_the_package_still_stops_it(mcpp, project):
    root = project({
        "mcpp.toml": '[workspace]\nmembers = ["member"\n',
        "member/mcpp.toml": """
            [package]
            name = "member"
            version = "0.1.0"
        """,
        "member/src/main.c": "int main(void) { return 0; }\n",
    })
    res = mcpp("build", cwd=root / "member")
    assert res.code == 2 and "malformed TOML" in res.diagnostics, res.err


MODULE_LIB = {
    "src/greet.cppm": """
        export module greet;
        export int greet_answer() { return 42; }
    """,
}


@pytest.mark.parametrize("std", ["c++20", "c++23"])
def test_modules_across_two_standards_are_refused_naming_both(mcpp, project, std):
    other = "c++20" if std == "c++23" else "c++23"
    root = project({
        "greet/mcpp.toml": f"""
            [package]
            name = "greet"
            version = "0.1.0"
            standard = "{other}"
        """,
        **{f"greet/{k}": v for k, v in MODULE_LIB.items()},
        "app/mcpp.toml": f"""
            [package]
            name = "app"
            version = "0.1.0"
            standard = "{std}"

            [dependencies]
            greet = {{ path = "../greet" }}
        """,
        "app/src/main.cpp": "import greet;\nint main() { return greet_answer() == 42 ? 0 : 1; }\n",
    })
    res = mcpp("build", cwd=root / "app")
    assert res.code == 2, res.err
    d = res.diagnostics
    assert f"`app` ({std}) imports module `greet` of `greet` ({other})" in d, d
    assert d.startswith("src/main.cpp:1: error:"), d
    assert f'mcpp.toml:4:12: note: `app` has standard = "{std}"' in d, d
    assert f'greet/mcpp.toml:4:12: note: `greet` has standard = "{other}"' in d, d


def test_new_writes_the_default_standard_and_its_modules_build(mcpp, tmp_path):
    assert mcpp("new", "greet", "--lib", cwd=tmp_path).code == 0
    assert 'standard = "c++23"' in (tmp_path / "greet" / "mcpp.toml").read_text()
    assert mcpp("new", "hello", cwd=tmp_path).code == 0
    hello = tmp_path / "hello"
    assert 'standard = "c++23"' in (hello / "mcpp.toml").read_text()
    with open(hello / "mcpp.toml", "a") as f:
        f.write('\n[dependencies]\ngreet = { path = "../greet" }\n')
    (hello / "src" / "main.cpp").write_text("import greet;\nint main() { return greet::add(2, 3) == 5 ? 0 : 1; }\n")
    res = mcpp("run", cwd=hello)
    assert res.code == 0, res.err
