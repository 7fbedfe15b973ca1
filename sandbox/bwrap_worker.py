"""A bwrap namespace that lives for many actions: one per engine worker thread.

Setting up and tearing down bwrap's namespaces (the network namespace above all) costs about
7 ms per action on the development VMs, a fifth of a small compile. A worker pays it once: it
is ``bwrap <the usual prefix> --bind <slot> /execroot -- python3 -I -S -c EXECUTOR``, and the
executor inside runs one action per request line, each as its own session, with exactly the
action's argv, environment and working directory. Between two actions:

- the engine empties the slot directory (the worker's ``/execroot``, see slot.py) and stages
  the next action's inputs into it, so an action sees its own declared inputs and nothing else;
- the executor kills every process left in the namespace but itself and bwrap's init, and
  removes whatever was added to the private ``/tmp`` and ``/dev/shm`` and to the directories
  bwrap made on its own tmpfs (``/``, ``/etc``, ``/dev``).

So each action still sees only its inputs, no network, a cleared environment and a private
``/tmp``; what it shares with the action before it is the namespace's identity, not any file.
A timeout kills the whole worker (its pid namespace ends every process in it); the next action
starts a fresh one. A worker belongs to the thread that started it: ``--die-with-parent`` is
tied to that thread, and one thread runs one action at a time.

Only actions whose tools all live under the system roots use a worker (the worker's mounts are
fixed when it starts); others, and actions that ask for the network, run one bwrap each.
"""
from __future__ import annotations

import json
import os
import select
import subprocess
import time

from .pool import SandboxPool, kill_group
from .slot import Slot

PYTHON = "/usr/bin/python3"

# Runs inside the namespace as the worker's main process. Requests and responses are one JSON
# line each; a response is followed by the action's stdout and stderr bytes.
EXECUTOR = r"""
import json, os, shutil, signal, subprocess, sys
me = os.getpid()

def capture():
    return os.memfd_create("mcpp-action", os.MFD_CLOEXEC)

def read_all(fd):
    size = os.lseek(fd, 0, os.SEEK_END)
    os.lseek(fd, 0, os.SEEK_SET)
    data = os.read(fd, size) if size else b""
    while len(data) < size:
        data += os.read(fd, size - len(data))
    os.close(fd)
    return data

def listing(d):
    try:
        return set(os.listdir(d))
    except OSError:
        return set()

# bwrap's root and /etc are a tmpfs it made: what an action adds there must not reach the next one
BASELINE = {d: listing(d) for d in ("/", "/etc", "/tmp", "/dev", "/dev/shm")}

def remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except OSError:
            pass

def reset():
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in (1, me):
            try:
                os.kill(int(name), signal.SIGKILL)
            except OSError:
                pass
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break
    for d, before in BASELINE.items():
        for name in listing(d) - before:
            remove(os.path.join(d, name))

out = sys.stdout.buffer
for line in sys.stdin.buffer:
    req = json.loads(line)
    out_fd, err_fd = capture(), capture()
    try:
        proc = subprocess.Popen(req["argv"], env=req["env"], cwd=req["cwd"], stdin=subprocess.DEVNULL,
                                stdout=out_fd, stderr=err_fd, start_new_session=True, close_fds=True)
        code = proc.wait()
        failure = None
    except OSError as e:
        code, failure = 127, [e.errno, e.strerror]
    reset()
    o, e = read_all(out_fd), read_all(err_fd)
    out.write(json.dumps({"code": code, "failure": failure, "out": len(o), "err": len(e)}).encode() + b"\n")
    out.write(o + e)
    out.flush()
"""


class WorkerFailed(Exception):
    """The worker process is gone (or never came up); the action did not run to an answer."""


class BwrapWorker:
    def __init__(self, prefix: list[str], slot: str, pool: SandboxPool) -> None:
        self.slot = Slot(slot)
        self.pool = pool
        self.answered = 0  # actions this worker ran to an answer: 0 means it may never have worked
        argv = [*prefix, "--bind", slot, "/execroot", "--chdir", "/", "--", PYTHON, "-I", "-S", "-c", EXECUTOR]
        self.proc = subprocess.Popen(argv, env={}, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
        pool.track(self.proc)
        self._buf = b""

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def execute(self, argv: list[str], env: dict[str, str], cwd: str,
                timeout: float | None) -> tuple[int, bool, bytes, bytes]:
        """Run one action inside; (exit code, timed out, stdout, stderr) as `run_group` answers."""
        request = json.dumps({"argv": argv, "env": env, "cwd": cwd}).encode() + b"\n"
        try:
            self.proc.stdin.write(request)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            self.close()
            raise WorkerFailed(f"the sandbox worker is gone: {e}") from None
        deadline = None if timeout is None else time.monotonic() + timeout
        header = self._read_line(deadline)
        if header is None:  # timed out: ending the worker ends its pid namespace, the action with it
            self.close()
            return -9, True, b"", b""
        reply = json.loads(header)
        body = self._read_exact(reply["out"] + reply["err"])
        self.answered += 1
        if reply["failure"] is not None:  # as Popen outside would: the caller reports it
            raise OSError(*reply["failure"])
        return reply["code"], False, body[: reply["out"]], body[reply["out"]:]

    def _read_line(self, deadline: float | None) -> bytes | None:
        """The next line from the worker; None when `deadline` passes first."""
        while b"\n" not in self._buf:
            if not self._fill(deadline):
                return None
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def _read_exact(self, n: int) -> bytes:
        while len(self._buf) < n:
            self._fill(None)
        data, self._buf = self._buf[:n], self._buf[n:]
        return data

    def _fill(self, deadline: float | None) -> bool:
        """Read what the worker has written; False when `deadline` passed with nothing to read."""
        fd = self.proc.stdout.fileno()
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return False
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            self.close()
            raise WorkerFailed("the sandbox worker exited")
        self._buf += chunk
        return True

    def close(self) -> None:
        if self.proc.returncode is None:
            kill_group(self.proc.pid)
        try:
            self.proc.wait()
        finally:
            self.pool.untrack(self.proc)
            for stream in (self.proc.stdin, self.proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass

