"""Retry delays after a failed sync: client-go's default controller rate limiter, on a given clock.

`DefaultControllerRateLimiter` is the maximum of two limiters, as in client-go's
`workqueue.DefaultControllerRateLimiter()`: a per-item exponential backoff (5 ms base doubling
per consecutive failure, capped at 1000 s) and an overall token bucket (10 per second, burst
100) so a storm of failures cannot turn into a storm of retries. `forget` after a success
resets the item's backoff.

Non-goals: sleeping (the caller schedules the returned delay), the regular sync period.
Pure: no I/O; the clock is a parameter.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

BASE_DELAY = 0.005
MAX_DELAY = 1000.0
BUCKET_QPS = 10.0
BUCKET_BURST = 100


class ItemExponentialBackoff:
    """Per-item delay base × 2^(failures − 1), capped (client-go ItemExponentialFailureRateLimiter)."""

    def __init__(self, *, base: float = BASE_DELAY, cap: float = MAX_DELAY) -> None:
        self._base = base
        self._cap = cap
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        failures = self._failures.get(item, 0)
        self._failures[item] = failures + 1
        if failures >= 64:  # 2**64 × base overflows any useful cap
            return self._cap
        return min(self._cap, self._base * float(2**failures))

    def failures(self, item: Hashable) -> int:
        return self._failures.get(item, 0)

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)


@dataclass(slots=True, kw_only=True)
class _Bucket:
    tokens: float
    updated: float


class TokenBucket:
    """Overall limiter: `when` reserves one token and says how long until it is available."""

    def __init__(self, *, qps: float = BUCKET_QPS, burst: int = BUCKET_BURST,
                 clock: Callable[[], float]) -> None:  # fmt: skip
        if qps <= 0 or burst < 1:
            raise ValueError("token bucket needs qps > 0 and burst >= 1")
        self._qps = qps
        self._burst = float(burst)
        self._clock = clock
        self._bucket = _Bucket(tokens=float(burst), updated=clock())

    def when(self) -> float:
        now = self._clock()
        b = self._bucket
        b.tokens = min(self._burst, b.tokens + (now - b.updated) * self._qps)
        b.updated = now
        b.tokens -= 1.0  # a reservation: may go negative, later callers wait longer
        return 0.0 if b.tokens >= 0 else -b.tokens / self._qps


class DefaultControllerRateLimiter:
    """max(per-item exponential 5 ms → 1000 s, token bucket 10 qps / burst 100)."""

    def __init__(self, *, clock: Callable[[], float]) -> None:
        self._items = ItemExponentialBackoff()
        self._bucket = TokenBucket(clock=clock)

    def when(self, item: Hashable) -> float:
        return max(self._items.when(item), self._bucket.when())

    def failures(self, item: Hashable) -> int:
        return self._items.failures(item)

    def forget(self, item: Hashable) -> None:
        self._items.forget(item)
