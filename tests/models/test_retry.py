"""The shared retry policy: backoff, Retry-After parsing, classification outcomes, redaction."""

from __future__ import annotations

import asyncio
import email.utils
import random

import pytest

from sparring.errors import BackendError, ContextOverflowError
from sparring.models.retry import (
    Failure,
    RetryPolicy,
    call_with_retries,
    is_retryable_status,
    parse_retry_after,
)
from sparring.models.secrets import Secret


class Boom(Exception):
    def __init__(self, failure: Failure):
        super().__init__(failure.message)
        self.failure = failure


def classify(exc: BaseException) -> Failure | None:
    return exc.failure if isinstance(exc, Boom) else None


def run(failures: list[Failure], policy: RetryPolicy, secrets=()):
    """Run call_with_retries on a callable failing with `failures` in turn; returns (result, sleeps, calls)."""
    sleeps: list[float] = []
    calls = [0]

    async def attempt() -> str:
        calls[0] += 1
        if calls[0] <= len(failures):
            raise Boom(failures[calls[0] - 1])
        return "ok"

    async def fake_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    result = asyncio.run(call_with_retries(attempt, policy=policy, classify=classify, what="model 'm' at srv",
                                           secrets=secrets, rng=random.Random(0), sleep=fake_sleep))
    return result, sleeps, calls[0]


def test_retryable_statuses():
    assert all(is_retryable_status(s) for s in (408, 409, 429, 500, 502, 503, 504, 529))
    assert not any(is_retryable_status(s) for s in (400, 401, 403, 404, 422))


def test_full_jitter_backoff_bounds_and_cap():
    policy = RetryPolicy(max_retries=10, backoff_initial_s=0.5, backoff_max_s=4.0)
    rng = random.Random(1)
    for attempt in range(10):
        cap = min(4.0, 0.5 * 2**attempt)
        draws = [policy.backoff(attempt, rng) for _ in range(200)]
        assert all(0.0 <= d <= cap for d in draws)
        assert max(draws) > 0.8 * cap  # jitter spans the whole range, not a fixed delay
    assert policy.backoff(3, random.Random(7)) == policy.backoff(3, random.Random(7))


def test_retry_after_wins_but_is_capped():
    policy = RetryPolicy(backoff_initial_s=0.1, backoff_max_s=10.0)
    assert policy.delay(0, 3.0, random.Random(0)) == 3.0
    assert policy.delay(0, 60.0, random.Random(0)) == 10.0
    assert policy.delay(0, -1.0, random.Random(0)) == 0.0


def test_parse_retry_after_forms():
    assert parse_retry_after({"Retry-After": "7"}) == 7.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 12, usegmt=True)
    assert parse_retry_after({"Retry-After": date}, now=now) == pytest.approx(12.0)
    assert parse_retry_after({"Retry-After": email.utils.formatdate(now - 50, usegmt=True)}, now=now) == 0.0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None and parse_retry_after(None) is None


def test_retries_until_success_honouring_retry_after():
    failures = [Failure("rate limited", True, 429, retry_after=2.0), Failure("boom", True, 503)]
    result, sleeps, calls = run(failures, RetryPolicy(max_retries=3, backoff_initial_s=0.5, backoff_max_s=5.0))
    assert result == "ok" and calls == 3
    assert sleeps[0] == 2.0 and 0.0 <= sleeps[1] <= 1.0  # attempt 1: cap 0.5 * 2


def test_permanent_failure_raises_at_once():
    with pytest.raises(BackendError) as info:
        run([Failure("invalid model", False, 404)], RetryPolicy(max_retries=5))
    assert info.value.status == 404 and info.value.retryable is False
    assert str(info.value) == "model 'm' at srv: HTTP 404: invalid model"


def test_exhausted_retries_are_retryable_error():
    failures = [Failure("overloaded", True, 529)] * 10
    with pytest.raises(BackendError) as info:
        run(failures, RetryPolicy(max_retries=2, backoff_initial_s=0.0))
    assert info.value.retryable is True and info.value.status == 529
    assert "gave up after 3 attempt(s)" in str(info.value)


def test_context_overflow_and_redaction():
    key = "sk-proj-abcdefghijklmnop"
    with pytest.raises(ContextOverflowError) as info:
        run([Failure(f"too long for key {key}", False, 400, context_overflow=True)], RetryPolicy(),
            secrets=[Secret(key)])
    assert key not in str(info.value) and "***" in str(info.value)


def test_unclassified_errors_propagate_unchanged():
    async def attempt() -> None:
        raise KeyError("a bug, not an outage")

    with pytest.raises(KeyError):
        asyncio.run(call_with_retries(attempt, policy=RetryPolicy(), classify=classify, what="m"))


def test_a_caller_waiting_on_a_closed_loop_does_not_hang():
    """Double Ctrl-C during an in-flight request: the loop is closed while a runner thread waits
    on it; that thread must return (with an error) instead of blocking interpreter exit forever."""
    import asyncio
    import threading
    import time

    from sparring.models.aio import LoopThread

    loop = LoopThread("test-loop")
    outcome: list[BaseException] = []

    async def forever():
        await asyncio.sleep(3600)

    def waiter():
        try:
            loop.run(forever())
        except BaseException as e:  # noqa: BLE001
            outcome.append(e)

    t = threading.Thread(target=waiter, daemon=True)
    t.start()
    time.sleep(0.3)
    loop.close()
    t.join(timeout=5)
    assert not t.is_alive() and outcome and isinstance(outcome[0], (RuntimeError, Exception))
