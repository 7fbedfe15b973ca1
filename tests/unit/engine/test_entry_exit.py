"""The `mcpp` process ends without the interpreter's teardown (engine/entry.py `_exit`), yet as
its exit would: threads that are not daemons finish, exit functions run, output is flushed."""
from __future__ import annotations

import subprocess
import sys
import textwrap


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
