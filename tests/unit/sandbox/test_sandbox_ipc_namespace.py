"""SysV IPC under bwrap: a worker (sandbox/worker.py) runs many actions in one namespace, and each
action still gets an IPC namespace of its own, so a shared memory segment or a message queue
one action leaves is not there for the next (which, on `mcpp worker`, is another client's)."""
from __future__ import annotations

import os

import pytest

from mcpp.sandbox.slot import SLOT_SUFFIX

# Plants (argv[1] == "plant") or looks for (anything else) a SysV shared memory segment holding a
# marker and a message queue, both under one fixed key; ctypes, so nothing needs compiling.
PROBE = r"""
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
KEY, IPC_CREAT, MARK = 0x6d637070, 0o1000, b"left by the action before"
if sys.argv[1] == "plant":
    seg = libc.shmget(KEY, 4096, IPC_CREAT | 0o600)
    ctypes.memmove(libc.shmat(seg, None, 0), MARK, len(MARK))
    print("planted", seg >= 0 and libc.msgget(KEY, IPC_CREAT | 0o600) >= 0)
else:
    seg = libc.shmget(KEY, 0, 0)
    print("segment", ctypes.string_at(libc.shmat(seg, None, 0), len(MARK)).decode() if seg >= 0 else None)
    print("queue", libc.msgget(KEY, 0) >= 0)
"""


def test_an_action_in_a_warm_worker_sees_no_sysv_ipc_of_the_one_before(make, mkspec, work_root):
    sb = make("bwrap")  # skips where bwrap cannot run
    if not sb.use_workers:
        pytest.skip("no /usr/bin/python3: one bwrap per action, each with a namespace of its own")
    plant = sb.run(mkspec(["/usr/bin/python3", "-c", PROBE, "plant"]))
    assert plant.stdout == b"planted True\n", plant.stderr
    look = sb.run(mkspec(["/usr/bin/python3", "-c", PROBE, "look"]))
    assert look.exit_code == 0, look.stderr
    assert look.stdout.decode().splitlines() == ["segment None", "queue False"]
    slots = [n for n in os.listdir(os.path.join(work_root, "sandbox")) if n.endswith(SLOT_SUFFIX)]
    assert len(slots) == 1  # one warm worker ran both
