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
child the warm-up begins before the command line is read, for the sandbox the last build of the
same request used, and the build adopts it when it wants the same (`fits`; the child's
`BuildMemory`, server/child_memory.py, holds it meanwhile).
"""
from __future__ import annotations

import os
import threading
from typing import Callable

from mcpp.sandbox import BegunSandbox, SandboxUnavailable, begin_sandbox

from ..core.errors import McppError
from mcpp.cas.unwaited_thread import start_unwaited


class SandboxWarmUp:
    """The sandbox for `settings` = (`--sandbox` value, work root, payload roots), begun now.

    The calling thread (a build's main thread, which lives as long as the build) starts bwrap's
    first worker (a spawn, not the wait); a thread of this object's own waits for the worker's
    answer (or, where bwrap cannot be used, makes the sandbox the usual way) and ends."""

    def __init__(self, settings: tuple, ahead: SandboxAhead | None = None) -> None:
        self.settings = settings
        # the payload roots there now: a worker's mounts are fixed when it starts, so one begun
        # before a payload was installed cannot see it (`fits` compares)
        self.roots_present = _present(settings) if ahead is None else ahead.roots_present
        self.report: Callable[[str], None] | None = None  # the build's way to show the warning
        self._made = threading.Event()
        self._sandbox = None
        self._warning: str | None = None
        self._error: BaseException | None = None
        if ahead is not None:  # begun by the process this one was forked from
            ahead.begun.take_over()
            finish = _finishing(ahead.begun)
        else:
            try:
                finish = _finishing(begin_sandbox(*settings))
            except Exception as e:  # noqa: BLE001 - given to the first action, which reports it
                finish = _raising(e)
        start_unwaited(self._finish, finish)  # it says it is done through `_made`

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


def _finishing(begun: BegunSandbox) -> Callable[[], tuple[object, str | None]]:
    def finished() -> tuple[object, str | None]:
        try:
            return begun()
        except SandboxUnavailable as e:
            raise McppError(str(e)) from None
    return finished


class SandboxAhead:
    """A sandbox begun in one process for a fork of it to take (`SandboxWarmUp(settings,
    ahead)`): a warm server begins one between builds (engine/server/sandbox_ahead.py), with
    the settings and payload roots of that moment."""

    def __init__(self, settings: tuple) -> None:
        self.settings = settings
        self.roots_present = _present(settings)
        self.begun = begin_sandbox(*settings)


def _raising(error: BaseException) -> Callable[[], tuple[object, str | None]]:
    def finish() -> tuple[object, str | None]:
        raise error
    return finish


def fits(warm: SandboxWarmUp, settings: tuple) -> bool:
    """Whether `warm`, begun earlier, is the sandbox a build with `settings` wants: the same
    settings, and the same payload roots present (a worker's mounts are fixed when it starts)."""
    return warm.settings == settings and warm.roots_present == _present(settings)


def _present(settings: tuple) -> tuple[str, ...]:
    return tuple(r for r in settings[2] if os.path.isdir(r))
