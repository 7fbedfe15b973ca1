"""The `mcpp` process ends without the interpreter's teardown (engine/entry.py `_exit`), yet as
its exit would: threads that are not daemons finish, exit functions run, output is flushed."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time


def test_an_exit_without_teardown_still_finishes_threads_exit_functions_and_output(tmp_path):
    script = textwrap.dedent(f"""
        import atexit, sys, threading, time
        from mcpp.engine.entry import _exit

        def late():
            time.sleep(0.2)
            open({str(tmp_path / "thread")!r}, "w").close()

        threading.Thread(target=late).start()
        atexit.register(lambda: open({str(tmp_path / "atexit")!r}, "w").close())
        sys.stdout.write("held in the buffer")  # no newline, no flush
        sys.stderr.write("and this")
        _exit(3)
        print("never")
    """)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert res.returncode == 3
    assert res.stdout == "held in the buffer" and res.stderr == "and this"
    assert (tmp_path / "thread").exists() and (tmp_path / "atexit").exists()


def test_what_is_left_to_the_server_is_written_by_a_copy_that_holds_none_of_the_commands_descriptors(tmp_path):
    """`_hand_on`: the command returns at once; a forked copy writes the bequest (here a slow
    one) and starts the server, holding neither the command's output nor any other descriptor
    it had (a caller's pipe sees its end when the command exits, not when the copy does)."""
    script = textwrap.dedent(f"""
        import os, sys, time
        from mcpp.engine.entry import _exit, _hand_on

        class Slow:
            def leave(self, code):
                time.sleep(1.0)
                with open({str(tmp_path / "bequest")!r}, "w") as f:
                    f.write(f"{{code}} {{os.getpid()}} {{os.getsid(0)}}")

        extra = int(sys.argv[1])  # the write end of the caller's other pipe
        started = []
        _hand_on(Slow(), [lambda: started.append(1)], 7)
        print("returned", os.getpid(), flush=True)
        _exit(0)
    """)
    out_r, out_w = os.pipe()
    extra_r, extra_w = os.pipe()
    began = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", script, str(extra_w)], stdout=out_w, pass_fds=(extra_w,))
    os.close(out_w)
    os.close(extra_w)
    with os.fdopen(out_r) as out, os.fdopen(extra_r, "rb") as extra:
        text = out.read()  # EOF: every holder of the write end has closed it
        assert extra.read() == b""
        ended = time.monotonic() - began
    assert proc.wait(10) == 0 and text.split()[0] == "returned"
    assert ended < 0.9, f"the caller's pipes ended {ended:.2f} s after the start: the copy held them"
    deadline = time.monotonic() + 10
    while not (tmp_path / "bequest").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    code, pid, sid = (tmp_path / "bequest").read_text().split()
    assert code == "7" and int(pid) != proc.pid and int(sid) == int(pid)  # its own session
