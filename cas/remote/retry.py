"""`Retrier`: which failed remote calls are tried again, how long to wait, and when to stop.

A shared cache under load answers some calls `UNAVAILABLE` (a restart, a proxy in between) or
`RESOURCE_EXHAUSTED` (its thread pool is full); a read may time out on a busy link. None of
these says that the server is gone, so one of them must not turn the remote off for a whole
build. The rules, after Bazel's `--remote_retries`:

- *Transient codes*: `UNAVAILABLE` and `RESOURCE_EXHAUSTED` for every call, and
  `DEADLINE_EXCEEDED` for reads (a write that timed out may have landed; it is not repeated).
  Every other code is an answer (a refused token, a missing blob) and is not retried.
- *Backoff*: the k-th retry of a call waits about `initial * 2**(k-1)` seconds (at most
  `maximum`), half of it fixed and half drawn at random, so that the workers of a build that all
  failed at once do not all come back at once.
- *Per call*: at most `retries` retries; `retries = 0` turns retrying off.
- *Per build*: one budget for all calls, so that a server that fails most calls is given up on
  instead of slowing every action: it starts at `10 * retries` retries and each successful call
  earns half a retry back (up to the start). A server that fails up to about a third of calls is
  retried through for as long as the build lasts; one that fails more, or a run of failures,
  empties it. When a call has used its retries, or the budget is spent, the call
  fails with its last error and `gave_up` names the count, which the endpoint's one warning
  quotes.
- *Cancellation*: `cancel()` (Ctrl-C, SIGTERM, the end of a build) ends every wait at once; a
  cancelled call fails with `CANCELLED`.

Thread-safe: a build's worker and upload threads share one `Retrier`.
"""
from __future__ import annotations

import random
import threading
from collections import Counter
from typing import Callable, TypeVar

from .errors import RemoteError

T = TypeVar("T")

TRANSIENT = frozenset({"UNAVAILABLE", "RESOURCE_EXHAUSTED"})
TRANSIENT_READS = TRANSIENT | {"DEADLINE_EXCEEDED"}
DEFAULT_RETRIES = 5


class Retrier:
    def __init__(self, retries: int = DEFAULT_RETRIES, initial: float = 0.1, maximum: float = 5.0,
                 jitter: Callable[[], float] = random.random) -> None:
        if retries < 0:
            raise ValueError("retries must be 0 or more")
        self.retries = retries
        self.initial = initial
        self.maximum = maximum
        self._jitter = jitter
        self._lock = threading.Lock()
        self._start = 10 * retries
        self._tokens = float(self._start)
        self._cancelled = threading.Event()
        self._on_cancel: list[Callable[[], None]] = []
        self.count = 0  # retries made this build
        self.codes: Counter[str] = Counter()  # those retries by the code that asked for them
        self.gave_up: str | None = None  # why retrying stopped, once it has

    def call(self, fn: Callable[[], T], read: bool) -> T:
        """`fn()`, tried again after a transient failure (a `RemoteError` whose code is in
        TRANSIENT, or TRANSIENT_READS when `read`) until it succeeds or the retries run out."""
        attempt = 0
        codes = TRANSIENT_READS if read else TRANSIENT
        while True:
            if self._cancelled.is_set():
                raise RemoteError("CANCELLED", "the build was interrupted")
            try:
                value = fn()
            except RemoteError as e:
                if e.code not in codes or not self._take(attempt, e.code):
                    raise
                attempt += 1
                if self._cancelled.wait(self.delay(attempt)):
                    raise RemoteError("CANCELLED", "the build was interrupted") from None
                continue
            self._earn()
            return value

    def delay(self, attempt: int) -> float:
        """Seconds before the `attempt`-th retry (1-based) of one call."""
        cap = min(self.maximum, self.initial * (2.0 ** (attempt - 1)))
        return cap / 2 + self._jitter() * cap / 2

    def cancel(self) -> None:
        """End every wait now, and the calls in flight (the `on_cancel` hooks close their
        channels); calls not yet made fail with CANCELLED."""
        self._cancelled.set()
        with self._lock:
            hooks, self._on_cancel = self._on_cancel, []
        for hook in hooks:
            hook()

    def on_cancel(self, hook: Callable[[], None]) -> None:
        """Call `hook` (once) when the build is cancelled."""
        with self._lock:
            if not self._cancelled.is_set():
                self._on_cancel.append(hook)
                return
        hook()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def _take(self, attempt: int, code: str) -> bool:
        with self._lock:
            if attempt >= self.retries:
                if self.retries:
                    self.gave_up = f"a call failed {attempt + 1} times; {self.count} retries this build"
                return False
            if self._tokens < 1:
                self.gave_up = f"the retry budget of this build is spent after {self.count} retries"
                return False
            self._tokens -= 1
            self.count += 1
            self.codes[code] += 1
            return True

    def _earn(self) -> None:
        with self._lock:
            if self._tokens < self._start:
                self._tokens = min(self._start, self._tokens + 0.5)
