"""Bad manifests: a positioned `path:line:col: error:` message, exit code 2, no traceback."""
from __future__ import annotations

import pytest

MAIN = {"src/main.cpp": "int main() { return 0; }\n"}


def check_error(mcpp, root, expected: str, cwd=None):
    res = mcpp("build", cwd=cwd or root)
    assert res.code == 2, (res.out, res.err)
    assert "Traceback" not in res.err
    assert expected in res.err, res.err
    assert not (root / "target").exists() or not any((root / "target").glob("*/obj"))
    return res


def test_malformed_toml_reports_the_parser_position(project, mcpp):
    root = project({"mcpp.toml": '[package]\nname = "x"\nversion = 0.1.0\n', **MAIN})
    check_error(mcpp, root, "mcpp.toml:3:")
    check_error(mcpp, root, "error: malformed TOML")


def test_missing_package_name(project, mcpp):
    root = project({"mcpp.toml": '[package]\nversion = "0.1.0"\n', **MAIN})
    check_error(mcpp, root, "mcpp.toml:1:2: error: missing `package.name`")


def test_missing_package_version(project, mcpp):
    root = project({"mcpp.toml": '# the app\n[package]\nname = "x"\n', **MAIN})
    check_error(mcpp, root, "mcpp.toml:2:2: error: missing `package.version`")


def test_value_of_the_wrong_type_points_at_the_value(project, mcpp):
    root = project({"mcpp.toml": '[package]\nname = "x"\nversion = "0.1.0"\n[build]\ncxxflags = "-Wall"\n', **MAIN})
    check_error(mcpp, root, "mcpp.toml:5:12: error: `build.cxxflags` must be an array, found a string")


def test_wrong_type_inside_an_array(project, mcpp):
    root = project({"mcpp.toml": '[package]\nname = "x"\nversion = "0.1.0"\n[build]\ndefines = ["A", 3]\n', **MAIN})
    check_error(mcpp, root, "mcpp.toml:5:17: error: `build.defines.1` must be a string, found an integer")


def test_invalid_kind_lists_accepted_values(project, mcpp):
    root = project({"mcpp.toml": '[package]\nname = "x"\nversion = "0.1.0"\n\n[targets.x]\nkind = "exe"\n', **MAIN})
    check_error(mcpp, root, "mcpp.toml:6:8: error: invalid kind `exe` for target `x`; accepted values: bin, lib, shared")


def test_path_dependency_that_does_not_exist(project, mcpp):
    root = project({"mcpp.toml": '[package]\nname = "x"\nversion = "0.1.0"\n[dependencies]\nfoo = { path = "../nowhere" }\n', **MAIN})
    check_error(mcpp, root, "mcpp.toml:5:16: error: path dependency `foo`: `../nowhere` does not exist")


def test_dependency_whose_name_differs_from_its_key(project, mcpp):
    root = project({
        "app/mcpp.toml": '[package]\nname = "app"\nversion = "0.1.0"\n[dependencies]\nfoo = { path = "../bar" }\n',
        "app/src/main.cpp": "int main() {}\n",
        "bar/mcpp.toml": '[package]\nname = "bar"\nversion = "0.1.0"\n',
    })
    res = check_error(mcpp, root / "app", "mcpp.toml:5:1: error: dependency `foo` points at package `bar`")
    assert 'declares name = "bar"' in res.err


def test_dependency_cycle_names_the_cycle(project, mcpp):
    root = project({
        "a/mcpp.toml": '[package]\nname = "a"\nversion = "0.1.0"\n[dependencies]\nb = { path = "../b" }\n',
        "a/src/main.cpp": "int main() {}\n",
        "b/mcpp.toml": '[package]\nname = "b"\nversion = "0.1.0"\n[dependencies]\nc = { path = "../c" }\n',
        "c/mcpp.toml": '[package]\nname = "c"\nversion = "0.1.0"\n[dependencies]\nb = { path = "../b" }\n',
    })
    check_error(mcpp, root / "a", "error: dependency cycle: b -> c -> b")


def test_source_file_whose_extension_has_no_role(project, mcpp):
    root = project({"mcpp.toml": '[package]\nname = "x"\nversion = "0.1.0"\n[build]\nsources = ["src/*"]\n',
                    "src/main.cpp": "int main() {}\n", "src/notes.txt": "hi\n"})
    check_error(mcpp, root, "mcpp.toml:5:11: error: source file `src/notes.txt` has no role")


def test_unknown_feature_on_the_command_line(project, mcpp):
    root = project({"mcpp.toml": '[package]\nname = "x"\nversion = "0.1.0"\n[features]\nfast = []\n', **MAIN})
    res = mcpp("build", "--features", "slow", cwd=root)
    assert res.code == 2 and "error: package `x` has no feature `slow`; declared features: fast" in res.err


def test_unknown_key_warns_and_build_goes_on(project, mcpp):
    root = project({"mcpp.toml": '[package]\nname = "x"\nversion = "0.1.0"\nflavour = "mild"\n', **MAIN})
    res = mcpp("build", cwd=root)
    assert res.code == 0
    assert "mcpp.toml:4:1: warning: unknown key `flavour` in [package]" in res.err


def test_no_manifest_anywhere(tmp_path, mcpp):
    res = mcpp("build", cwd=tmp_path)
    assert res.code == 2 and "error: could not find `mcpp.toml`" in res.err


@pytest.mark.parametrize("name", ["1abc", "a b", "bad!name", "no/such/parent"])
def test_new_with_a_bad_name_creates_nothing(tmp_path, mcpp, name):
    res = mcpp("new", name, cwd=tmp_path)
    assert res.code == 2, res.err
    assert list(tmp_path.iterdir()) == []


# -- long dependency chains: walked without recursion -------------------------------------------

def _chain(project, n: int, back_to: int | None = None):
    """p0 (a binary) -> p1 -> ... -> p<n-1>, each a library whose function calls the next one's;
    with `back_to`, the last depends on p<back_to>, closing a cycle."""
    files = {}
    for i in range(n):
        nxt = i + 1 if i + 1 < n else back_to
        dep = f'[dependencies]\np{nxt} = {{ path = "../p{nxt}" }}\n' if nxt is not None else ""
        files[f"p{i}/mcpp.toml"] = (f'[package]\nname = "p{i}"\nversion = "0.1.0"\n' + ("[lib]\n" if i else "") + dep)
        if i == 0:
            files["p0/src/main.cpp"] = "int f1();\nint main() { return f1() == 7 ? 0 : 1; }\n"
        else:
            body = f"f{i + 1}()" if i + 1 < n else "7"
            files[f"p{i}/src/lib.cpp"] = (f"int f{i + 1}();\n" if i + 1 < n else "") + f"int f{i}() {{ return {body}; }}\n"
    return project(files)


def test_a_chain_of_400_path_dependencies_builds_and_runs(project, mcpp):
    root = _chain(project, 400)
    res = mcpp("run", "-j2", cwd=root / "p0", timeout=600)
    assert res.code == 0 and "Traceback" not in res.err and "internal error" not in res.err, res.err


def test_a_cycle_closed_at_the_end_of_a_long_chain_is_named(project, mcpp):
    root = _chain(project, 400, back_to=1)
    res = check_error(mcpp, root / "p0", "p399/mcpp.toml:6:1: error: dependency cycle: p1 -> p2 -> p3 -> ")
    assert "-> p398 -> p399 -> p1\n" in res.err and "internal error" not in res.err, res.err
