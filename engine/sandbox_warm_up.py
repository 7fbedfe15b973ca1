"""The build's sandbox, begun ahead of its first action while the build still loads and plans.

The first action of a build waits for three things no earlier step needed: the bwrap probe
(one `bwrap ... true`), the sandbox's pool, and its worker process (a namespace and the
executor's Python, started before it answers; sandbox/worker.py). In an edit-one build
all of it would be on the critical path before the compile. When the build will probably run
something (a warm server saw files change since the last build, or has no last build to compare
with), `SandboxWarmUp` begins the sandbox early: the build's main thread starts bwrap's first
worker (`sandbox.begin_sandbox`), and a thread waits for the worker's answer and takes it for
the probe's, which then does not run. The first action finds the sandbox made and that worker
answering; the link after it finds the same worker idle.

The worker is started from the main thread because bwrap's ``--die-with-parent`` ends it when the
*thread* that started it exits; the main thread lives as long as the build. In a server's build
child the warm-up begins before the command line is read (`start_early`), for the sandbox the
last build of the same request used, and the build adopts it when it wants the same (`adopt`).
"""
from __future__ import annotations

import os
import threading
from typing import Callable

from mcpp.sandbox import SandboxUnavailable, begin_sandbox

from . import after_reply
from .errors import McppError


class SandboxWarmUp:
    """The sandbox for `settings` = (`--sandbox` value, work root, payload roots), begun now.

    The calling thread (a build's main thread, which lives as long as the build) starts bwrap's
    first worker (a spawn, not the wait); a thread of this object's own waits for the worker's
    answer (or, where bwrap cannot be used, makes the sandbox the usual way) and ends."""

    def __init__(self, settings: tuple) -> None:
        self.settings = settings
        # the payload roots there now: a worker's mounts are fixed when it starts, so one begun
        # before a payload was installed cannot see it (`adopt` compares)
        self.roots_present = _present(settings)
        self.report: Callable[[str], None] | None = None  # the build's way to show the warning
        self._made = threading.Event()
        self._sandbox = None
        self._warning: str | None = None
        self._error: BaseException | None = None
        try:
            finish = _begin(settings)
        except Exception as e:  # noqa: BLE001 - given to the first action, which reports it
            finish = _raising(e)
        threading.Thread(target=self._finish, args=(finish,), name="mcpp-sandbox-warm-up", daemon=True).start()

    def _finish(self, finish: Callable[[], tuple[object, str | None]]) -> None:
        try:
            self._sandbox, self._warning = finish()
        except BaseException as e:  # noqa: BLE001 - given to the first action, which reports it
            self._error = e
        finally:
            self._made.set()

    def get(self):
        """The sandbox (made once; waits for the warm-up), or the error making it raised."""
        self._made.wait()
        if self._error is not None:
            raise self._error
        if self._warning is not None and self.report is not None:
            warning, self._warning = self._warning, None
            self.report(warning)
        return self._sandbox

    def close(self) -> None:
        """End the warm-up: its sandbox is shut down (the runner that took it shuts it down
        too; a second shutdown does nothing)."""
        self._made.wait()
        if self._sandbox is not None:
            self._sandbox.shutdown()


def _begin(settings: tuple) -> Callable[[], tuple[object, str | None]]:
    name, work_root, payload_roots = settings
    finish = begin_sandbox(name, work_root, payload_roots)

    def finished() -> tuple[object, str | None]:
        try:
            return finish()
        except SandboxUnavailable as e:
            raise McppError(str(e)) from None
    return finished


def _raising(error: BaseException) -> Callable[[], tuple[object, str | None]]:
    def finish() -> tuple[object, str | None]:
        raise error
    return finish


# In a server's build child: a warm-up begun before the command line was even read, for the
# sandbox the last build of the same request used (server/warm.py); the build adopts it when it
# wants the same one.
_early: SandboxWarmUp | None = None


def start_early(settings: tuple) -> None:
    global _early
    _early = SandboxWarmUp(settings)


def adopt(settings: tuple) -> SandboxWarmUp | None:
    """The early warm-up, when it was begun for `settings`; one begun for other settings is
    closed (after the client's answer: nothing waits for it)."""
    global _early
    early, _early = _early, None
    if early is None or (early.settings == settings and early.roots_present == _present(settings)):
        return early
    after_reply.later(early.close)
    return None


def _present(settings: tuple) -> tuple[str, ...]:
    return tuple(r for r in settings[2] if os.path.isdir(r))


def discard_early() -> None:
    """Close an early warm-up that no build adopted (the build failed before it wanted a sandbox,
    or was not a build at all), after the client's answer."""
    global _early
    early, _early = _early, None
    if early is not None:
        after_reply.later(early.close)
