"""A process that runs many actions, one at a time (under bwrap, any engine thread's; under
``dir``, one per engine thread).

Under bwrap, setting up and tearing down the namespaces (the network namespace above all) costs
a sizeable share of a small compile per action (bench/RESULTS.md). A worker pays it once:
it is ``bwrap <the usual prefix> --bind <slot> /execroot -- python3 -I -S -c EXECUTOR ns``, and
the executor inside runs one action per request line with exactly the action's argv,
environment and working directory. Under ``dir`` the same executor runs as a plain child of the
engine (``EXECUTOR dir``), because only a long-lived parent can be the subreaper that gets an
action's orphans back. Between two actions:

- the engine empties the slot directory (see slot.py) and stages the next action's inputs into
  it, so an action sees its own declared inputs and nothing else;
- no process of the action survives it. Inside bwrap's pid namespace one ``kill(-1, SIGKILL)``
  ends every process but the namespace's init and the executor, and a fork cannot race it (the
  kernel fails a fork whose parent has a fatal signal pending); the executor repeats until
  ``/proc`` shows no live process. Under ``dir`` the executor is a ``PR_SET_CHILD_SUBREAPER``:
  a daemonised grandchild (double fork, ``setsid``) is re-parented to it, not to the host's
  init, so killing its descendants until none is left ends them all;
- inside bwrap, it removes whatever was added to the private ``/tmp`` and ``/dev/shm`` and to
  the directories bwrap made on its own tmpfs (``/``, ``/etc``, ``/dev``), and moves to a new
  IPC namespace (``unshare(CLONE_NEWIPC)``), so no SysV shared memory segment, semaphore or
  message queue of an action is there for the next.

Inputs are hard links to the store's read-only files, and an action owns them (the namespace
maps the engine's user to itself), so mode bits alone would not stop ``chmod u+w`` and a write
that every later build would see. Under bwrap the executor keeps ``CAP_SYS_ADMIN`` in the
namespace's own user namespace, and before each action bind-mounts every staged input (``ro``:
whole directories that hold only inputs, single files elsewhere) read-only over itself; after
the action's last process is gone it answers, then unmounts them again and says so (a
``clean`` line: the engine prepares the worker's slot for another action only after it). An
unmount waits for an RCU grace period, milliseconds on a machine whose cores are compiling,
so the engine collects the outputs meanwhile and prefers an idle worker that is already clean.
A read-only mount stops a write, a ``chmod`` and a ``link`` into a writable directory
(``EXDEV``) whatever the action's uid, root included. No action gets a capability to undo it: at startup the executor empties its bounding,
inheritable and ambient sets, so every program it starts has none (root and file capabilities
included), while the executor keeps its own effective set. Doing the mounts in the executor
rather than in a mount namespace per action lets actions start with ``vfork`` and no Python in
the child.

An action with many inputs sees them as directories of its prepared tree (input_tree.py),
kept between builds under the pool's base. A bwrap worker gets that base read-only when it
starts; its executor keeps a descriptor of it and covers the path with an empty read-only tmpfs,
then binds each directory of an action's own tree read-only for that action only. An action
cannot reach the descriptor through ``/proc`` (the executor holds capabilities the action does
not, and the kernel refuses that ptrace access), so it sees its own tree and no other.

A timeout is the executor's to enforce (it kills the action's processes and answers
``timed_out``); the engine keeps a later deadline of its own and ends the whole worker if even
that passes. A worker runs one action at a time, for whichever thread took it (bwrap.py keeps
the idle ones); its ``--die-with-parent`` is tied to the thread that started it, which must live
as long as the worker is used (the scheduler's threads and the build's warm-up thread do).
Closing a worker waits for bwrap and then for the namespace's first process (bwrap's child, in
a session of its own, which --die-with-parent ends a moment later; bwrap names it on
``--info-fd``): when `Worker.close` returns, no process of the worker runs.

Only actions whose tools all live under the system roots use a bwrap worker (its mounts are
fixed when it starts); others, and actions that ask for the network, run one bwrap each.
"""
from __future__ import annotations

import json
import marshal
import os
import select
import subprocess
import sys
import time
from typing import Sequence

from .pool import SandboxPool, kill_group
from .slot import Slot

PYTHON = "/usr/bin/python3"
# where a bwrap worker's executor finds the pool's base, the directory above the prepared trees
# (hidden from actions; see EXECUTOR)
TREES_AT = "/.mcpp-sandbox"
# what a bwrap worker keeps of bwrap's --cap-drop ALL: mounting, and dropping capabilities again
WORKER_CAPS = ["--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP"]
# how long past an action's own timeout the engine waits for the executor's answer
GRACE_S = 10.0
# how long closing a worker waits for its namespace's processes to end after bwrap's own exit
NAMESPACE_END_S = 5.0

# Runs as the worker's main process (argv: ns|dir, the request pipe's descriptor, the reply
# pipe's). A request is a 4-byte length and a marshal'ed dict (`_frame`); a reply is one JSON line,
# followed by the action's stdout and stderr bytes.
EXECUTOR = r"""
# Only modules that cost nothing to import (subprocess, signal and json pull in enum and re,
# a large share of the worker's start-up): actions start with posix_spawn,
# requests come as marshal, replies go out as JSON written by hand.
import _signal, ctypes, errno, marshal, os, select, sys, time
me = os.getpid()
IN_NS = sys.argv[1] == "ns"
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans of an action come back to us

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
BASELINE = {d: listing(d) for d in ("/", "/etc", "/tmp", "/dev", "/dev/shm")} if IN_NS else {}

def remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        import shutil  # only when an action left a directory behind
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except OSError:
            pass

def processes():
    # {pid: parent pid} of every live (not zombie) process we can see
    found = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != b"Z" and fields[0] != b"X":
                found[int(name)] = int(fields[1])
    return found

def leftovers():
    # processes an action left: in a namespace, everything but its init and us; outside, our
    # descendants (a subreaper gets every orphan of theirs back as its child), parents before
    # their children, so that no shell is left alive to act on the death of its child
    procs = processes()
    if IN_NS:
        return [p for p in procs if p not in (1, me)]
    children = {}
    for pid, ppid in procs.items():
        children.setdefault(ppid, []).append(pid)
    order, level = [], children.get(me, [])
    while level:
        order += level
        level = [c for p in level for c in children.get(p, ())]
    return order

def has_children():
    # reaps what has exited; False when no child is left (the executor is a subreaper, so every
    # process an action started is its descendant until it is gone)
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                return True
        except ChildProcessError:
            return False

def kill_leftovers():
    left = leftovers()
    if IN_NS and left:
        try:
            os.kill(-1, _signal.SIGKILL)
        except OSError:
            pass
    for pid in left:
        try:
            os.kill(pid, _signal.SIGKILL)
        except OSError:
            pass

def sweep():
    # No process of an action outlives it. kill(-1) inside a pid namespace signals every
    # process but init and us in one step that a fork cannot race (the kernel refuses a fork
    # with a fatal signal pending); outside, the descendants are killed until none is left:
    # a child forked between a listing and the kills is the subreaper's at the next round.
    while has_children():
        kill_leftovers()
        time.sleep(0.0005)

def check(rc, what):
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 1, 2, 4, 8, 32, 4096
MS_REC, MS_PRIVATE, MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 16384, 1 << 18, 1024, 2048, 1 << 21
ST_FLAGS = ((os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC),
            (os.ST_NOATIME, MS_NOATIME), (os.ST_NODIRATIME, MS_NODIRATIME), (os.ST_RELATIME, MS_RELATIME))
try:
    LAST_CAP = int(open("/proc/sys/kernel/cap_last_cap").read())
except OSError:
    LAST_CAP = 40

def keep_caps_from_actions():
    # The executor keeps CAP_SYS_ADMIN (in the namespace's user namespace) in its effective set
    # to mount; an exec'd program gets (inheritable & file) | (file & bounding) | ambient, so with
    # all three empty no action gets any capability back, root and file capabilities included.
    for cap in range(LAST_CAP + 1):
        libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP
    libc.prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT_CLEAR_ALL
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    check(libc.capget(header, data), "capget")
    data[2] = data[5] = 0  # inheritable
    check(libc.capset(header, data), "capset")

CLONE_NEWIPC = 0x08000000

def fresh_ipc():
    # SysV shared memory, semaphores and message queues (and POSIX message queues) live in the
    # IPC namespace, not in any file we empty: each action gets a namespace of its own, so no
    # segment or queue of one action is there for the next. The one left behind goes when its
    # last process does (the sweep has ended them all).
    check(libc.unshare(CLONE_NEWIPC), "unshare the IPC namespace")

if IN_NS:
    keep_caps_from_actions()
    # Here, before the first answer: where it fails the worker ends unanswered, and the engine
    # runs one bwrap (with a namespace of its own) per action instead.
    fresh_ipc()
    # our read-only mounts must not propagate anywhere
    check(libc.mount(None, b"/execroot", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /execroot")

# The directory above the prepared trees (sandbox/input_tree.py; the trees are made after we
# start), bound read-only where argv[4] says: kept reachable through a descriptor of our own and
# hidden under an empty read-only tmpfs, so an action sees only the directories of its own tree
# that we bind for it. No action can open our descriptor through /proc: we hold capabilities it
# lacks, and the kernel refuses such a ptrace access.
TREES = None
if IN_NS and len(sys.argv) > 4:
    TREES = os.open(sys.argv[4], os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    check(libc.mount(b"tmpfs", sys.argv[4].encode(), b"tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                     b"size=4k,mode=0555"), "hide the prepared trees")

def bind_readonly(src, dest, done):
    check(libc.mount(src, dest, None, MS_BIND | MS_REC, None), f"bind {dest.decode()}")
    done.append(dest)
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
    held = os.statvfs(dest).f_flag
    flags |= sum(ms for st, ms in ST_FLAGS if held & st)
    check(libc.mount(None, dest, None, flags, None), f"remount {dest.decode()} read-only")

def protect(ro, trees):
    # The staged inputs are hard links to the store's files: mount each read-only for the
    # action's lifetime so that no chmod, write or link can reach them; `trees` are (a directory
    # of a prepared tree, relative to TREES, where the action sees it). Returns the mounts made.
    done = []
    try:
        for src, dest in trees:
            if TREES is None or src.startswith("/") or ".." in src.split("/"):
                raise OSError(errno.EINVAL, f"no prepared tree {src}")
            bind_readonly(f"/proc/self/fd/{TREES}/{src}".encode(), dest.encode(), done)
        for path in ro:
            bind_readonly(path.encode(), path.encode(), done)
    except OSError:
        unprotect(done)
        raise
    return done

def unprotect(done):
    for p in reversed(done):
        check(libc.umount2(p, 2), f"umount {p.decode()}")  # MNT_DETACH

def wait(pid, timeout):
    # True when the action exited before its timeout
    if timeout is not None:
        fd = os.pidfd_open(pid)
        try:
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            if not poller.poll(max(0, int(timeout * 1000))):
                return False
        finally:
            os.close(fd)
    return True

def reap(pid):
    # the exit code as subprocess reports it: -N for a death by signal N
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

def programs(name, env):
    # the files execvp would try for `name` under the action's PATH (as subprocess does with env=),
    # relative entries from the action's working directory
    if "/" in name:
        return [name]
    return [os.path.join(d, name) for d in os.get_exec_path(env)]

# Python ignores SIGPIPE (and SIGXFSZ); an exec keeps an ignored signal ignored, so an action
# gets the default back, as subprocess's restore_signals gives it.
DEFAULT_SIGNALS = (_signal.SIGPIPE, _signal.SIGXFSZ)
for fd in os.listdir("/proc/self/fd"):  # whatever the executor was started with stays out of actions
    if int(fd) > 2:
        try:
            os.set_inheritable(int(fd), False)
        except OSError:
            pass

def spawn(req, out_fd, err_fd):
    # the action's main process: its own session in a namespace, stdin from /dev/null, stdout
    # and stderr captured, the request's env and cwd (posix_spawn has no cwd: we go there and back)
    env = req["env"]
    files = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
             (os.POSIX_SPAWN_DUP2, out_fd, 1), (os.POSIX_SPAWN_DUP2, err_fd, 2)]
    os.chdir(req["cwd"])
    try:
        first = None
        for path in programs(req["argv"][0], env):
            try:
                return os.posix_spawn(path, req["argv"], env, file_actions=files, setsid=IN_NS,
                                      setsigdef=DEFAULT_SIGNALS)
            except OSError as e:  # execvp's rule: go on after these, report the first other error
                if e.errno not in (errno.ENOENT, errno.EACCES, errno.ENOEXEC, errno.ENOTDIR):
                    raise
                first = first or e
        raise first or FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))
    finally:
        os.chdir("/")

def reply(code, failure, timed_out, o, e):
    # the header line is JSON; every value is a number, a boolean or null
    fail = "null" if failure is None else ('"setup"' if failure == "setup" else str(int(failure)))
    out.write(f'{{"code": {int(code)}, "failure": {fail}, "timed_out": {"true" if timed_out else "false"}, '
              f'"out": {len(o)}, "err": {len(e)}}}\n'.encode())
    out.write(o + e)
    out.flush()

def requests(stream):
    # each request is a 4-byte little-endian length and that many bytes of marshal
    while True:
        head = stream.read(4)
        if len(head) < 4:
            return
        yield marshal.loads(stream.read(int.from_bytes(head, "little")))

# The engine's pipes come as descriptors of their own (sys.argv[2:4]), not as stdin/stdout: bwrap's
# own pid 1 in the namespace keeps stdin and stdout open, holds no capability, and runs as the
# action's user, so an action could open /proc/1/fd/0 and write requests of its own to us.
out = os.fdopen(int(sys.argv[3]), "wb")
for req in requests(os.fdopen(int(sys.argv[2]), "rb")):
    if "ping" in req:  # the engine asks whether this namespace came up: it did
        out.write(b'{"pong": 1}\n')
        out.flush()
        continue
    try:
        mounted = protect(req["ro"], req.get("trees", ()))
    except OSError as e:  # the engine runs the action another way
        reply(126, "setup", False, b"", f"the sandbox could not mount the inputs read-only: {e}".encode())
        continue
    out_fd, err_fd = capture(), capture()
    timed_out = False
    try:
        pid = spawn(req, out_fd, err_fd)
        timed_out = not wait(pid, req.get("timeout"))
        if timed_out:
            kill_leftovers()
        code = reap(pid)
        failure = None
    except OSError as e:
        code, failure = 127, e.errno or 0
    sweep()
    # No process of the action is left: its outputs in the slot are final, and the engine may
    # collect them while we tidy up. An unmount waits for an RCU grace period, which takes
    # milliseconds on a machine whose cores are busy compiling. The engine touches the slot
    # again (or sends another action) only after the "clean" line.
    reply(code, failure, timed_out, read_all(out_fd), read_all(err_fd))
    unprotect(mounted)
    if IN_NS:
        fresh_ipc()
    for d, before in BASELINE.items():
        for name in listing(d) - before:
            remove(os.path.join(d, name))
    out.write(b'{"clean": 1}\n')
    out.flush()
"""


def _frame(request: dict[str, object]) -> bytes:
    """A request as the executor reads it: a 4-byte little-endian length, then marshal (plain
    strings, numbers, lists and dicts: what the executor gets without importing json)."""
    data = marshal.dumps(request, 4)  # a version every Python 3 reads, whichever runs the executor
    return len(data).to_bytes(4, "little") + data


class ForeignProcess:
    """A worker's process that another process started and handed to this one (a warm server
    starts a build child's first worker between builds: engine/server/sandbox_ahead.py): not this
    process's child, so it is watched through a pidfd instead of waited for. Its exit status is
    its parent's to read; here an ended worker reads as killed."""

    def __init__(self, pid: int, pidfd: int) -> None:
        self.pid = pid
        self._pidfd: int | None = pidfd
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and self._pidfd is not None and select.select([self._pidfd], [], [], 0)[0]:
            self._ended()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        if self.returncode is None and self._pidfd is not None:
            if select.select([self._pidfd], [], [], timeout)[0]:
                self._ended()
        return self.returncode

    def _ended(self) -> None:
        self.returncode = -9
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None


class WorkerFailed(Exception):
    """The worker process is gone (or never came up); the action did not run to an answer."""


class Worker:
    """``prefix`` is the bwrap command line that wraps the executor (``[]`` for ``dir``);
    ``trees``: the directory above the prepared trees (input_tree.py: the pool's base), which
    it may bind from (bwrap only)."""

    def __init__(self, prefix: list[str], slot: str, pool: SandboxPool, trees: str | None = None) -> None:
        self.slot = Slot(slot)
        self.pool = pool
        self.in_ns = bool(prefix)
        self.answered = 0  # actions this worker ran to an answer: 0 means it may never have worked
        self.unusable = False  # it could not give an action its read-only inputs
        # It answered an action and has not yet said it tidied up after it (`await_clean`).
        self.cleaning = False
        # Requests and replies go through pipes passed as descriptors 3 and up, never as the
        # worker's stdin/stdout: inside bwrap those would also be held by bwrap's pid 1, whose
        # /proc/1/fd an action may open (it runs as the same user and has no capability).
        requests_r, requests_w = os.pipe()
        replies_r, replies_w = os.pipe()
        fds = [str(requests_r), str(replies_w)]
        passed = [requests_r, replies_w]
        # Under bwrap, the namespace's first process is bwrap's child in a session of its own,
        # which killing bwrap's group does not reach: it ends through --die-with-parent, a moment
        # after bwrap. bwrap says its pid on --info-fd, so that `close` can wait for it too.
        self._info: int | None = None
        if self.in_ns:
            self._info, info_w = os.pipe()
            os.set_blocking(self._info, False)
            passed.append(info_w)
            shown = ["--ro-bind", trees, TREES_AT] if trees is not None else []
            argv = [*prefix, *WORKER_CAPS, "--info-fd", str(info_w), "--bind", slot, "/execroot", *shown,
                    "--chdir", "/", "--",
                    PYTHON, "-I", "-S", "-c", EXECUTOR, "ns", *fds, *([TREES_AT] if trees is not None else [])]
        else:
            argv = [sys.executable, "-I", "-S", "-c", EXECUTOR, "dir", *fds]
        try:
            self.proc = subprocess.Popen(argv, env={}, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True,
                                         pass_fds=passed, cwd="/")
        except BaseException:
            for fd in (requests_w, replies_r, self._info):
                if fd is not None:
                    os.close(fd)
            raise
        finally:
            for fd in passed:
                os.close(fd)
        pool.track(self.proc)
        self._requests = os.fdopen(requests_w, "wb")
        self._replies: int | None = replies_r
        self._buf = b""

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def let_go(self) -> subprocess.Popen[bytes]:
        """In the process that started this worker, once a fork of it has taken the worker over
        (`take_over`): close this process's ends of its pipes without ending it, so that the
        worker's only requester is the fork (its end ends the worker's requests, and the
        worker), and forget it. The process, still this one's child, is returned to be reaped."""
        self.pool.untrack(self.proc)
        self._requests.close()
        if self._replies is not None:
            os.close(self._replies)
            self._replies = None
        self._forget_info()
        return self.proc

    def take_over(self, pidfd: int) -> None:
        """In a fork of the process that started this worker: it is this process's now, watched
        through `pidfd` (opened by the starter before the fork), since it is not its child."""
        self.pool.untrack(self.proc)
        self.proc = ForeignProcess(self.proc.pid, pidfd)  # type: ignore[assignment]
        self.pool.track(self.proc)

    @property
    def closed(self) -> bool:
        """Closed (`close`): its replies are never read again."""
        return self._replies is None

    def execute(self, argv: list[str], env: dict[str, str], cwd: str, timeout: float | None,
                ro: Sequence[str] = (), trees: Sequence[tuple[str, str]] = ()) -> tuple[int, bool, bytes, bytes]:
        """Run one action; (exit code, timed out, stdout, stderr) as `run_group` answers. `ro`:
        paths (as the action sees them) mounted read-only for this action (bwrap only); `trees`:
        (a prepared tree's directory relative to the worker's ``trees``, where the action sees
        it), bound read-only for this action."""
        request = _frame({"argv": list(argv), "env": dict(env), "cwd": cwd, "timeout": timeout, "ro": list(ro),
                          "trees": [list(t) for t in trees]})
        self.await_clean(None)
        try:
            self._requests.write(request)
            self._requests.flush()
        except (BrokenPipeError, OSError) as e:
            self.close()
            raise WorkerFailed(f"the sandbox worker is gone: {e}") from None
        deadline = None if timeout is None else time.monotonic() + timeout + GRACE_S
        header = self._read_line(deadline)
        if header is None:  # the executor did not answer: ending the worker ends the action
            self.close()
            return -9, True, b"", b""
        reply = json.loads(header)
        body = self._read_exact(reply["out"] + reply["err"])
        if reply["failure"] == "setup":  # no mounts here (a kernel or bwrap that refuses them)
            self.unusable = True
            self.close()
            raise WorkerFailed(body[reply["out"]:].decode(errors="replace").strip())
        self.answered += 1
        self.cleaning = True
        if reply["failure"] is not None:  # as Popen outside would: the caller reports it
            raise OSError(reply["failure"], os.strerror(reply["failure"]))
        return reply["code"], reply["timed_out"], body[: reply["out"]], body[reply["out"]:]

    def await_clean(self, timeout: float | None) -> bool:
        """Whether the executor has tidied up after the last action it answered (its read-only
        mounts undone, /tmp emptied): only then may the slot be prepared for another. Waits up
        to `timeout` seconds (0: not at all; None: as long as it takes). WorkerFailed: it is gone."""
        if not self.cleaning:
            return True
        line = self._read_line(None if timeout is None else time.monotonic() + timeout)
        if line is None:
            return False
        if line != b'{"clean": 1}':
            self.close()
            raise WorkerFailed(f"the sandbox worker said {line[:80]!r} after an action")
        self.cleaning = False
        return True

    def send_ping(self) -> bool:
        """Ask the worker to answer once it is up (`pong` reads the answer); False when it is
        already gone."""
        try:
            self._requests.write(_frame({"ping": 1}))
            self._requests.flush()
            return True
        except OSError:
            self.close()
            return False

    def pong(self, timeout: float) -> bool:
        """Whether the worker answered `send_ping` within `timeout` seconds: the namespace was
        made, the executor's Python started and kept its mount capability (which is all the
        bwrap probe shows, and more). A worker that does not answer is closed."""
        try:
            line = self._read_line(time.monotonic() + timeout)
        except (OSError, WorkerFailed):
            line = None
        if line is not None and json.loads(line) == {"pong": 1}:
            return True
        self.close()
        return False

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
        fd = self._replies
        assert fd is not None, "a closed worker is never read"
        if deadline is not None:
            if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
                return False
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            self.close()
            raise WorkerFailed("the sandbox worker exited")
        self._buf += chunk
        return True

    def close(self) -> None:
        """End the worker and every process in it: when this returns, none of them is running
        (a zombie at most), so nothing of the worker outlives the build that closes it."""
        if self.proc.returncode is None:
            kill_group(self.proc.pid)
        try:
            self.proc.wait()
            self._await_namespace_end()
        finally:
            self.pool.untrack(self.proc)
            try:
                self._requests.close()
            except OSError:
                pass
            if self._replies is not None:
                os.close(self._replies)
                self._replies = None
            self._forget_info()

    def _await_namespace_end(self) -> None:
        """Once bwrap has exited, wait (up to NAMESPACE_END_S) for the namespace's first process,
        which --die-with-parent ends: its exit comes after every other process in the namespace
        has ended (the kernel ends them all when a pid namespace's init exits)."""
        if self._info is None:
            return
        try:  # what bwrap wrote before it exited, if anything (a non-blocking read)
            said = os.read(self._info, 4096)
            child = json.loads(said)["child-pid"] if said else None
        except (OSError, ValueError, KeyError, TypeError):
            child = None
        if not isinstance(child, int):
            return
        try:
            pidfd = os.pidfd_open(child)
        except OSError:  # already reaped
            return
        try:
            select.select([pidfd], [], [], NAMESPACE_END_S)
        finally:
            os.close(pidfd)

    def _forget_info(self) -> None:
        if self._info is not None:
            os.close(self._info)
            self._info = None

