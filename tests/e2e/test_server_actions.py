"""An action cannot have the warm build server work for it. Under `--sandbox dir` an action shares
the host's sockets and can name the user's server; the server refuses a peer that descends from
an action executor (sandbox/lineage.py), so nothing it would start outlives the action."""
from __future__ import annotations

import shutil
import sys

import pytest

from e2e_support import Mcpp, SERVER_ON, write_tree

pytestmark = pytest.mark.one_mode  # sets the server mode per build itself: the server-on run leaves it out

ON = SERVER_ON

ASK = ("import os, sys\n"
       "os.environ['MCPP_HOME'] = sys.argv[2]\n"
       "from mcpp.engine.server.client import request_once\n"
       "from mcpp.engine.server.paths import server_id\n"
       "reply = request_once(server_id(bytes.fromhex(sys.argv[1]).decode(), sys.argv[2]), {'op': 'status'})\n"
       "open(sys.argv[3], 'w').write('none' if reply is None else 'refused' if 'refused' in reply else 'served')\n")


def test_an_action_under_dir_is_refused_by_the_server(tmp_path, mcpp: Mcpp):
    root = tmp_path / "p"
    write_tree(root, {
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
        "src/main.cpp": "int main() { return 0; }\n",
        "build.star": f"""
out = mcpp.out_dir()
mcpp.action(id = "ask", role = "artifact", inputs = [], outputs = [out + "/answer.txt"],
            tools = [{sys.executable!r}],
            # (the root as hex: a path into the package would be rewritten to the action's own)
            argv = [{sys.executable!r}, "-c", {ASK!r}, {str(root).encode().hex()!r}, {str(mcpp.home)!r}, out + "/answer.txt"])
""",
    })
    try:
        mcpp("build", "--sandbox", "dir", cwd=root, env=ON, check=True)  # starts the server; the action asks it
        status = mcpp("server", "status", cwd=root, env=ON)
        assert "pid" in status.out, status.out + status.err
        answer = next(root.glob("target/dev/**/answer.txt"))
        assert answer.read_text() == "refused"  # from inside a build the server itself ran
        shutil.rmtree(root / "target")
        res = mcpp("build", "--sandbox", "dir", cwd=root, env={"MCPP_NO_SERVER": "1"})
        assert res.code == 0, res.err
        assert next(root.glob("target/dev/**/answer.txt")).read_text() == "refused"
    finally:
        mcpp("server", "stop", cwd=root, env=ON)
