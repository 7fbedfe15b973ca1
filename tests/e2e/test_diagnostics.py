"""What the compiler said, as the user reads it: paths relative to where mcpp was started, the
warnings of every unit on every build (also when nothing was rebuilt), and structured
`compiler-message` events for tools."""
from __future__ import annotations

import shutil

import pytest

from tests.e2e.e2e_support import Mcpp

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

APP = {
    "app/mcpp.toml": '[package]\nname = "app"\nversion = "0.1.0"\n\n[dependencies]\nmylib = { path = "../mylib" }\n',
    "app/src/main.cpp": "int helper();\nint main() { return helper(); }\n",
    "mylib/mcpp.toml": '[package]\nname = "mylib"\nversion = "0.1.0"\n',
}


def test_an_error_in_a_dependency_names_the_file_from_the_cwd(project, mcpp: Mcpp):
    root = project({**APP, "mylib/src/lib.cpp": "int helper() {\n  return 0\n}\n"})
    res = mcpp("build", cwd=root / "app")
    assert res.code == 1, res.err
    line = next(x for x in res.err.splitlines() if "error:" in x and "expected" in x)
    assert line.startswith(f"{root}/mylib/src/lib.cpp:2:11: error:"), res.err  # outside the cwd: absolute
    assert "/execroot" not in res.err and "@@EXECROOT@@" not in res.err

    res = mcpp("build", cwd=root / "mylib")  # from inside the package: plain relative paths
    assert any(x.startswith("src/lib.cpp:2:11: error:") for x in res.err.splitlines()), res.err


def test_warnings_are_replayed_on_every_build(project, mcpp: Mcpp):
    root = project({**APP, "mylib/src/lib.cpp": '#warning "mind the gap"\nint helper() { return 0; }\n'})
    app = root / "app"
    warning = f'{root}/mylib/src/lib.cpp:1:2: warning: #warning "mind the gap" [-Wcpp]'
    first = mcpp("build", cwd=app, check=True)
    assert warning in first.err.splitlines(), first.err
    noop = mcpp("build", cwd=app, check=True)  # nothing rebuilt: the warning is still shown
    assert warning in noop.err.splitlines(), noop.err
    again = mcpp("build", cwd=app, check=True)  # and the no-op fast path does not swallow it
    assert warning in again.err.splitlines(), again.err

    fresh = mcpp.build_json(cwd=app)
    messages = [e for e in fresh.events if e["reason"] == "compiler-message"]
    assert [e["message"] for e in messages] == ['#warning "mind the gap" [-Wcpp]'], fresh.out
    assert messages[0]["replayed"] is True
    assert [e["status"] for e in fresh.events if e["reason"] == "action-finished"] == ["fresh"] * 4

    shutil.rmtree(app / "target")  # restored from the cache: the same words
    restored = mcpp("build", cwd=app, check=True)
    assert warning in restored.err.splitlines(), restored.err

    (root / "mylib/src/lib.cpp").write_text("int helper() { return 0; }\n")  # fixed: gone for good
    mcpp("build", cwd=app, check=True)
    res = mcpp("build", cwd=app, check=True)
    assert "warning" not in res.err, res.err


def test_compiler_messages_are_structured(project, mcpp: Mcpp):
    root = project({**APP, "mylib/src/lib.cpp":
                    '#warning "first"\nint helper() {\n  int x = 1\n  return x;\n}\n'})
    res = mcpp("build", "--message-format", "json", cwd=root / "app")
    assert res.code == 1, res.err
    messages = [e for e in res.events if e["reason"] == "compiler-message"]
    assert [e["severity"] for e in messages] == ["warning", "error", "warning"], res.out
    warning, error = messages[0], messages[1]
    assert (warning["file"], warning["line"], warning["column"]) == (f"{root}/mylib/src/lib.cpp", 1, 2)
    assert warning["message"] == '#warning "first" [-Wcpp]'
    assert (error["file"], error["line"], error["column"]) == (f"{root}/mylib/src/lib.cpp", 4, 3)
    assert error["message"].startswith("expected")
    assert "In function 'int helper()'" in error["rendered"]
    assert error["rendered"].splitlines()[1].startswith(f"{root}/mylib/src/lib.cpp:4:3: error: expected")
    assert all(e["id"] == "compile mylib:src/lib.cpp" and e["package"] == "mylib" for e in messages)


def test_a_misspelled_manifest_key_suggests_the_known_one(project, mcpp: Mcpp):
    root = project({
        "mcpp.toml": '[package]\nname = "t"\nversion = "0.1.0"\nstandrad = "c++20"\n\n'
                     '[build]\ncxxflag = ["-O1"]\n\n[dependecies]\n',
        "src/main.cpp": "int main() { return 0; }\n",
    })
    res = mcpp("build", cwd=root, check=True)
    lines = res.err.splitlines()
    for key, right, at in (("standrad", "standard", "4:1"), ("cxxflag", "cxxflags", "7:1"),
                           ("dependecies", "dependencies", "9:2")):
        i = next(i for i, x in enumerate(lines) if f"unknown key `{key}`" in x)
        assert lines[i].startswith(f"mcpp.toml:{at}: warning:"), res.err
        assert lines[i + 1] == f"help: did you mean `{right}`?", res.err

    (root / "mcpp.toml").write_text('[package]\nname = "t"\nwhatever = 1\n')  # nothing close: no guess
    res = mcpp("build", cwd=root)
    assert "unknown key `whatever`" in res.err and "did you mean" not in res.err, res.err


def test_an_error_keeps_the_warnings_that_explain_it(project, mcpp: Mcpp):
    root = project({"mcpp.toml": '[package]\nname = "t"\nversoin = "0.1.0"\n',
                    "src/main.cpp": "int main() { return 0; }\n"})
    res = mcpp("build", cwd=root)
    assert res.code == 2, res.err
    lines = res.err.splitlines()
    assert lines[:3] == ["mcpp.toml:3:1: warning: unknown key `versoin` in [package] (ignored)",
                         "help: did you mean `version`?",
                         "mcpp.toml:1:2: error: missing `package.version`"], res.err


def test_a_failed_link_says_what_was_linked(project, mcpp: Mcpp):
    root = project({**APP, "app/src/main.cpp": "int helper(); int other();\nint main() { return helper() + other(); }\n",
                    "mylib/src/lib.cpp": "int helper() { return 0; }\n"})
    res = mcpp("build", cwd=root / "app")
    assert res.code == 1, res.err
    assert "undefined reference to `other()'" in res.err, res.err
    hints = [x for x in res.err.splitlines() if x.startswith("help:")]
    assert hints == ["help: linking target `app` of package `app` from sources `src/main.cpp` and dependencies "
                     "`mylib`: the source that defines the symbol is not among them (add it to `[build] sources`) "
                     "or its package is not in `[dependencies]`"], res.err

    (root / "app/src/main.cpp").write_text("int helper();\nint mian() { return helper(); }\n")
    res = mcpp("build", cwd=root / "app")
    assert res.code == 1, res.err
    hints = [x for x in res.err.splitlines() if x.startswith("help:")]
    assert hints == ["help: target `app` of package `app` has no `main` function: its `main` setting names "
                     "`src/main.cpp` (set `main` under [targets.app] to the source that defines `main`)"], res.err


def test_a_package_with_no_sources_warns(project, mcpp: Mcpp):
    root = project({"mcpp.toml": '[package]\nname = "e"\nversion = "0.1.0"\n', "source/main.cpp": "int main() {}\n"})
    res = mcpp("build", cwd=root, check=True)
    assert ("mcpp.toml:1:2: warning: package `e` has no sources (nothing matches `src/**/*.c`, `src/**/*.cpp`, "
            "`src/**/*.cc`, ...), so it builds nothing; write `sources = []` under [build] if that is meant"
            ) in res.err.splitlines(), res.err

    (root / "mcpp.toml").write_text('[package]\nname = "e"\nversion = "0.1.0"\n\n[build]\nsources = []\n')
    res = mcpp("build", cwd=root, check=True)  # on purpose: quiet
    assert "warning" not in res.err, res.err


def test_terminal_escapes_in_mcpps_own_text_are_shown_escaped(project, mcpp: Mcpp):
    root = project({
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
        "src/main.cpp": '#warning "tool \x1b]0;pwned\x07 text"\nint main() { return 0; }\n',
        "build.star": 'mcpp.warning("title \\x1b]0;pwned\\x07 set")\n',
    })
    res = mcpp("build", cwd=root, check=True)
    assert "\x1b" not in res.err and "\x07" not in res.err, repr(res.err)
    assert "warning: p: title \\x1b]0;pwned\\x07 set" in res.err, res.err
    assert "tool \\x1b]0;pwned\\x07 text" in res.err, res.err  # echoed by the compiler


def test_compiler_colours_with_color_always_and_the_same_cache_without(project, mcpp: Mcpp):
    root = project({**APP, "mylib/src/lib.cpp": '#warning "mind the gap"\nint helper() { return 0; }\n'})
    app = root / "app"
    coloured = mcpp("--color", "always", "build", cwd=app, check=True)
    assert "\x1b[01;35m\x1b[Kwarning" in coloured.err, repr(coloured.err)
    assert f"{root}/mylib/src/lib.cpp:1:2:" in coloured.err, repr(coloured.err)  # paths still the user's

    plain = mcpp("--color", "never", "build", "--message-format", "json", cwd=app, check=True)
    assert {e["status"] for e in plain.events if e["reason"] == "action-finished"} == {"fresh"}, plain.out
    assert "\x1b" not in plain.out + plain.err, repr(plain.err)
    [message] = [e for e in plain.events if e["reason"] == "compiler-message"]
    assert message["rendered"].startswith(f'{root}/mylib/src/lib.cpp:1:2: warning: #warning "mind the gap"')

    shutil.rmtree(app / "target")
    replayed = mcpp("--color", "always", "build", cwd=app, check=True)  # restored: colours kept
    assert "\x1b[01;35m\x1b[Kwarning" in replayed.err, repr(replayed.err)
    assert "4 cached" in replayed.err, replayed.err
