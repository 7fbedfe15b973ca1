"""Seeded fuzzing of `mcpp.toml` and `build.star`: whatever the input, mcpp answers with exit 0, 1
or 2 and a message, never a Python traceback, never an "internal error", and never hangs.

The CLI runs in-process (`cli.main`), so each case costs milliseconds: manifests go through
`mcpp metadata` (the parse, validate and fold every command shares), and every fifth one that
it accepts through a `build`; build programs need a `build`, in a package with `sources = []` so
that most cases compile nothing. The generator is
seeded (set MCPP_FUZZ_SEED to explore others): a failure names its seed and case, and replays.
"""
from __future__ import annotations

import contextlib
import io
import os
import random
import signal
import textwrap
from pathlib import Path

import pytest

from mcpp.engine.cli import dispatch as cli

SEED = int(os.environ.get("MCPP_FUZZ_SEED", "20261130"))
MANIFEST_CASES = 300
PROGRAM_CASES = 60
CASE_TIMEOUT = 30  # seconds; a build program's own limit is set to 2 s below

BASE_MANIFEST = textwrap.dedent("""\
    [package]
    name = "fz"
    version = "0.1.0"

    [build]
    cxxflags = ["-Wall"]
    defines = ["A=1"]
    sources = ["src/**/*.cpp"]

    [features]
    default = ["x"]
    x = []

    [dependencies]

    [profile.dev]
    opt = 0

    [targets.fz]
    kind = "bin"

    [target.'cfg(unix)'.build]
    defines = ["U=1"]
    """)

TOKENS = ["[", "]", "{", "}", "=", '"', "'", ".", ",", "\n", "#", "\\", "\x00", "é", "[[", "]]", '"""',
          "\t", " = ", "-", "*", "!", "cfg(", ")", "\r\n"]
SECTIONS = ["[lib]", "[workspace]", "[dependencies.foo]", "[features.x.deps]", "[[bin]]", "[profile.custom]",
            "[target.'cfg(windows)'.dependencies]", "[target.x86_64-unknown-linux-gnu.build]", "[targets.t]",
            "[build.sources]", "[package.metadata]", "[workspace.dependencies]", "[accel]", "[runtime]"]
KEYS = ["name", "version", "kind", "main", "sources", "path", "features", "default", "opt", "inherits",
        "members", "accel", "tools", "include_dirs", "ldflags", "optional", "Name", "x" * 300, '"a.b"', "a.b.c",
        "'quoted key'", "é"]


def random_string(rng: random.Random) -> str:
    return rng.choice(["", "x", "../outside", "/", "/etc/passwd", "a\x00b", "src/*.cpp", "**", "!src/main.cpp",
                       "cfg(unix)", "cuda12.9+{sm_89}", ">= 1.0", "x" * rng.choice([255, 256, 5000]), "é" * 100,
                       "src/main.cpp", "0.1.0", "not a version", "-fsanitize=address", "$(rm -rf /)"])


def random_value(rng: random.Random, depth: int = 0) -> str:
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return '"' + random_string(rng).replace("\\", "\\\\").replace('"', '\\"').replace("\x00", "\\u0000") + '"'
    if kind == 1:
        return rng.choice(["0", "-1", "1e400", "nan", "inf", "99999999999999999999", "0x10", "1979-05-27"])
    if kind == 2:
        return rng.choice(["true", "false"])
    if kind == 3:
        n = rng.choice([1, 2, 5, 40, 700, 3000])
        return "[" * n + "1" + "]" * n
    if kind == 4:
        n = rng.choice([1, 2, 5, 40, 700, 3000])
        return "{a = " * n + "1" + "}" * n
    if kind == 5:
        return "'" + random_string(rng).replace("'", "").replace("\x00", "") + "'"
    if kind == 6:
        return "[" + ", ".join(random_value(rng, depth + 1) for _ in range(rng.randrange(4))) + "]"
    if kind == 7:
        keys = rng.sample(KEYS, rng.randrange(1, 4))
        return "{" + ", ".join(f"{k} = {random_value(rng, depth + 1)}" for k in keys) + "}"
    return "[" + ", ".join('"' + rng.choice(["a", "b", "src/**"]) + '"' for _ in range(rng.randrange(3))) + "]"


def mutate_manifest(rng: random.Random, text: str) -> bytes:
    for _ in range(rng.randrange(1, 4)):
        lines = text.split("\n")
        op = rng.randrange(9)
        i = rng.randrange(len(lines))
        if op == 0 and text:  # delete a span
            a = rng.randrange(len(text))
            text = text[:a] + text[a + rng.randrange(1, 6):]
        elif op == 1:  # insert a token
            a = rng.randrange(len(text) + 1)
            text = text[:a] + rng.choice(TOKENS) + text[a:]
        elif op in (2, 3):  # replace a value
            if "=" in lines[i]:
                key = lines[i].split("=", 1)[0]
                lines[i] = f"{key}= {random_value(rng)}"
            text = "\n".join(lines)
        elif op == 4:  # a new key
            lines.insert(i, f"{rng.choice(KEYS)} = {random_value(rng)}")
            text = "\n".join(lines)
        elif op == 5:  # a new section
            lines.insert(i, rng.choice(SECTIONS))
            text = "\n".join(lines)
        elif op == 6:  # duplicate or swap lines
            j = rng.randrange(len(lines))
            lines.insert(j, lines[i]) if rng.random() < 0.5 else None
            lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
        elif op == 7:  # dotted tables, deep
            text += "\n[" + ".".join(["t"] * rng.choice([10, 40, 1500])) + "]\nx = 1\n"
        else:  # a key renamed
            if "=" in lines[i]:
                lines[i] = rng.choice(KEYS) + " =" + lines[i].split("=", 1)[1]
            text = "\n".join(lines)
    data = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.03:  # not UTF-8
        a = rng.randrange(len(data) + 1)
        data = data[:a] + b"\xff\xfe" + data[a:]
    return data


def program_value(rng: random.Random, depth: int = 0) -> str:
    kind = rng.randrange(10 if depth < 2 else 7)
    if kind == 0:
        return repr(random_string(rng)).replace("\\x00", "\\x00")
    if kind == 1:
        return rng.choice(['mcpp.out_dir() + "/o.txt"', 'mcpp.out_dir() + "/gen.cpp"', "mcpp.out_dir()",
                           'mcpp.out_dir() + "/../escape"', 'mcpp.manifest_dir()', '"src"', '"data"'])
    if kind == 2:
        return rng.choice(["None", "True", "0", "-1", "1.5", "2147483648"])
    if kind == 3:
        return rng.choice(['["true"]', '["sh", "-c", "echo > $0", mcpp.out_dir() + "/o.txt"]', "[]",
                           '["/nonexistent/tool"]', '["tr\\x00ue"]'])
    if kind == 4:
        return rng.choice(['{"A": "b"}', '{"A": 1}', '{"": "x"}', '{"A=B": "c"}', "{}"])
    if kind == 5:
        return rng.choice(['"object"', '"source"', '"check"', '"artifact"', '"bogus"'])
    if kind == 6:
        return rng.choice(['"x" * 100000', '[1] * 1000', "struct(a = 1)", "lambda: 1", "mcpp"])
    if kind == 7:
        return "[" + ", ".join(program_value(rng, depth + 1) for _ in range(rng.randrange(3))) + "]"
    if kind == 8:
        return "{" + ", ".join(f"{program_value(rng, depth + 1)}: {program_value(rng, depth + 1)}"
                               for _ in range(rng.randrange(3))) + "}"
    return rng.choice(["mcpp.package_name()", "mcpp.profile()", "mcpp.target()", "mcpp.accel()",
                       "mcpp.device_sources()"])


ACTION_ARGS = ["id", "argv", "inputs", "outputs", "tools", "role", "env", "description", "depfile"]
CALLS = ["source", "generated", "cxxflag", "cflag", "define", "include_dir", "link_lib", "link_search",
         "warning", "read_file", "glob", "rerun_if_env_changed", "has_feature", "dep_bin", "xpkg_dir", "fact",
         "floor", "device_sources"]
STATEMENTS = [
    'load("@mcpp//nothing.star", "x")', 'load("some.rules", "r")', "fail(\"stop\")", "x = 1 // 0",
    "def f(n):\n    return f(n + 1)\nf(0)", "x = [1] * 2000000000", "x = {}[1]", "x = undefined_name",
    "def spin():\n    for i in range(2147483647):\n        for j in range(2147483647):\n            pass\nspin()",
    "mcpp.action(", "x = )", "mcpp = 1", 'mcpp.action(id = "dup", argv = ["true"], inputs = [], outputs = '
    '[mcpp.out_dir() + "/d"], role = "check")\nmcpp.action(id = "dup", argv = ["true"], inputs = [], '
    'outputs = [mcpp.out_dir() + "/e"], role = "check")',
]


VALID_ACTION = {
    "id": '"gen"', "argv": '["sh", "-c", "echo int x = 1\\; > $0", mcpp.out_dir() + "/gen.cpp"]', "inputs": "[]",
    "outputs": '[mcpp.out_dir() + "/gen.cpp"]', "role": '"source"',
}
VALID_ARGS = ['"src/main.cpp"', '"-O1"', '"B=2"', '"data"', '"m"', '"src/*.cpp"', '"HOME"', '"x"', '"x >= 1"']


def mutate_program(rng: random.Random) -> str:
    """A few statements: mostly API calls that are right but for one argument (so that most
    cases get past the first line), some whole actions that run, some hostile Starlark."""
    lines = []
    for n in range(rng.randrange(1, 4)):
        r = rng.random()
        if r < 0.45:
            args = dict(VALID_ACTION, id=f'"a{n}"')
            for _ in range(rng.randrange(3)):
                args[rng.choice(ACTION_ARGS)] = program_value(rng)
            lines.append("mcpp.action(" + ", ".join(f"{k} = {v}" for k, v in args.items()) + ")")
        elif r < 0.85:
            call = rng.choice(CALLS)
            args = [rng.choice(VALID_ARGS) if rng.random() < 0.6 else program_value(rng)
                    for _ in range(rng.choice([0, 1, 1, 2]))]
            lines.append(f"mcpp.{call}({', '.join(args)})")
        else:
            lines.append(rng.choice(STATEMENTS))
    return "\n".join(lines) + "\n"


def run_in_process(args: list[str], cwd: Path) -> tuple[int, str]:
    """`mcpp ARGS` in this process: its exit code and stderr. An exception escaping `cli.main`
    is what a user would see as a traceback, so it fails the test."""
    err, out = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    signal.alarm(CASE_TIMEOUT)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                cli.main(args)
                code = 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 1
    finally:
        signal.alarm(0)
        os.chdir(old)
    return code, err.getvalue()


@pytest.fixture
def fuzz_env(tmp_path, monkeypatch):
    def on_alarm(signum, frame):
        raise TimeoutError(f"a fuzz case ran longer than {CASE_TIMEOUT} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    monkeypatch.setenv("MCPP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MCPP_PROGRAM_TIME_LIMIT", "2")
    monkeypatch.setenv("MCPP_NO_FAST_PATH", "1")
    yield tmp_path
    signal.signal(signal.SIGALRM, previous)


def check(code: int, err: str, what: str) -> None:
    assert code in (0, 1, 2), f"{what}: exit {code}\n{err}"
    assert "Traceback" not in err and "internal error" not in err, f"{what}:\n{err}"
    if code != 0:
        assert "error" in err, f"{what}: exit {code} with no message"


def test_fuzz_manifests(fuzz_env):
    rng = random.Random(SEED)
    root = fuzz_env / "m"
    (root / "src").mkdir(parents=True)
    (root / "src/main.cpp").write_text("int main() { return 0; }\n")
    for case in range(MANIFEST_CASES):
        data = mutate_manifest(rng, BASE_MANIFEST)
        (root / "mcpp.toml").write_bytes(data)
        code, err = run_in_process(["metadata"], root)
        check(code, err, f"seed {SEED}, manifest case {case}:\n{data[:2000]!r}")
        if code == 0 and case % 5 == 0:  # a few accepted manifests all the way through a build
            code, err = run_in_process(["build", "-q"], root)
            check(code, err, f"seed {SEED}, manifest case {case} (build):\n{data[:2000]!r}")


def test_fuzz_build_programs(fuzz_env):
    rng = random.Random(SEED + 1)
    root = fuzz_env / "p"
    (root / "src").mkdir(parents=True)
    (root / "data").mkdir()
    (root / "src/main.cpp").write_text("int main() { return 0; }\n")
    (root / "mcpp.toml").write_text('[package]\nname = "fz"\nversion = "0.1.0"\n[build]\nsources = []\n')
    for case in range(PROGRAM_CASES):
        program = mutate_program(rng)
        (root / "build.star").write_text(program, encoding="utf-8", errors="surrogatepass")
        code, err = run_in_process(["build", "-q"], root)
        check(code, err, f"seed {SEED + 1}, program case {case}:\n{program}")
