"""Restored outputs written into `target/` off the scheduling thread.

A rebuild from the action cache (`rm -rf target`, a fresh clone with its home restored) restores
every action on the scheduling thread (`ActionPipeline.restore_here`), and half of each restore is
writing its outputs: a temporary file, its bytes, its mode, a rename (10,000 light units: ~45% of
that thread's time, with the other core idle; bench/RESULTS.md). The keys of the dependents need
only the cache entry's digests, so the scheduling thread reads and verifies each output's bytes
(a corrupt blob is found there and heals the action, as before) and hands the writing to this
writer, one thread writing in order, while it goes on with the next restore.

Nothing reads those files before `settle`, which the pipeline calls before an action goes to a lane
(a run stages its inputs, and may read `target/`) and once the schedule is over, before the
records are saved: it waits for every write handed over, returns the outputs written (the stat
cache learns them then, as it learns a restored output's stat) and raises the first write that
failed, as a write on the scheduling thread would have. `close` waits without raising: a build
interrupted or failed leaves nothing being written into `target/` after it returns.
"""
from __future__ import annotations

import threading

from mcpp.cas.digest import Digest
from mcpp.cas.materialize import write_copy
from mcpp.cas.unwaited_thread import SerialThread

# Writes handed to the thread at once: one wake-up per batch, not per file.
BATCH = 32


class RestoreWriter:
    def __init__(self) -> None:
        self._thread = SerialThread()
        self._batch: list[tuple[str, bytes, int]] = []
        self._lock = threading.Lock()
        self._error: BaseException | None = None
        # outputs handed over and not yet settled: execroot-relative path -> digest
        self.unwritten: dict[str, Digest] = {}

    def put(self, rel: str, dest: str, data: bytes, mode: int, digest: Digest) -> None:
        """Write `data` to `dest` (the output `rel`) with `mode`, after the writes handed over before."""
        self.unwritten[rel] = digest
        self._batch.append((dest, data, mode))
        if len(self._batch) >= BATCH:
            self._hand_over()

    def settle(self) -> dict[str, Digest]:
        """Wait for every write handed over; the outputs written since the last settle. Raises
        the first write that failed."""
        if not self.unwritten:
            return {}
        self._hand_over()
        self._thread.wait()
        written, self.unwritten = self.unwritten, {}
        with self._lock:
            error, self._error = self._error, None
        if error is not None:
            raise error
        return written

    def close(self) -> None:
        """Wait for every write handed over; what failed is dropped (the build is ending on
        another error, or was interrupted)."""
        try:
            self.settle()
        except Exception:  # noqa: BLE001 - the build already ends on the error that brought it here
            pass

    def _hand_over(self) -> None:
        if self._batch:
            batch, self._batch = self._batch, []
            self._thread.call(lambda: self._write(batch))

    def _write(self, batch: list[tuple[str, bytes, int]]) -> None:
        for dest, data, mode in batch:
            try:
                write_copy(data, dest, mode)
            except BaseException as e:  # noqa: BLE001 - said by `settle`, on the scheduling thread
                with self._lock:
                    if self._error is None:
                        self._error = e
