"""toyc, example 12's compiler for .toy: emitted code shape, execution, and its diagnostics.

toyc is built straight with g++ (no mcpp involved), so these tests pin the compiler
itself; the example's own run through mcpp is covered with the other examples.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOYC_SRC = ROOT / "examples" / "12-a-new-device-language" / "toyc" / "src"

ANSWER_TOY = """\
kernel gcd(a, b) {
    while (b != 0) {
        let t = b;
        b = a % b;
        a = t;
    }
    return a;
}

kernel scale(x, k) {
    return x * k;
}

kernel answer() {
    return scale(gcd(1071, 462), 2);
}
"""

# The seed's sample output for gcd, byte for byte.
GCD_CPP = """\
extern "C" int toy_gcd(int v_a, int v_b) {
    while ((v_b != 0)) {
        int v_t = v_b;
        v_b = (v_a % v_b);
        v_a = v_t;
    }
    return v_a;
}
"""

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


@pytest.fixture(scope="session")
def toyc(tmp_path_factory) -> Path:
    """One toyc binary for the whole run. Under pytest-xdist every worker has its own session, so
    the binary lives in the directory the workers share (the parent of each worker's base temp)
    and the first worker to take the lock builds it."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent
    out = shared / "toyc-shared" / "toyc"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not out.exists():
            sources = sorted(str(p) for p in TOYC_SRC.glob("*.cpp"))
            partial = out.with_name("toyc.partial")
            res = subprocess.run(["g++", "-std=c++20", "-O1", "-o", str(partial), *sources],
                                 capture_output=True, text=True)
            assert res.returncode == 0, res.stderr
            partial.rename(out)
    return out


def run_toyc(toyc: Path, directory: Path, name: str, text: str) -> subprocess.CompletedProcess:
    """Write NAME into DIRECTORY and compile it from there, naming it as plain NAME."""
    (directory / name).write_text(text)
    out = Path(name).with_suffix(".cpp").name
    return subprocess.run([str(toyc), name, "-o", out], cwd=directory,
                          capture_output=True, text=True)


def compile_and_run(toyc: Path, directory: Path, toy: str, main_body: str,
                    decls: str) -> str:
    res = run_toyc(toyc, directory, "k.toy", toy)
    assert res.returncode == 0, res.stderr
    (directory / "main.cpp").write_text(
        "#include <cstdio>\n" + decls + "\nint main() {\n" + main_body + "\n}\n")
    exe = directory / "prog"
    built = subprocess.run(["g++", "-std=c++20", "-O1", "-o", str(exe), "k.cpp", "main.cpp"],
                           cwd=directory, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    ran = subprocess.run([str(exe)], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


def test_answer_emits_the_seed_shape_and_runs(toyc, tmp_path):
    res = run_toyc(toyc, tmp_path, "answer.toy", ANSWER_TOY)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    cpp = (tmp_path / "answer.cpp").read_text()
    assert GCD_CPP in cpp
    # every kernel is forward-declared before the first definition
    first_def = cpp.index("extern \"C\" int toy_gcd(int v_a, int v_b) {")
    for decl in ('extern "C" int toy_gcd(int v_a, int v_b);',
                 'extern "C" int toy_scale(int v_x, int v_k);',
                 'extern "C" int toy_answer();'):
        assert -1 < cpp.index(decl) < first_def

    out = compile_and_run(
        toyc, tmp_path, ANSWER_TOY,
        'std::printf("gcd(1071, 462) = %d\\n", toy_gcd(1071, 462));\n'
        'std::printf("scale(21, 2)   = %d\\n", toy_scale(21, 2));\n'
        'std::printf("answer()       = %d\\n", toy_answer());',
        'extern "C" int toy_gcd(int, int);\nextern "C" int toy_scale(int, int);\n'
        'extern "C" int toy_answer();')
    assert out == "gcd(1071, 462) = 21\nscale(21, 2)   = 42\nanswer()       = 42\n"


# The four diagnostics of the seed, each from a file with that one defect.
SEED_DIAGNOSTICS = [
    ("bad.toy",
     "kernel scale(x, k) {\n    let y = x * k;\n}\n",
     "bad.toy:1:1: error: kernel `scale` can reach its end without a `return`"),
    ("bad2.toy",
     "kernel a(x) {\n    return b(x);\n}\n",
     "bad2.toy:2:12: error: `b` is not a kernel in this file"),
    ("bad3.toy",
     "kernel f(a) {\n    return x;\n}\n",
     "bad3.toy:2:12: error: `x` is not declared"),
    ("bad4.toy",
     "kernel f(a) {\n    let t = a\n    return t;\n}\n",
     "bad4.toy:3:5: error: expected `;`, found `return`"),
]


@pytest.mark.parametrize("name,text,message", SEED_DIAGNOSTICS,
                         ids=[d[0] for d in SEED_DIAGNOSTICS])
def test_seed_diagnostics(toyc, tmp_path, name, text, message):
    res = run_toyc(toyc, tmp_path, name, text)
    assert res.returncode == 1
    assert res.stderr == message + "\n"
    assert not (tmp_path / Path(name).with_suffix(".cpp").name).exists()


@pytest.mark.parametrize("text,message", [
    ("kernel f(a) {\n    return f(a, a);\n}\n",
     "t.toy:2:12: error: kernel `f` takes 1 argument, 2 given"),
    ("kernel f(a, b) {\n    return g(a);\n}\nkernel g(a, b) {\n    return a;\n}\n",
     "t.toy:2:12: error: kernel `g` takes 2 arguments, 1 given"),
    ("kernel f() {\n    return 1;\n}\nkernel f() {\n    return 2;\n}\n",
     "t.toy:4:8: error: kernel `f` is defined twice"),
    ("kernel f() {\n    let x = 1;\n    let x = 2;\n    return x;\n}\n",
     "t.toy:3:9: error: `x` is already declared"),
    ("kernel f(a, a) {\n    return a;\n}\n",
     "t.toy:1:13: error: parameter `a` is declared twice"),
    ("kernel f() {\n    y = 1;\n    return 0;\n}\n",
     "t.toy:2:5: error: `y` is not declared"),
    ("kernel f() {\n    return 1;\n",
     "t.toy:3:1: error: expected `}`, found end of file"),
    ("kernel f( {\n    return 1;\n}\n",
     "t.toy:1:11: error: expected identifier, found `{`"),
    ("kernel f() {\n    return ;\n}\n",
     "t.toy:2:12: error: expected expression, found `;`"),
    ("kernel f() {\n    return 1 @ 2;\n}\n",
     "t.toy:2:14: error: unexpected character `@`"),
    ("kernel f() {\n    while (1) {\n        let t = 1;\n    }\n    return t;\n}\n",
     "t.toy:5:12: error: `t` is not declared"),
], ids=["arity-1", "arity-2", "dup-kernel", "dup-let", "dup-param", "assign-undeclared",
        "eof", "param-list", "empty-return", "bad-char", "block-scope"])
def test_other_diagnostics(toyc, tmp_path, text, message):
    res = run_toyc(toyc, tmp_path, "t.toy", text)
    assert res.returncode == 1
    assert res.stderr == message + "\n"


def test_if_else_both_returning_is_a_complete_kernel(toyc, tmp_path):
    toy = ("kernel sign(x) {\n"
           "    if (x < 0) {\n        return -1;\n"
           "    } else {\n"
           "        if (x == 0) {\n            return 0;\n        } else {\n            return 1;\n        }\n"
           "    }\n"
           "}\n")
    out = compile_and_run(toyc, tmp_path, toy,
                          'std::printf("%d %d %d\\n", toy_sign(-5), toy_sign(0), toy_sign(9));',
                          'extern "C" int toy_sign(int);')
    assert out == "-1 0 1\n"
    cpp = (tmp_path / "k.cpp").read_text()
    assert "    if ((v_x < 0)) {\n        return (-1);\n    } else {\n" in cpp


@pytest.mark.parametrize("body", [
    # an if without else at the end
    "    if (x < 0) {\n        return 1;\n    }\n",
    # an if/else where only one branch returns
    "    if (x < 0) {\n        return 1;\n    } else {\n        x = 2;\n    }\n",
    # a while at the end, even one that returns inside
    "    while (x < 10) {\n        return x;\n    }\n",
    # an empty body
    "",
], ids=["if-no-else", "else-falls-through", "while", "empty"])
def test_missing_return(toyc, tmp_path, body):
    res = run_toyc(toyc, tmp_path, "m.toy",
                   "kernel ok() {\n    return 0;\n}\n\nkernel f(x) {\n" + body + "}\n")
    assert res.returncode == 1
    assert res.stderr == "m.toy:5:1: error: kernel `f` can reach its end without a `return`\n"


def test_precedence_and_unary_minus(toyc, tmp_path):
    toy = ("kernel p() {\n    return 2 + 3 * 4 - -1;\n}\n"
           "kernel q(a) {\n    return -(a - 10) * 2 % 7 + (1 < 2) + (3 >= 4) * 100;\n}\n"
           "kernel r() {\n    return 20 - 6 - 4 + 10 / 3 / 2;\n}\n"
           "kernel loop(n) {\n    let s = 0;\n    let i = 1;\n"
           "    while (i <= n) {\n        s = s + i;\n        i = i + 1;\n    }\n    return s;\n}\n")
    out = compile_and_run(
        toyc, tmp_path, toy,
        'std::printf("%d %d %d %d\\n", toy_p(), toy_q(3), toy_r(), toy_loop(10));',
        'extern "C" int toy_p();\nextern "C" int toy_q(int);\nextern "C" int toy_r();\n'
        'extern "C" int toy_loop(int);')
    # -(3-10)*2%7 = 14%7 = 0; +1 +0 -> 1.  20-6-4 = 10; 10/3/2 = 1 -> 11.
    assert out == "15 1 11 55\n"
    cpp = (tmp_path / "k.cpp").read_text()
    assert "return ((2 + (3 * 4)) - (-1));" in cpp


def test_usage_errors(toyc, tmp_path):
    for args in ([], ["a.toy"], ["a.toy", "-o"], ["-x", "a.toy", "-o", "b.cpp"]):
        res = subprocess.run([str(toyc), *args], cwd=tmp_path, capture_output=True, text=True)
        assert res.returncode == 2, args
        assert "usage: toyc INPUT.toy -o OUTPUT.cpp" in res.stderr
