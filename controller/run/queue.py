"""The due-time work queue: one entry per autoscaler, each on its own period and phase.

Upstream's HPA queue re-adds every object one fixed period after it was processed, so objects
created together stay in lock-step (k/k#118788) and every object shares one period. Here each
entry carries its own period (`spec.syncPeriodSeconds`, KEP-6003 style) and fires on slots
`phase + k × period`, where the phase is a stable hash of the object's UID: objects created in
the same second spread over the period, and a restarted controller keeps each object's slot.

Rules:
* creation and spec changes (generation bump) are due at once (`add(..., immediate=True)`);
* a key is never handed out twice: while in flight it is not in the heap; a change during the
  sync marks it dirty and `done` makes it due at once;
* after a success the next slot comes at least half a period after the slot just served (an
  overrun past whole periods fires once, late, instead of catching up every missed slot);
* after a failure the retry comes after client-go's default controller rate limiter delay,
  but never later than the next regular slot.

Non-goals: sleeping or running syncs (`controller.run.workers` does that); deciding what changed.
Pure: no I/O; every method takes `now` on the caller's clock.
"""

from __future__ import annotations

import heapq
import math
import zlib
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

K = TypeVar("K", bound=Hashable)

MIN_GAP_FRACTION = 0.5


class RetryLimiter(Protocol):
    def when(self, item: Hashable) -> float: ...

    def forget(self, item: Hashable) -> None: ...


def phase_offset(uid: str, period: float) -> float:
    """Stable offset in [0, period) from the UID (crc32: the same in every process, unlike hash())."""
    millis = max(1, int(round(period * 1000)))
    return (zlib.crc32(uid.encode()) % millis) / 1000.0


def next_slot(after: float, *, phase: float, period: float) -> float:
    """The first time `phase + k × period` strictly after `after`."""
    k = math.floor((after - phase) / period) + 1
    slot = phase + k * period
    return slot if slot > after else slot + period


@dataclass(frozen=True, slots=True, kw_only=True)
class Due(Generic[K]):
    """A key handed to a worker: when it was due and when the worker took it."""

    key: K
    due: float
    started: float

    @property
    def lateness(self) -> float:
        return max(0.0, self.started - self.due)


@dataclass(slots=True, kw_only=True)
class _Entry:
    period: float
    phase: float
    due: float
    in_flight: bool = False
    dirty: bool = False
    served: float | None = None  # the due time of the sync in flight


class DueQueue(Generic[K]):
    def __init__(self, *, limiter: RetryLimiter) -> None:
        self._limiter = limiter
        self._entries: dict[K, _Entry] = {}
        self._heap: list[tuple[float, int, K]] = []
        self._seq = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def add(self, key: K, *, uid: str, period: float, now: float, immediate: bool) -> None:
        """Register or update a key. `immediate`: due now (created, or its spec changed)."""
        if period <= 0:
            raise ValueError(f"sync period must be positive, got {period}")
        phase = phase_offset(uid, period)
        entry = self._entries.get(key)
        if entry is None:
            due = now if immediate else next_slot(now, phase=phase, period=period)
            self._entries[key] = entry = _Entry(period=period, phase=phase, due=due)
            self._push(key, due)
            return
        changed = entry.period != period or entry.phase != phase
        entry.period, entry.phase = period, phase
        if entry.in_flight:
            entry.dirty = entry.dirty or immediate
            return
        if immediate:
            self._schedule(key, entry, now)
        elif changed:
            self._schedule(key, entry, next_slot(now, phase=phase, period=period))

    def remove(self, key: K) -> None:
        """Forget a deleted object; a sync in flight finishes and is not re-queued."""
        self._entries.pop(key, None)
        self._limiter.forget(key)

    def pop_due(self, now: float, limit: int) -> list[Due[K]]:
        """Up to `limit` keys due at `now`, earliest first; they are in flight until `done`."""
        out: list[Due[K]] = []
        while self._heap and len(out) < limit and self._heap[0][0] <= now:
            due, _, key = heapq.heappop(self._heap)
            entry = self._entries.get(key)
            if entry is None or entry.in_flight or entry.due != due:
                continue  # a stale heap record: removed, handed out, or rescheduled
            entry.in_flight, entry.served = True, due
            out.append(Due(key=key, due=due, started=now))
        return out

    def done(self, key: K, *, now: float, failed: bool) -> float | None:
        """A sync of `key` ended; schedule its next run and return when (None: removed)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        served = entry.served if entry.served is not None else now
        entry.in_flight, entry.served = False, None
        floor = max(served + entry.period * MIN_GAP_FRACTION, now - entry.period)
        regular = next_slot(floor, phase=entry.phase, period=entry.period)
        if failed:  # the regular slot still applies: the first one after now
            due = min(now + self._limiter.when(key), next_slot(now, phase=entry.phase, period=entry.period))
        else:
            self._limiter.forget(key)
            due = regular
        if entry.dirty:
            entry.dirty, due = False, now
        self._schedule(key, entry, due)
        return due

    def next_due(self) -> float | None:
        """The earliest due time of a key not in flight (None: nothing queued)."""
        while self._heap:
            due, _, key = self._heap[0]
            entry = self._entries.get(key)
            if entry is not None and not entry.in_flight and entry.due == due:
                return due
            heapq.heappop(self._heap)
        return None

    def depth(self, now: float) -> int:
        """Keys due and waiting for a worker (the queue-depth gauge)."""
        return sum(1 for e in self._entries.values() if not e.in_flight and e.due <= now)

    def in_flight(self) -> int:
        return sum(1 for e in self._entries.values() if e.in_flight)

    def due_time(self, key: K) -> float | None:
        entry = self._entries.get(key)
        return None if entry is None or entry.in_flight else entry.due

    def _schedule(self, key: K, entry: _Entry, due: float) -> None:
        entry.due = due
        self._push(key, due)

    def _push(self, key: K, due: float) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (due, self._seq, key))
