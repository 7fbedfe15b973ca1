"""`Retrier` (cas/remote/retry.py): which codes are retried, the backoff, the per-build budget."""
from __future__ import annotations

import threading
import time

import pytest

from mcpp.cas.remote.errors import RemoteError
from mcpp.cas.remote.retry import Retrier


def failing(codes: list[str], value: str = "ok"):
    """A call that fails with each of `codes` in turn, then answers `value`; counts its calls."""
    calls = []

    def call() -> str:
        calls.append(1)
        if len(calls) <= len(codes):
            raise RemoteError(codes[len(calls) - 1], "x")
        return value

    return call, calls


def test_transient_codes_are_retried_and_other_codes_are_answers():
    r = Retrier(5, initial=0.001)
    call, calls = failing(["UNAVAILABLE", "RESOURCE_EXHAUSTED"])
    assert r.call(call, read=False) == "ok" and len(calls) == 3 and r.count == 2
    call, calls = failing(["DEADLINE_EXCEEDED"])
    assert r.call(call, read=True) == "ok" and len(calls) == 2
    # each retry counted by the code that asked for it (the build-finished event's `retried_codes`)
    assert r.codes == {"UNAVAILABLE": 1, "RESOURCE_EXHAUSTED": 1, "DEADLINE_EXCEEDED": 1}
    for code, read in (("DEADLINE_EXCEEDED", False), ("PERMISSION_DENIED", True), ("NOT_FOUND", True)):
        call, calls = failing([code])
        with pytest.raises(RemoteError) as e:
            r.call(call, read=read)
        assert e.value.code == code and len(calls) == 1  # a write that timed out may have landed


def test_a_call_stops_after_its_retries_and_says_so():
    r = Retrier(2, initial=0.001)
    call, calls = failing(["UNAVAILABLE"] * 10)
    with pytest.raises(RemoteError):
        r.call(call, read=True)
    assert len(calls) == 3 and r.gave_up == "a call failed 3 times; 2 retries this build"
    assert Retrier(0).gave_up is None


def test_the_backoff_doubles_with_jitter_up_to_the_maximum():
    low, high = Retrier(5, initial=0.1, maximum=1.0, jitter=lambda: 0.0), Retrier(5, 0.1, 1.0, jitter=lambda: 1.0)
    assert [low.delay(k) for k in (1, 2, 3)] == [0.05, 0.1, 0.2] and low.delay(9) == 0.5
    assert [high.delay(k) for k in (1, 2, 3)] == [0.1, 0.2, 0.4] and high.delay(9) == 1.0


def test_the_build_budget_is_spent_by_a_run_of_failures_and_earned_back_by_successes():
    r = Retrier(1, initial=0.0001)  # budget 10; each call that needs a retry costs a net half
    for _ in range(19):
        call, _calls = failing(["UNAVAILABLE"])
        r.call(call, read=True)
    call, calls = failing(["UNAVAILABLE"])
    with pytest.raises(RemoteError):
        r.call(call, read=True)
    assert len(calls) == 1 and r.gave_up == "the retry budget of this build is spent after 19 retries"
    steady = Retrier(1, initial=0.0001)
    for i in range(300):  # one call in three fails once: retried through, for ever
        call, _calls = failing(["UNAVAILABLE"] if i % 3 == 0 else [])
        steady.call(call, read=True)
    assert steady.count == 100 and steady.gave_up is None


def test_cancel_ends_a_backoff_wait_at_once():
    r = Retrier(5, initial=30.0, maximum=30.0)
    call, _calls = failing(["UNAVAILABLE"] * 10)
    out = []
    t = threading.Thread(target=lambda: out.append(pytest.raises(RemoteError, r.call, call, True)))
    t0 = time.monotonic()
    t.start()
    time.sleep(0.2)
    r.cancel()
    t.join(5)
    assert not t.is_alive() and time.monotonic() - t0 < 5
    assert out[0].value.code == "CANCELLED"


def test_a_batch_whose_blobs_failed_transiently_is_sent_again(buildgrid):
    """A per-blob RESOURCE_EXHAUSTED inside a BatchUpdateBlobs answer: the batch is retried whole."""
    from mcpp.cas.remote.client import RemoteClient
    from mcpp.cas.remote.digests import SHA256

    client = RemoteClient(buildgrid.url, timeout=10, retrier=Retrier(3, initial=0.001))
    client.connect()
    real, calls = client._batch_update, []

    def flaky(request, timeout=None):
        calls.append(1)
        resp = real(request, timeout=timeout)
        if len(calls) == 1:  # the first answer says the server was busy for every blob
            for r in resp.responses:
                r.status.code = 8  # RESOURCE_EXHAUSTED
        return resp

    client._batch_update = flaky
    data = b"batch retried " * 10
    d = SHA256.of_bytes(data)
    client.upload({d: data})
    assert len(calls) == 2 and client.retrier.count == 1
    assert client.download([d])[d] == data
    client.close()
