"""`mcpp run [OPTIONS] [BIN] [-- ARGS]`: every option before `--` is parsed as an option (an
unknown one is a usage error with a did-you-mean, exit 2, and nothing is built); what follows
`--` goes to the program untouched."""
from __future__ import annotations

import pytest

ECHO = {
    "mcpp.toml": """
        [package]
        name = "echo"
        version = "0.1.0"

        [targets.echo]
        main = "src/main.cpp"

        [targets.other]
        main = "src/other.cpp"
    """,
    "src/main.cpp": """
        #include <cstdio>
        int main(int argc, char** argv) {
        #ifdef NDEBUG
            std::puts("release");
        #endif
            for (int i = 1; i < argc; ++i) std::printf("[%s]\\n", argv[i]);
        }
    """,
    "src/other.cpp": "int main() { return 0; }\n",
}


@pytest.mark.parametrize("args, suggestion", [
    (("--relase",), "--release"),
    (("echo", "--relase"), "--release"),
    (("--featurs", "x", "echo"), "--features"),
    (("--no-sever",), "--no-server"),
])
def test_an_unknown_option_is_a_usage_error_with_a_suggestion_and_builds_nothing(project, mcpp, args, suggestion):
    root = project(ECHO)
    res = mcpp("run", *args, cwd=root)
    assert res.code == 2, (res.out, res.err)
    bad = next(a for a in args if a.startswith("--"))
    assert f"No such option '{bad}'" in res.err and f"'{suggestion}'" in res.err, res.err
    assert "no binary named" not in res.err
    assert not (root / "target").exists()  # refused before any build


def test_options_may_follow_the_binary_and_arguments_follow_the_separator(project, mcpp):
    root = project(ECHO)
    res = mcpp("run", "echo", "--release", "--", "--relase", "-x", "--", "two words", cwd=root)
    assert res.code == 0, res.err
    assert res.out == "release\n[--relase]\n[-x]\n[--]\n[two words]\n"


def test_a_second_positional_says_where_program_arguments_go(project, mcpp):
    root = project(ECHO)
    res = mcpp("run", "echo", "extra", cwd=root)
    assert res.code == 2
    assert "pass program arguments after `--`: mcpp run echo -- extra" in res.err
    assert mcpp("run", "-q", "--", "a", cwd=root).code == 2  # two binaries: `mcpp run` must be told which
    assert mcpp("-q", "run", "other", "--", "a", cwd=root).code == 0


def test_an_unknown_binary_lists_the_known_ones(project, mcpp):
    root = project(ECHO)
    res = mcpp("run", "ehco", cwd=root)
    assert res.code != 0 and "no binary named `ehco`; available binaries: echo, other" in res.err


@pytest.mark.parametrize("args, wrong, suggestion", [
    (("build", "--relase"), "No such option '--relase'", "'--release'"),
    (("test", "--no-sever"), "No such option '--no-sever'", "'--no-server'"),
    (("metadata", "--formt", "json"), "No such option '--formt'", "'--format'"),
    (("buld",), "No such command 'buld'", "'build'"),
])
def test_every_command_refuses_an_unknown_option_with_a_suggestion(project, mcpp, args, wrong, suggestion):
    root = project(ECHO)
    res = mcpp(*args, cwd=root)
    assert res.code == 2 and wrong in res.err and suggestion in res.err, res.err
    assert "Traceback" not in res.err and not (root / "target").exists()
