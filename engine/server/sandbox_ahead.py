"""The sandbox a warm server begins between builds, for the next build child to take over.

A child forked at the request starts its sandbox's first worker (bwrap and the executor's
Python: 15-20 ms alone, twice that on two cores shared with the client and the child's own
planning) before its first action can run. A spare (spare.py) has one up already, but a spare
is forked only once the server has been idle a moment (20 ms) after the last build's
hand-off: builds a script runs back to back never find one. So once a build has answered its
client, the server itself begins the sandbox the last successful build used
(engine/exec/sandbox_warm_up.py `SandboxAhead`: bwrap's first worker started and asked to
answer; no thread, the server stays single-threaded), and the next fork it makes, a build
child or a spare, takes it over: the fork reads the worker's answer and runs the build's
actions in it, watching its process through a pidfd (it is not the fork's child). The server
lets go at once: it closes its ends of the worker's pipes and keeps only the process, its
child, to reap when it exits.

The worker is started from the server's main thread, which lives as long as the server
(bwrap's ``--die-with-parent``). It has run no action when a fork takes it, and one fork takes
it: `take` hands it out once, the server's ends of its pipes are closed before the next fork,
and a fork that does not take it (a build that will probably run nothing, a no-op's: it would
only end the worker) lets go of its copies at once (`in_fork`). A worker for other settings (another
``--sandbox``, a payload root installed since it started) is not used by the build (the
warm-up's `fits`) but ended after the reply, as a spare's is.
"""
from __future__ import annotations

import os
import subprocess
from typing import Callable

from ..exec.sandbox_warm_up import SandboxAhead


class SandboxesAhead:
    """The server's side: the sandbox it holds for the next fork, and the workers of those it
    handed over, to reap."""

    def __init__(self, log: Callable[[str], None]) -> None:
        self.log = log
        self.held: SandboxAhead | None = None
        self.handed: dict[int, subprocess.Popen[bytes]] = {}  # pidfd -> a worker a fork took over
        self.begun = 0  # sandboxes begun ahead (`mcpp server status`)
        self.taken = 0  # ... and taken over by a fork

    def begin(self, settings: tuple | None) -> None:
        """Hold a sandbox begun for `settings` (the last successful build's), unless one is
        held for them already whose worker still runs; only a bwrap one (the other sandboxes
        start no worker)."""
        held = self.held
        if held is not None and held.settings == settings and held.begun.worker is not None \
                and held.begun.worker.alive:
            return
        self.close()
        if settings is None or settings[0] not in (None, "bwrap"):
            return
        try:
            ahead = SandboxAhead(settings)
        except Exception as e:  # noqa: BLE001 - only a head start: the build begins its own
            self.log(f"no sandbox begun ahead: {e}")
            return
        if not ahead.begun.open_pidfd():  # no worker (no bwrap here), or no pidfds
            ahead.begun.close()
            return
        self.held = ahead
        self.begun += 1

    def take(self) -> SandboxAhead | None:
        """What the fork about to be made takes over; held no more."""
        ahead, self.held = self.held, None
        return ahead

    def give_back(self, ahead: SandboxAhead) -> None:
        """The fork that took `ahead` could not be made: hold it again, for the next fork."""
        self.close()  # none is held between a `take` and its fork; one would be ended
        self.held = ahead

    def handed_over(self, ahead: SandboxAhead) -> int:
        """In the server, once the fork has it: let go of it; the pidfd to watch for the
        worker's end (`reap`)."""
        proc = ahead.begun.let_go()
        pidfd = ahead.begun.pidfd
        assert pidfd is not None, "a held sandbox has its worker's pidfd (`begin`)"
        self.handed[pidfd] = proc
        self.taken += 1
        return pidfd

    def reap(self, pidfd: int) -> None:
        """A handed-over worker exited (its build ended it, or died): collect its status."""
        proc = self.handed.pop(pidfd, None)
        os.close(pidfd)
        if proc is not None:
            proc.wait()

    def in_fork(self) -> None:
        """In a fork: the pidfds of workers handed to earlier forks are not its own to watch, and
        a sandbox the server still holds (for a later fork: this one did not take it) is let go
        of, so that only the fork that takes it holds its worker's pipes."""
        for pidfd in self.handed:
            os.close(pidfd)
        self.handed = {}
        ahead, self.held = self.held, None
        if ahead is not None:
            ahead.begun.let_go()
            if ahead.begun.pidfd is not None:
                os.close(ahead.begun.pidfd)

    def close(self) -> None:
        """End the held sandbox nobody took (other settings wanted, the server exiting)."""
        ahead, self.held = self.held, None
        if ahead is not None:
            ahead.begun.close()
