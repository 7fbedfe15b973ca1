"""Lookups from many threads share BatchReadBlobs / FindMissingBlobs calls (cas/remote/coalesce.py)."""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

from mcpp.cas.remote.client import BlobMissing, RemoteClient, RemoteError
from mcpp.cas.remote.coalesce import Coalescer
from mcpp.cas.remote.digests import SHA256

from test_remote_client import Spy


def at_once(n: int, fn):
    """`fn(i)` on `n` threads released together; the answers (or exceptions) in order."""
    start = threading.Barrier(n)

    def run(i):
        start.wait()
        try:
            return fn(i)
        except Exception as e:  # noqa: BLE001 - the test looks at it
            return e

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(run, range(n)))


def test_threads_asking_within_the_window_share_one_call_and_get_their_own_answers():
    calls = []

    def call(keys):
        calls.append(list(keys))
        return {k: (KeyError(k) if k == 3 else k * 10) for k in keys}

    c = Coalescer(call, window=0.2, fits=lambda ks: True)
    got = at_once(8, lambda i: c.ask([i]))
    assert len(calls) == 1 and sorted(calls[0]) == list(range(8))
    assert [g if not isinstance(g, Exception) else "missing" for g in got] == \
        [{0: 0}, {1: 10}, {2: 20}, "missing", {4: 40}, {5: 50}, {6: 60}, {7: 70}]


def test_a_failed_call_fails_every_thread_of_its_batch_and_a_full_batch_opens_another():
    calls = []

    def call(keys):
        calls.append(list(keys))
        raise RemoteError("UNAVAILABLE", "down")

    c = Coalescer(call, window=0.2, fits=lambda ks: len(ks) <= 3)
    got = at_once(6, lambda i: c.ask([i]))
    assert all(isinstance(g, RemoteError) for g in got)
    assert len(calls) >= 2 and all(len(k) <= 3 for k in calls) and sorted(sum(calls, [])) == list(range(6))


def test_concurrent_downloads_travel_in_fewer_batches_and_a_missing_blob_is_its_askers_alone(buildgrid):
    client = RemoteClient(buildgrid.target, timeout=30)
    client.connect()
    data = {SHA256.of_bytes(b): b for b in (os.urandom(100 + i) for i in range(24))}
    client.upload(data)
    digests = list(data)
    absent = SHA256.of_bytes(b"never uploaded " + os.urandom(8))
    spy = Spy(client, "_batch_read")
    finds = Spy(client, "_find_missing")
    got = at_once(25, lambda i: client.download([digests[i]]) if i < 24 else client.download([absent]))
    assert [g[digests[i]] for i, g in enumerate(got[:24])] == [data[d] for d in digests]
    assert isinstance(got[24], BlobMissing)
    assert len(spy.requests) < 12, len(spy.requests)
    lacks = at_once(25, lambda i: client.find_missing([digests[i] if i < 24 else absent]))
    assert lacks == [[]] * 24 + [[absent]]
    assert len(finds.requests) < 12, len(finds.requests)
    client.close()
