"""Bad input and broken environments: each is a positioned or named error (exit 1 or 2), never a
Python traceback. One test per kind of trouble; each case once printed a traceback."""
from __future__ import annotations

import marshal
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.e2e.e2e_support import Result, mcpp_executable, started, write_tree

MANIFEST = '[package]\nname = "p"\nversion = "0.1.0"\n'
MAIN = {"src/main.cpp": "int main() { return 0; }\n"}


def clean_failure(res: Result, code: int, *expected: str) -> None:
    assert "Traceback" not in res.err and "internal error" not in res.err, res.err
    assert res.code == code, (res.code, res.out, res.err)
    for text in expected:
        assert text in res.err, res.err


# -- [build] sources that leave out the main source ---------------------------------------------

@pytest.mark.parametrize("sources", ['["source/**/*.cpp"]', '["!src/main.cpp"]'])
def test_sources_that_leave_out_main_name_it(project, mcpp, sources):
    root = project({"mcpp.toml": MANIFEST + f"[build]\nsources = {sources}\n", **MAIN})
    clean_failure(mcpp("build", cwd=root), 2,
                  "mcpp.toml:5:11: error: the main source `src/main.cpp` of target `p` is not among the "
                  "package's sources")


def test_empty_sources_build_nothing(project, mcpp):
    root = project({"mcpp.toml": MANIFEST + "[build]\nsources = []\n", **MAIN})
    res = mcpp("build", cwd=root)
    assert res.code == 0 and "Traceback" not in res.err, res.err
    assert not (root / "target" / "dev" / "p").exists()


# -- nesting and names past what the engine (or a file system) can hold -------------------------

NESTED = {
    "inline tables": "[build]\nx = " + "{a = " * 600 + "1" + "}" * 600 + "\n",
    "arrays": "[build]\nx = " + "[" * 5000 + "1" + "]" * 5000 + "\n",
    "dotted tables": "[" + ".".join(["a"] * 1200) + "]\nx = 1\n",
    "dotted keys": ".".join(["a"] * 1200) + " = 1\n",
}


@pytest.mark.parametrize("kind", NESTED)
def test_deep_nesting_is_a_positioned_error(project, mcpp, kind):
    root = project({"mcpp.toml": MANIFEST + NESTED[kind], **MAIN})
    clean_failure(mcpp("metadata", cwd=root), 2, "mcpp.toml:", "nest deeper than 32 levels")


@pytest.mark.parametrize("manifest, expected", [
    ('[package]\nname = "' + "p" * 5000 + '"\nversion = "0.1.0"\n',
     "mcpp.toml:2:8: error: package name `ppp"),
    (MANIFEST + "[targets." + "t" * 5000 + ']\nkind = "bin"\n',
     "mcpp.toml:4:10: error: target name `ttt"),
    (MANIFEST + '[targets."a/b"]\nkind = "bin"\n', "error: target name `a/b` cannot be a file name"),
    (MANIFEST + '[build]\ncxxflags = ["-O1\\u0000"]\n', "mcpp.toml:5:17: error: a string contains a NUL byte"),
])
def test_names_that_cannot_be_file_names(project, mcpp, manifest, expected):
    root = project({"mcpp.toml": manifest, **MAIN})
    clean_failure(mcpp("build", cwd=root), 2, expected)


# -- build programs that declare paths no action can have ---------------------------------------

ACTION = 'mcpp.action(id = "a", argv = {argv}, inputs = {inputs}, outputs = {outputs}, role = "check"{extra})\n'
OUT = 'mcpp.out_dir() + "/x"'
BAD_ACTIONS = {
    "directory input": (dict(argv='["true"]', inputs='["data"]', outputs=f"[{OUT}]", extra=""),
                        "`data` is a directory"),
    "tools = ['/']": (dict(argv='["true"]', inputs="[]", outputs=f"[{OUT}]", extra=', tools = ["/"]'),
                      "`/` is a directory"),
    "out_dir() as output": (dict(argv='["true"]', inputs="[]", outputs="[mcpp.out_dir()]", extra=""),
                            "is out_dir() itself"),
    "nested outputs": (dict(argv='["true"]', inputs="[]", outputs=f'[{OUT}, {OUT} + "/y"]', extra=""),
                       "would be the directory of output `x/y`"),
    "NUL in argv": (dict(argv='["tr\\x00ue"]', inputs="[]", outputs=f"[{OUT}]", extra=""),
                    "argv contains a NUL byte"),
    "NUL in an output": (dict(argv='["true"]', inputs="[]", outputs=f'[{OUT} + "\\x00"]', extra=""),
                         "output contains a NUL byte"),
    "NUL in env": (dict(argv='["true"]', inputs="[]", outputs=f"[{OUT}]", extra=', env = {"A": "b\\x00"}'),
                   "env contains a NUL byte"),
    "NUL in a flag": (dict(argv='["true"]', inputs="[]", outputs=f"[{OUT}]", extra=')\nmcpp.cxxflag("-O1\\x00"'),
                      "cxxflag(): `flag` contains a NUL byte"),
    "5000-character output": (dict(argv='["true"]', inputs="[]", outputs=f'[mcpp.out_dir() + "/" + "x" * 5000]',
                                   extra=""), "is longer than a file system allows"),
}


@pytest.mark.parametrize("case", BAD_ACTIONS)
def test_build_program_paths_are_checked_at_the_call(project, mcpp, case):
    fields, expected = BAD_ACTIONS[case]
    root = project({"mcpp.toml": MANIFEST, "build.star": ACTION.format(**fields), "data/f.txt": "x\n", **MAIN})
    at = "build.star:2:1: error: " if case == "NUL in a flag" else "build.star:1:1: error: package `p`, action `a`: "
    clean_failure(mcpp("build", cwd=root), 2, at, expected)


def test_an_action_that_makes_a_directory_for_its_output_fails_by_name(project, mcpp):
    program = ('mcpp.action(id = "a", argv = ["mkdir", "-p", mcpp.out_dir() + "/x"], inputs = [], '
               'outputs = [mcpp.out_dir() + "/x"], role = "check")\n')
    root = project({"mcpp.toml": MANIFEST, "build.star": program, **MAIN})
    for sandbox in ("bwrap", "dir"):  # twice each: the second run meets the directory the first left
        for _ in range(2):
            clean_failure(mcpp("build", "--sandbox", sandbox, cwd=root), 1,
                          "error: action rule p:a: output target/dev/.mcpp/gen/p/x: is not a regular file")


# -- build programs that never end or eat the machine -------------------------------------------

ENDLESS = ("def spin():\n"
           "    for i in range(2147483647):\n"
           "        for j in range(2147483647):\n"
           "            pass\n"
           "spin()\n")
HUGE = {
    "list": "x = [1] * 2000000000\n",
    "string doubling": 'def grow():\n    s = "ab"\n    for i in range(40):\n        s = s + s\ngrow()\n',
}


# Without the engine's own limit, these programs would take the test machine with them.
ADDRESS_SPACE = 8 << 30


def test_an_endless_loop_stops_at_its_line(project, mcpp):
    root = project({"mcpp.toml": MANIFEST, "build.star": ENDLESS, **MAIN})
    start = time.monotonic()
    res = mcpp("build", cwd=root, env={"MCPP_PROGRAM_TIME_LIMIT": "2"}, timeout=60)
    clean_failure(res, 2, "error: build program ran longer than 2 s")
    assert res.err.startswith(("build.star:2:", "build.star:3:")), res.err  # a line of the loop
    assert time.monotonic() - start < 30


@pytest.mark.parametrize("kind", HUGE)
def test_a_runaway_allocation_is_a_named_error(project, mcpp, kind):
    root = project({"mcpp.toml": MANIFEST, "build.star": HUGE[kind], **MAIN})
    env = {**os.environ, "MCPP_HOME": str(mcpp.home)}
    p = subprocess.run(started([mcpp.exe, "build"], address_space=ADDRESS_SPACE), cwd=root, env=env,
                       capture_output=True, text=True, timeout=120)
    clean_failure(Result(p.returncode, p.stdout, p.stderr), 2, "build.star: error: build program ran out of memory")
    assert "panicked" not in p.stderr and "stack backtrace" not in p.stderr


def test_ctrl_c_ends_an_endless_build_program(project, mcpp):
    root = project({"mcpp.toml": MANIFEST, "build.star": ENDLESS, **MAIN})
    env = {**os.environ, "MCPP_HOME": str(mcpp.home)}
    p = subprocess.Popen(started([mcpp.exe, "build"]), cwd=root, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    time.sleep(3)
    os.killpg(p.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole foreground group
    try:
        _, err = p.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        pytest.fail("mcpp ignored Ctrl-C during a build program")
    assert p.returncode == 130 and "interrupted" in err and "Traceback" not in err, err


# -- broken homes, target directories and state files -------------------------------------------

def _built(project, mcpp) -> Path:
    root = project({"mcpp.toml": MANIFEST, **MAIN})
    mcpp("build", cwd=root, check=True)
    return root


@pytest.mark.parametrize("where", ["target", "target/dev/.mcpp", "$MCPP_HOME/cas"])
def test_a_file_where_a_directory_belongs_is_named(project, mcpp, where):
    root = _built(project, mcpp)
    shutil.rmtree(root / "target")
    if where.startswith("$MCPP_HOME"):
        shutil.rmtree(mcpp.home / "cas")
        (mcpp.home / "cas").write_text("")
        shown = f"`{mcpp.home / 'cas'}`"
    else:
        (root / where).parent.mkdir(parents=True, exist_ok=True)
        (root / where).write_text("")
        shown = f"`{where}`"
    res = mcpp("build", cwd=root, env={"MCPP_NO_FAST_PATH": "1"})
    clean_failure(res, 1, f"error: {shown} is a file where mcpp needs a directory")


def _state_file(*frames: object) -> bytes:
    """A state file as cas/journal.py writes it: its snapshot, then changes."""
    out = b"mcpp-journal-1\n"
    for frame in frames:
        body = marshal.dumps(frame)
        out += len(body).to_bytes(8, "big") + body
    return out


STATE = {
    "stat records": ("target/dev/.mcpp/stat", _state_file(("mcpp-statcache-2", {"/x": (1, 2)}))),
    "action records": ("target/dev/.mcpp/actions",
                       _state_file(("mcpp-state-4", {"compile p:src/main.cpp": 5}))),
    "action records changed": ("target/dev/.mcpp/actions", _state_file(
        ("mcpp-state-4", {}), ("mcpp-state-4", ({"compile p:src/main.cpp": ("key", (), {"o": 1})}, ())))),
    "source scans": ("target/dev/.mcpp/scans", _state_file(("mcpp-scans-3", {"x": 1}, {}, {}))),
    "toolchains.json": ("$MCPP_HOME/toolchains.json", b"[]"),
    "toolchains.json damaged": ("$MCPP_HOME/toolchains.json", b'{"/usr/bin/g++": '),
    "program cache": ("target/dev/.mcpp/programs/p.json", b'"x"'),
}


@pytest.mark.parametrize("which", STATE)
def test_wrong_shaped_state_files_are_discarded(project, mcpp, which):
    root = project({"mcpp.toml": MANIFEST, "build.star": 'mcpp.define("X=1")\n', **MAIN})
    mcpp("build", cwd=root, check=True)
    rel, data = STATE[which]
    path = mcpp.home / rel[len("$MCPP_HOME/"):] if rel.startswith("$MCPP_HOME") else root / rel
    assert path.exists()
    path.write_bytes(data)
    (root / "src/main.cpp").write_text("int main() { return 1 - 1; }\n")
    res = mcpp("build", cwd=root, env={"MCPP_NO_FAST_PATH": "1"})
    assert res.code == 0 and "Traceback" not in res.err, res.err
    assert "Compiling p" in res.err
    assert f"warning: {path}: " in res.err and "; discarded" in res.err, res.err


def test_wrong_shaped_last_build_is_ignored_by_cache_stats(project, mcpp):
    _built(project, mcpp)
    for text in ('{"fresh": 1}', "[]", '{"executed": 3, "fresh": 2, "cache_hits": "x"}'):
        (mcpp.home / "last-build.json").write_text(text)
        res = mcpp("cache", "stats", cwd=mcpp.home)
        assert res.code == 0 and "Traceback" not in res.err, res.err


def test_wrong_shaped_explain_log_is_named(project, mcpp):
    root = _built(project, mcpp)
    log = root / "target/dev/.mcpp/explain"
    body = marshal.dumps(("compile p:src/main.cpp", {"key": 1}))
    log.write_bytes(b"mcpp-explain-3\n" + len(body).to_bytes(4, "big") + body)
    clean_failure(mcpp("explain", "compile p:src/main.cpp", cwd=root), 2,
                  "error: the explain log `target/dev/.mcpp/explain` is damaged")


def test_config_toml_that_is_not_utf8_is_named(project, mcpp):
    root = project({"mcpp.toml": MANIFEST, **MAIN})
    mcpp.home.mkdir(parents=True, exist_ok=True)
    (mcpp.home / "config.toml").write_bytes(b"\xff\xfe[remote]\n")
    clean_failure(mcpp("build", cwd=root), 2, "config.toml: not UTF-8 text (byte 0)")


# -- the same, as a user the file system can refuse -------------------------------------------------

NOBODY = 65534


def _blocked_ancestor(path: str) -> str | None:
    """The first directory above `path` that other users cannot enter (e.g. /root at 0700)."""
    parts = Path(path).parts
    for n in range(2, len(parts) + 1):
        p = os.path.join(*parts[:n])
        if not os.stat(p).st_mode & 0o001:
            return p
    return None


def _as_nobody(args: list[str], cwd: Path, home: str) -> Result:
    """Run mcpp as uid 65534. Mode bits do not stop root, so the permission cases need another
    user; when the interpreter lives under a directory others cannot enter (/root), a private
    mount namespace shows just the interpreter's tree there."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run mcpp as another user (mode bits are the point of the test)")
    if not (shutil.which("setpriv") and shutil.which("unshare")):
        pytest.skip("needs setpriv and unshare (util-linux) to run mcpp as another user")
    prefix = os.path.realpath(sys.base_prefix)
    script = ""
    blocked = _blocked_ancestor(prefix)
    if blocked is not None:
        stash = tempfile.mkdtemp(prefix="mcpp-prefix-")
        script = (f"mount --bind '{prefix}' '{stash}' && mount -t tmpfs -o mode=755 none '{blocked}' && "
                  f"mkdir -p '{prefix}' && mount --bind '{stash}' '{prefix}' && ")
    script += (f"cd '{cwd}' && exec setpriv --reuid {NOBODY} --regid {NOBODY} --clear-groups "
               f"env HOME=/tmp MCPP_HOME='{home}' MCPP_NO_FAST_PATH=1 '{mcpp_executable()}' "
               + " ".join(f"'{a}'" for a in args))
    try:
        p = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=300)
    finally:
        if blocked is not None:
            os.rmdir(stash)  # an empty mount point here; the bind lived in the namespace only
    if p.returncode != 0 and ("unshare failed" in p.stderr or "mount:" in p.stderr):
        pytest.skip(f"cannot make a mount namespace here: {p.stderr.strip()[:200]}")
    return Result(p.returncode, p.stdout, p.stderr)


@pytest.fixture
def shared_dir():
    """A directory uid 65534 can reach (pytest's own tmp_path sits under a 0700 directory)."""
    d = tempfile.mkdtemp(prefix="mcpp-bad-input-")
    os.chmod(d, 0o755)
    yield Path(d)
    shutil.rmtree(d, ignore_errors=True)


def _owned_project(base: Path) -> Path:
    root = write_tree(base / "proj", {"mcpp.toml": MANIFEST, **MAIN})
    for dirpath, dirs, files in os.walk(root):
        for name in [dirpath, *(os.path.join(dirpath, f) for f in dirs + files)]:
            os.chown(name, NOBODY, NOBODY)
    home = base / "home"
    home.mkdir()
    os.chown(home, NOBODY, NOBODY)
    return root


PERMISSION_CASES = {
    "home unwritable": "permission denied: cannot create",
    "home under a missing path": "permission denied: cannot create",
    "target read-only": "permission denied: cannot create `target/.lock` in `target`",
    "package directory read-only": "permission denied: cannot create `target` in `.`",
    "source at mode 000": "src/main.cpp`: permission denied",  # found while listing sources: exit 2
}


@pytest.mark.parametrize("case", PERMISSION_CASES)
def test_permission_trouble_is_named(shared_dir, case):
    root = _owned_project(shared_dir)
    home = str(shared_dir / "home")
    if case == "home unwritable":
        os.chown(home, 0, 0)
    elif case == "home under a missing path":
        home = str(shared_dir / "missing" / "home")
        os.chmod(shared_dir, 0o755)  # root's: nobody cannot create `missing` in it
    elif case == "target read-only":
        (root / "target").mkdir()
        os.chown(root / "target", 0, 0)
    elif case == "package directory read-only":
        os.chown(root, 0, 0)
    elif case == "source at mode 000":
        os.chmod(root / "src/main.cpp", 0)
    clean_failure(_as_nobody(["build"], root, home), 2 if case == "source at mode 000" else 1,
                  PERMISSION_CASES[case])


# -- nesting no parser or walk could survive, and source names no build can use -------------------

DEEP_PROGRAMS = {  # each once crashed the engine (SIGSEGV) or its evaluator; the column is the first token past 1000
    "indexing": ("x = [1]" + "[0]" * 100000 + "\n", "build.star:1:3002:"),
    "unary minus": ("x = " + "-" * 100000 + "1\n", "build.star:1:1004:"),
    "lists": ("x = " + "[" * 20000 + "]" * 20000 + "\n", "build.star:1:1004:"),
    "lambdas": ("x = " + "lambda: " * 5000 + "1\n", "build.star:1:"),
    "elif chain": ("def f(a):\n    if a == 0:\n        pass\n"
                   + "".join(f"    elif a == {i}:\n        pass\n" for i in range(1, 20000)) + "f(1)\n",
                   "build.star:"),
}
TOO_DEEP = "nests deeper than 1000 levels"


@pytest.mark.parametrize("kind", DEEP_PROGRAMS)
def test_a_deeply_nested_build_program_is_a_positioned_error(project, mcpp, kind):
    program, where = DEEP_PROGRAMS[kind]
    root = project({"mcpp.toml": MANIFEST, "build.star": program, **MAIN})
    clean_failure(mcpp("build", cwd=root, timeout=120), 2, where, TOO_DEEP)


def test_a_deeply_nested_build_program_is_a_positioned_error_through_the_server(project, mcpp):
    root = project({"mcpp.toml": MANIFEST, "build.star": DEEP_PROGRAMS["indexing"][0], **MAIN})
    on = {"MCPP_NO_SERVER": "0", "MCPP_SERVER_IDLE": "60"}
    try:
        res = mcpp("build", cwd=root, env=on, timeout=120)
        assert "server's build process died" not in res.err, res.err
        clean_failure(res, 2, "build.star:1:3002:", TOO_DEEP)
    finally:
        mcpp("server", "stop", cwd=root, env=on)


def test_a_deeply_nested_rule_file_is_a_positioned_error(project, mcpp):
    root = project({
        "rules/mcpp.toml": '[package]\nname = "rules"\nversion = "0.1.0"\n'
                           '[features.r]\nsources = ["src/r.star"]\nrule_module = "my.r"\n',
        "rules/src/r.star": "def f():\n    return [1]" + "[0]" * 100000 + "\n",
        "app/mcpp.toml": '[package]\nname = "app"\nversion = "0.1.0"\n'
                         '[dependencies]\nrules = { path = "../rules", features = ["r"] }\n',
        "app/src/main.cpp": "int main() { return 0; }\n",
        "app/build.star": 'load("my.r", "f")\n',
    })
    clean_failure(mcpp("build", cwd=root / "app", timeout=120), 2, "rules/src/r.star:2:", TOO_DEEP,
                  "note: loaded from build.star:1:1")


def test_a_program_at_the_nesting_limit_runs(project, mcpp):
    program = "x = " + "-" * 990 + "1\n" + "y = " + "[" * 990 + "]" * 990 + "\nz = y" + "[0]" * 989 + "\n"
    root = project({"mcpp.toml": MANIFEST, "build.star": program, **MAIN})
    res = mcpp("build", cwd=root, timeout=120)
    assert res.code == 0, res.err


def test_a_deeply_nested_cfg_selector_is_a_positioned_error(project, mcpp):
    cfg = "cfg(" + "not(" * 5000 + "unix" + ")" * 5000 + ")"
    root = project({"mcpp.toml": MANIFEST + f"[target.'{cfg}'.build]\ndefines = [\"X\"]\n", **MAIN})
    # `[target.'cfg(` is 13 characters; the 65th `not` opens past the limit of 64.
    clean_failure(mcpp("build", cwd=root), 2, f"mcpp.toml:4:{14 + 64 * 4}: error: malformed selector: combinators "
                  "(all, any, not) nest deeper than 64 levels")


def test_a_source_name_that_is_not_utf8_is_named(project, mcpp):
    root = project({"mcpp.toml": MANIFEST, **MAIN})
    os.close(os.open(os.fsencode(root / "src") + b"/\xff.cpp", os.O_CREAT | os.O_WRONLY, 0o644))
    clean_failure(mcpp("build", cwd=root), 2, "mcpp.toml:1:1: error: file name `src/\\xff.cpp` is not UTF-8")


@pytest.mark.parametrize("sources", [None, '["src/*.cpp"]', '["src/main.cpp", "src/x.cpp"]'])
def test_a_fifo_among_the_sources_is_named_and_never_opened(project, mcpp, sources):
    manifest = MANIFEST + (f"[build]\nsources = {sources}\n" if sources else "")
    root = project({"mcpp.toml": manifest, **MAIN})
    os.mkfifo(root / "src" / "x.cpp")
    where = "mcpp.toml:5:11:" if sources else "mcpp.toml:1:1:"
    clean_failure(mcpp("build", cwd=root, timeout=60), 2,
                  f"{where} error: `src/x.cpp` is not a regular file (a FIFO)")


def test_a_socket_header_is_named(project, mcpp):
    import socket
    root = project({"mcpp.toml": MANIFEST, **MAIN})
    sock = socket.socket(socket.AF_UNIX)
    old = os.getcwd()
    try:
        os.chdir(root / "src")  # a socket's path must be short
        sock.bind("x.h")
    finally:
        os.chdir(old)
    try:
        clean_failure(mcpp("build", cwd=root, timeout=60), 2, "error: `src/x.h` is not a regular file (a socket)")
    finally:
        sock.close()


def _load_chain(project, n: int):
    """build.star loads rule module `my.r`, whose entry r0.star loads r1.star, ..., r<n-1>.star."""
    files = {f"rules/src/r{i}.star": f'load("//src/r{i + 1}.star", "f")\n' for i in range(n - 1)}
    files[f"rules/src/r{n - 1}.star"] = "def f():\n    pass\n"
    return project({
        **files,
        "rules/mcpp.toml": '[package]\nname = "rules"\nversion = "0.1.0"\n[features.r]\nsources = ["src/*.star"]\n'
                           'rule_module = "my.r"\nrule_module_entry = "src/r0.star"\n',
        "app/mcpp.toml": '[package]\nname = "app"\nversion = "0.1.0"\n'
                         '[dependencies]\nrules = { path = "../rules", features = ["r"] }\n',
        "app/src/main.cpp": "int main() { return 0; }\n",
        "app/build.star": 'load("my.r", "f")\nf()\n',
    })


def test_a_chain_of_loads_past_the_limit_is_a_positioned_error(project, mcpp):
    root = _load_chain(project, 1500)
    clean_failure(mcpp("build", cwd=root / "app", timeout=120), 2,
                  "rules/src/r63.star:1:1: error: `load`s nest deeper than 64 files",
                  "note: loaded from build.star:1:1")


def test_a_chain_of_loads_at_the_limit_runs(project, mcpp):
    root = _load_chain(project, 64)
    res = mcpp("build", cwd=root / "app", timeout=120)
    assert res.code == 0, res.err


def test_a_fifo_build_program_is_named_and_never_opened(project, mcpp):
    root = project({"mcpp.toml": MANIFEST, **MAIN})
    os.mkfifo(root / "build.star")
    clean_failure(mcpp("build", cwd=root, timeout=60), 2, "build.star: error: `build.star` is not a regular file")


def test_read_file_of_a_fifo_is_an_error_at_the_call(project, mcpp):
    root = project({"mcpp.toml": MANIFEST, "build.star": 'x = 1\nmcpp.read_file("pipe")\n', **MAIN})
    os.mkfifo(root / "pipe")
    res = mcpp("build", cwd=root, env={"MCPP_PROGRAM_TIME_LIMIT": "20"}, timeout=60)
    clean_failure(res, 2, "build.star:2:1: error: read_file(`pipe`): not a regular file")
