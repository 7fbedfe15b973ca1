"""`mcpp.probe` (docs/rules.md, "Probes"): a program runs a tool at evaluation time, in the
sandbox, and gets struct(code, stdout, stderr); the answer is cached and follows the tool's
inputs."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.e2e.e2e_support import Mcpp

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

MANIFEST = '[package]\nname = "p"\nversion = "0.1.0"\n'
MAIN = '#include <cstdio>\nint main() { std::printf("%s|%s|%d|%s\\n", GXX, DATA, CODE, ERR); }\n'
PROGRAM = """
gxx = mcpp.probe(["g++", "-dumpversion"])
data = mcpp.probe(["/bin/cat", "conf/data.txt"], inputs = ["conf/data.txt"])
bad = mcpp.probe(["/bin/sh", "-c", "echo oops >&2; exit 3"])
mcpp.define('GXX="%s"' % gxx.stdout.strip())
mcpp.define('DATA="%s"' % data.stdout.strip())
mcpp.define("CODE=%d" % bad.code)
mcpp.define('ERR="%s"' % bad.stderr.strip())
"""


def test_a_probe_answers_code_stdout_stderr_and_follows_its_inputs(project, mcpp: Mcpp):
    root = project({"mcpp.toml": MANIFEST, "src/main.cpp": MAIN, "build.star": PROGRAM, "conf/data.txt": "one\n"})
    version = subprocess.run(["g++", "-dumpversion"], capture_output=True, text=True).stdout.strip()
    res = mcpp("run", cwd=root)
    assert res.code == 0, res.err
    assert res.out.strip().splitlines()[-1] == f"{version}|one|3|oops"
    (root / "conf" / "data.txt").write_text("two\n")
    res = mcpp("run", cwd=root)
    assert res.code == 0, res.err
    assert res.out.strip().splitlines()[-1] == f"{version}|two|3|oops"


def test_a_probe_sees_only_what_it_declares(project, mcpp: Mcpp):
    root = project({
        "mcpp.toml": MANIFEST, "src/main.cpp": 'int main() { return 0; }\n', "secret.txt": "s3cret\n",
        "build.star": 'r = mcpp.probe(["/bin/cat", mcpp.manifest_dir() + "/secret.txt"])\n'
                      'mcpp.warning("code=%d out=%s" % (r.code, r.stdout.strip()))\n',
    })
    res = mcpp("build", "--sandbox", "bwrap", cwd=root)
    assert res.code == 0, res.err
    assert "code=1 out=\n" in res.err or "code=1 out=" in res.err, res.err
    assert "s3cret" not in res.err


@pytest.mark.parametrize("call,message", [
    ('mcpp.probe(["/no/such/tool", "-v"])', "probe(): tool `/no/such/tool` does not exist or is not executable"),
    ('mcpp.probe(["no-such-tool-xyz"])', "probe(): `no-such-tool-xyz` is not found on the actions' PATH"),
    ('mcpp.probe("g++")', "probe(): argv must be a list of strings"),
    ('mcpp.probe([])', "probe(): argv is empty"),
    ('mcpp.probe(["/bin/true"], inputs = ["missing.txt"])', "probe(): input `missing.txt` does not exist"),
    ('mcpp.probe(["/bin/true"], tools = ["gcc"])', "probe(): tool `gcc` must be an absolute path"),
    ('mcpp.probe(["/bin/true"], reads = ["rel.h"])', "probe(): read `rel.h` must be an absolute path"),
    ('mcpp.probe(["/bin/true"], reads = ["/root/.ssh/id_rsa"])',
     "probe(): read `/root/.ssh/id_rsa` is neither under the system directories nor under the root of a tool"),
])
def test_probe_errors_are_positioned_at_the_call(project, mcpp: Mcpp, call, message):
    root = project({"mcpp.toml": MANIFEST, "src/main.cpp": "int main() { return 0; }\n",
                    "build.star": "x = 1\nr = " + call + "\n"})
    res = mcpp("build", cwd=root)
    assert res.code == 2, res.err
    first = res.err.splitlines()[0]
    assert first.startswith(f"build.star:2:1: error: {message}"), res.err
    assert "<mcpp prelude>" not in res.err and "Traceback" not in res.err.replace("call stack", "")


def test_an_unchanged_probe_is_answered_from_the_cache_when_the_program_re_evaluates(project, mcpp: Mcpp):
    # A probe whose answer changes on every run shows whether it ran again.
    program = ('r = mcpp.probe(["/bin/sh", "-c", "echo $$-$(date +%N)"])\n'
               'mcpp.warning("answer=" + r.stdout.strip())\n')
    root = project({"mcpp.toml": MANIFEST, "src/main.cpp": "int main() { return 0; }\n", "build.star": program})
    first = mcpp("build", cwd=root)
    assert first.code == 0, first.err
    (root / "build.star").write_text("# edited: the program runs again\n" + program)
    again = mcpp("build", cwd=root)
    assert again.code == 0, again.err
    answer = [line for line in first.err.splitlines() if "answer=" in line]
    assert answer and answer == [line for line in again.err.splitlines() if "answer=" in line]


def test_a_probe_answered_under_dir_is_not_reused_by_a_bwrap_build(project, mcpp: Mcpp, tmp_path):
    """dir cannot confine what a probe reads (here a file outside the package, by absolute path):
    its answer, and the evaluation that used it, are kept apart from what a bwrap build takes."""
    outside = tmp_path / "outside.txt"
    outside.write_text("seen-by-dir\n")
    program = (f'r = mcpp.probe(["/bin/sh", "-c", "cat {outside} 2>/dev/null || echo hidden"])\n'
               'mcpp.define(\'DATA="%s"\' % r.stdout.strip())\n')
    main = '#include <cstdio>\nint main() { std::puts(DATA); }\n'
    root = project({"mcpp.toml": MANIFEST, "src/main.cpp": main, "build.star": program})
    res = mcpp("run", "--sandbox", "dir", cwd=root)
    assert res.code == 0 and res.out.strip().splitlines()[-1] == "seen-by-dir", res.err
    res = mcpp("run", "--sandbox", "bwrap", cwd=root)  # same target/: the probe runs again, confined
    assert res.code == 0 and res.out.strip().splitlines()[-1] == "hidden", res.err


def test_a_probe_answer_follows_the_files_it_reads_outside_the_package(project, mcpp: Mcpp, tmp_path):
    """`reads`: a toolkit's header read in place keys the answer, so a changed header, or one that
    appears, is asked again instead of answered from the cache."""
    kit = tmp_path / "toolkit" / "include"
    kit.mkdir(parents=True)
    (tmp_path / "toolkit" / "bin").mkdir()
    shutil.copy2("/bin/cat", tmp_path / "toolkit" / "bin" / "cat")  # the toolkit's root is the probe's to see
    header, later = kit / "host_config.h", kit / "later.h"
    header.write_text("12\n")
    program = (f'r = mcpp.probe(["/bin/sh", "-c", "cat {header}; cat {later} 2>/dev/null; true"], '
               f'tools = ["{tmp_path}/toolkit/bin/cat"], reads = ["{header}", "{later}"])\n'
               'mcpp.define(\'DATA="%s"\' % " ".join(r.stdout.split()))\n')
    root = project({"mcpp.toml": MANIFEST, "src/main.cpp": '#include <cstdio>\nint main() { std::puts(DATA); }\n',
                    "build.star": program})
    assert mcpp("run", cwd=root).out.strip().splitlines()[-1] == "12"
    header.write_text("14\n")
    assert mcpp("run", cwd=root).out.strip().splitlines()[-1] == "14"
    later.write_text("late\n")
    assert mcpp("run", cwd=root).out.strip().splitlines()[-1] == "14 late"
