"""No process of an action outlives it. The attacker below leaves behind a process that keeps
forking (each generation writes, forks the next and exits, so its pid never stays the same) in
a session of its own, and rewrites the output of the next action run in the same place."""
from __future__ import annotations

import pytest

from tests.e2e.e2e_support import Mcpp

# argv[1]: the path to overwrite, as the action sees it. Stops by itself after 20 s.
ATTACKER = r"""
import os, subprocess, sys, time
target, end = sys.argv[1], time.time() + 20
# idle processes first: a sweep that kills what one listing showed takes longer to reach the
# forking ones, so their children are born after the listing
sleepers = [subprocess.Popen(['/bin/sleep', '30']) for _ in range(300)]
for _ in range(32):
    if os.fork() == 0:
        os.setsid()
        while time.time() < end:
            try:
                with open(target, 'w') as f:
                    f.write('EVIL\n')
            except OSError:
                pass
            if os.fork():
                os._exit(0)
        os._exit(0)
open(sys.argv[2], 'w').write('a\n')
"""

VICTIM = r"""
import sys, time
time.sleep(0.3)
open(sys.argv[1], 'w').write('good\n')
time.sleep(0.5)
"""


ROUNDS = 4  # on a one-listing sweep each round is lost about half the time


def build_star() -> str:
    """Rounds of (attacker a<i>, victim b<i>), each after the one before, in one sandbox slot."""
    text = "out = mcpp.out_dir()\nrel = out[len(mcpp.manifest_dir()) + 1:]\n"
    after = []
    for i in range(ROUNDS):
        text += f"""
mcpp.action(id = "a{i}", argv = ["/usr/bin/python3", "-c", {ATTACKER!r}, "@@EXECROOT@@/" + rel + "/b{i}.txt",
                               out + "/a{i}.txt"],
            inputs = {after!r}, outputs = [out + "/a{i}.txt"], tools = ["/usr/bin/python3"], role = "check")
mcpp.action(id = "b{i}", argv = ["/usr/bin/python3", "-c", {VICTIM!r}, out + "/b{i}.txt"],
            inputs = [out + "/a{i}.txt"], outputs = [out + "/b{i}.txt"], tools = ["/usr/bin/python3"],
            role = "check")
"""
        after = [f"target/dev/.mcpp/gen/p/b{i}.txt"]
    return text


@pytest.mark.parametrize("sandbox", ["bwrap", "dir"])
def test_a_forking_process_left_by_an_action_cannot_rewrite_a_later_output(project, mcpp: Mcpp, sandbox):
    root = project({
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
        "src/main.cpp": "int main() { return 0; }\n",
        "build.star": build_star(),
    })
    res = mcpp("build", "-j", "1", "--sandbox", sandbox, cwd=root)
    assert res.code == 0, res.err
    for i in range(ROUNDS):
        assert (root / f"target/dev/.mcpp/gen/p/b{i}.txt").read_text() == "good\n"
