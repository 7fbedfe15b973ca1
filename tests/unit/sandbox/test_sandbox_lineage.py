"""sandbox/lineage.py: a process inside an action is told apart by its ancestry, which the
action cannot leave (the executor is a subreaper), so the build server can refuse it."""
from __future__ import annotations

import os
import subprocess
import sys

from mcpp.sandbox.lineage import inside_action


def test_a_process_is_inside_an_action_only_below_an_executor_or_a_named_ancestor(make, mkspec, tmp_path):
    assert not inside_action(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert inside_action(child.pid, (os.getpid(),))
        assert not inside_action(child.pid)
    finally:
        child.kill()
        child.wait()
    # A dir action (a double-forked daemon of it, even) asks about itself.
    probe = (f"import os, sys; sys.path[:0] = {sys.path!r}; "
             "from mcpp.sandbox.lineage import inside_action; "
             "pid = os.fork()\n"
             "if pid == 0:\n"
             "    os.setsid()\n"
             "    if os.fork() == 0:\n"
             "        open('out/seen', 'w').write(str(inside_action(os.getpid())))\n"
             "    os._exit(0)\n"
             "os.waitpid(pid, 0)\n"
             "import time\n"
             "for _ in range(200):\n"
             "    if os.path.exists('out/seen') and open('out/seen').read(): break\n"
             "    time.sleep(0.01)\n")
    sb = make("dir")
    r = sb.run(mkspec([sys.executable, "-c", probe], outputs=("out/seen",), label="//t:lineage"))
    assert r.exit_code == 0, r.stderr
    assert open(r.outputs["out/seen"]).read() == "True"
