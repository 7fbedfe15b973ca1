"""`Coalescer`: the requests many lookup threads make within a short window, as one call.

REAPI lets one `BatchReadBlobs` read many blobs and one `FindMissingBlobs` ask about many; an
action result cannot be asked for in bulk. A build's lookups run on `--remote-jobs` threads,
each asking for the few blobs of its own action (a header manifest, stdout, a small output):
one call each would put as many calls in flight at the server as there are threads (BuildGrid
answers RESOURCE_EXHAUSTED past its thread pool). A `Coalescer` gathers what threads ask within
`window` seconds into one call, up to what one call may carry (`fits`), and hands each thread
its own answers.

The first thread to ask opens a batch and leads it: it waits the window, closes the batch and
makes the call; threads that ask meanwhile join the batch and wait for it. Only a build with a
remote uses one (the client creates them), so a build without a remote pays nothing.

An answer is per key: a value, or the exception for that key alone (a blob the server lacks is
`BlobMissing` for the thread that asked for it, not for every thread in the batch); an
exception of the whole call (the server is down) is raised in every thread of the batch.
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Generic, Hashable, Iterable, Mapping, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _Batch(Generic[K, V]):
    __slots__ = ("keys", "done", "answers", "error")

    def __init__(self) -> None:
        self.keys: dict[K, None] = {}  # ordered, each once
        self.done = threading.Event()
        self.answers: Mapping[K, V | BaseException] = {}
        self.error: BaseException | None = None


class Coalescer(Generic[K, V]):
    def __init__(self, call: Callable[[list[K]], Mapping[K, V | BaseException]], window: float,
                 fits: Callable[[list[K]], bool]) -> None:
        """`call(keys)` answers every key of one batch; `fits(keys)` says whether one call may
        carry them all (a batch that would not fit is left to its leader and a new one opens)."""
        self._call = call
        self._window = window
        self._fits = fits
        self._lock = threading.Lock()
        self._open: _Batch[K, V] | None = None

    def ask(self, keys: Iterable[K]) -> dict[K, V]:
        """The answers for `keys`; raises the exception of the first key that has one."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        with self._lock:
            batch = self._open
            lead = batch is None or not self._fits([*batch.keys, *(k for k in wanted if k not in batch.keys)])
            if lead:
                batch = self._open = _Batch()
            assert batch is not None
            for k in wanted:
                batch.keys[k] = None
        if lead:
            time.sleep(self._window)
            with self._lock:
                if self._open is batch:
                    self._open = None  # later askers open the next batch
            try:
                batch.answers = self._call(list(batch.keys))
            except BaseException as e:  # noqa: BLE001 - handed to every thread of the batch
                batch.error = e
            batch.done.set()
        else:
            batch.done.wait()
        if batch.error is not None:
            raise batch.error
        out: dict[K, V] = {}
        for k in wanted:
            answer = batch.answers[k]
            if isinstance(answer, BaseException):
                raise answer
            out[k] = answer
        return out
