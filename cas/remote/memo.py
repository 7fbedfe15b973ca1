"""A memo shared by the threads of one build's remote client.

A miss is computed outside the lock, so a slow digest (reading a file) holds no other thread
up; two threads that miss the same key at once both compute it, and get the same value.
"""
from __future__ import annotations

import threading
from typing import Callable, Generic, Hashable, TypeVar

V = TypeVar("V")


class Memo(Generic[V]):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[Hashable, V] = {}

    def get(self, key: Hashable, compute: Callable[[], V]) -> V:
        with self._lock:
            value = self._values.get(key)
        if value is None:
            value = compute()
            with self._lock:
                self._values[key] = value
        return value
