"""The build's sandbox, made ahead of its first action while the build still loads and plans.

The first action of a build waits for three things no earlier step needed: the bwrap probe
(one `bwrap ... true`, about 8 ms), the sandbox's pool, and its worker process (a namespace and
the executor's Python: about 25 ms before it answers; sandbox/worker.py). In an edit-one build
that is a tenth of the engine's own time, all of it on the critical path before the compile.
When the build will probably run something (a warm server saw files change since the last
build, or has no last build to compare with), `SandboxWarmUp` makes the sandbox on a thread of
its own while the main thread plans, starting its first worker at once and taking the worker's
answer for the probe's (which then does not run: sandbox/select.py). The first action finds the
sandbox made and that worker answering; the link after it finds the same worker idle.

The thread stays alive until the build ends (`close`): bwrap's ``--die-with-parent`` ends a
worker when the *thread* that started it exits, and the worker started here serves the
scheduler's threads.
"""
from __future__ import annotations

import sys
import threading
from typing import Callable

SWITCH_S = 0.0002  # the interpreter's switch interval while the warm-up runs


class SandboxWarmUp:
    def __init__(self, make: Callable[[], object]) -> None:
        """`make()` makes the sandbox and starts its first worker (from this object's thread)."""
        self._make = make
        self._made = threading.Event()
        self._closing = threading.Event()
        self._sandbox = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._keep, name="mcpp-sandbox-warm-up", daemon=True)
        self._thread.start()

    def _keep(self) -> None:
        # This thread mostly waits (for fork and exec, for the worker's answer), and each time it wakes it
        # needs the GIL from a main thread that is planning: at the default switch interval
        # (5 ms) each hand-over costs up to 5 ms, which doubled the warm-up. Short while it runs.
        interval = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_S)
        try:
            self._sandbox = self._make()
        except BaseException as e:  # noqa: BLE001 - given to the first action, which reports it as before
            self._error = e
        finally:
            sys.setswitchinterval(interval)
            self._made.set()
        self._closing.wait()

    def get(self):
        """The sandbox (made once; waits for the warm-up), or the error making it raised."""
        self._made.wait()
        if self._error is not None:
            raise self._error
        return self._sandbox

    def close(self) -> None:
        """End the warm-up: its sandbox is shut down (the runner that took it shuts it down
        too; a second shutdown does nothing) and the thread exits."""
        self._closing.set()
        self._made.wait()
        if self._sandbox is not None:
            self._sandbox.shutdown()
        self._thread.join()
