"""The due-time queue and the worker pool, on a fake clock: when each autoscaler syncs."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Hashable

import pytest

from controller.run.queue import DueQueue, next_slot, phase_offset
from controller.run.ratelimit import DefaultControllerRateLimiter, ItemExponentialBackoff, TokenBucket
from controller.run.workers import WorkerPool


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class NoRetryLimit:
    def when(self, item: Hashable) -> float:
        return 1.0

    def forget(self, item: Hashable) -> None:
        pass


def make_queue(clock: FakeClock | None = None) -> DueQueue[str]:
    return DueQueue(limiter=DefaultControllerRateLimiter(clock=clock or FakeClock()))


def test_objects_created_together_spread_over_the_period() -> None:
    q = make_queue()
    for i in range(50):
        q.add(f"ns/obj-{i}", uid=f"uid-{i}", period=15.0, now=1000.0, immediate=False)
    dues = sorted(q.due_time(f"ns/obj-{i}") or 0 for i in range(50))
    assert 1000.0 < dues[0] and dues[-1] <= 1015.0
    # Lock-step would put all 50 in one second; spread over 15 s no second holds more than a handful.
    per_second = [sum(1 for d in dues if s <= d - 1000.0 < s + 1) for s in range(15)]
    assert max(per_second) <= 10


@pytest.mark.parametrize(
    ("uid", "period", "phase"),
    [("5e1c-uid", 15.0, 0.16), ("5e1c-uid", 60.0, 30.16), ("d3b07384-d9a0-4c9b-8f2a-1e2f3a4b5c6d", 15.0, 8.115)],
)
def test_the_phase_is_stable_across_processes(uid: str, period: float, phase: float) -> None:
    """Pinned values: two calls in one process would agree even with a salted hash(); another
    process (another PYTHONHASHSEED, another replica after a leader change) must get these."""
    assert phase_offset(uid, period) == pytest.approx(phase)


@pytest.mark.parametrize(
    ("after", "expected"),
    [(100.0, 103.0), (103.0, 118.0), (102.999, 103.0), (88.0, 103.0)],
    ids=["before-slot", "on-slot-is-not-after", "just-before", "one-period-back"],
)
def test_next_slot(after: float, expected: float) -> None:
    assert next_slot(after, phase=13.0, period=15.0) == pytest.approx(expected)


def test_a_key_is_never_handed_out_twice() -> None:
    q = make_queue()
    q.add("a", uid="u", period=15.0, now=0.0, immediate=True)
    assert [d.key for d in q.pop_due(0.0, 5)] == ["a"]
    q.add("a", uid="u", period=15.0, now=1.0, immediate=True)  # spec changed during the sync
    assert q.pop_due(1.0, 5) == []
    q.done("a", now=2.0, failed=False)
    assert [d.key for d in q.pop_due(2.0, 5)] == ["a"], "the change during the sync re-queues it at once"


def test_generation_change_syncs_immediately_then_returns_to_its_phase() -> None:
    q = make_queue()
    q.add("a", uid="u", period=15.0, now=0.0, immediate=False)
    regular = q.due_time("a")
    assert regular is not None and regular > 0.0
    q.add("a", uid="u", period=15.0, now=1.0, immediate=True)
    assert q.due_time("a") == 1.0
    (due,) = q.pop_due(1.0, 1)
    nxt = q.done("a", now=1.1, failed=False)
    assert nxt is not None and nxt >= 1.0 + 7.5
    assert round((nxt - regular) / 15.0, 6).is_integer(), "back on its own phase"


def test_regular_syncs_keep_the_period_without_drift() -> None:
    q = make_queue()
    q.add("a", uid="u", period=15.0, now=0.0, immediate=False)
    times = []
    now = 0.0
    for _ in range(4):
        now = q.next_due() or 0.0
        (due,) = q.pop_due(now + 0.3, 1)  # each sync starts 0.3 s late and takes 2 s
        times.append(due.due)
        assert due.lateness == pytest.approx(0.3)
        q.done("a", now=now + 2.3, failed=False)
    assert [b - a for a, b in itertools.pairwise(times)] == [pytest.approx(15.0)] * 3


def test_an_overrun_fires_once_late_instead_of_catching_up() -> None:
    q = make_queue()
    q.add("a", uid="u", period=10.0, now=0.0, immediate=True)
    q.pop_due(0.0, 1)
    q.done("a", now=45.0, failed=False)  # the sync took 4.5 periods
    assert len(q.pop_due(45.0, 5)) == 1
    nxt = q.done("a", now=45.1, failed=False)
    assert nxt is not None and nxt > 45.1


def test_failures_back_off_exponentially_but_never_past_the_next_slot() -> None:
    clock = FakeClock(0.0)
    q = make_queue(clock)
    q.add("a", uid="u", period=15.0, now=0.0, immediate=True)
    delays = []
    now = 0.0
    for _ in range(14):
        (due,) = q.pop_due(now, 1)
        nxt = q.done("a", now=now, failed=True)
        assert nxt is not None
        delays.append(round(nxt - now, 3))
        now = nxt
        clock.now = now
    assert delays[:4] == [0.005, 0.01, 0.02, 0.04]
    assert max(delays) <= 15.0, "the regular period still applies"
    (due,) = q.pop_due(now, 1)
    nxt = q.done("a", now=now, failed=False)
    assert nxt is not None
    q.pop_due(nxt, 1)
    again = q.done("a", now=nxt, failed=True)
    assert again == pytest.approx(nxt + 0.005), "a success forgets the backoff"


def test_deleted_object_leaves_the_queue_even_mid_sync() -> None:
    q = make_queue()
    q.add("a", uid="u", period=15.0, now=0.0, immediate=True)
    q.pop_due(0.0, 1)
    q.remove("a")
    assert q.done("a", now=1.0, failed=False) is None
    assert len(q) == 0 and q.next_due() is None


def test_per_object_periods() -> None:
    q = make_queue()
    q.add("fast", uid="u1", period=3.0, now=0.0, immediate=True)
    q.add("slow", uid="u2", period=60.0, now=0.0, immediate=True)
    runs = {"fast": 0, "slow": 0}
    now = 0.0
    while now <= 60.0:
        for due in q.pop_due(now, 10):
            runs[due.key] += 1
            q.done(due.key, now=now, failed=False)
        now += 0.5
    assert runs["fast"] >= 19 and runs["slow"] <= 2


@pytest.mark.parametrize(
    ("failures", "expected"), [(1, 0.005), (2, 0.01), (10, 2.56), (30, 1000.0)], ids=["1", "2", "10", "capped"]
)
def test_item_backoff(failures: int, expected: float) -> None:
    b = ItemExponentialBackoff()
    delay = 0.0
    for _ in range(failures):
        delay = b.when("x")
    assert delay == pytest.approx(expected)


def test_token_bucket_allows_a_burst_of_100_then_10_per_second() -> None:
    clock = FakeClock(0.0)
    bucket = TokenBucket(clock=clock)
    assert all(bucket.when() == 0.0 for _ in range(100))
    assert bucket.when() == pytest.approx(0.1)
    assert bucket.when() == pytest.approx(0.2)
    clock.now = 10.0
    assert bucket.when() == 0.0


async def test_pool_runs_at_most_n_syncs_and_never_one_key_twice() -> None:
    clock = FakeClock(0.0)
    q: DueQueue[str] = DueQueue(limiter=NoRetryLimit())
    release = asyncio.Event()
    running: list[str] = []
    peak = 0

    async def sync(key: str) -> bool:
        nonlocal peak
        assert key not in running
        running.append(key)
        peak = max(peak, len(running))
        await release.wait()
        running.remove(key)
        return True

    pool = WorkerPool(q, sync, concurrency=3, clock=clock)
    for i in range(7):
        q.add(f"k{i}", uid=f"u{i}", period=15.0, now=0.0, immediate=True)
    assert pool.start_due() == 3
    await asyncio.sleep(0)
    q.add("k0", uid="u0", period=15.0, now=0.0, immediate=True)
    assert pool.start_due() == 0
    release.set()
    for _ in range(5):
        await asyncio.sleep(0)
    assert pool.start_due() == 3  # k0 again (dirty), and two more
    for _ in range(5):
        await asyncio.sleep(0)
    assert peak == 3


async def test_pool_reports_lateness_and_failures_and_idles_when_not_leader() -> None:
    clock = FakeClock(0.0)
    q: DueQueue[str] = DueQueue(limiter=NoRetryLimit())
    leader = False
    late: list[float] = []
    outcomes: list[tuple[str, bool]] = []

    async def sync(key: str) -> bool:
        if key == "worse":
            raise RuntimeError("boom")
        return key != "bad"

    pool = WorkerPool(q, sync, concurrency=5, clock=clock, active=lambda: leader,
                      on_start=lambda d: late.append(d.lateness),
                      on_done=lambda k, failed: outcomes.append((k, failed)))  # fmt: skip
    q.add("good", uid="g", period=15.0, now=0.0, immediate=True)
    q.add("bad", uid="b", period=15.0, now=0.0, immediate=True)
    q.add("worse", uid="w", period=15.0, now=0.0, immediate=True)
    clock.now = 2.0
    assert pool.start_due() == 0, "a standby runs no syncs"
    leader = True
    assert pool.start_due() == 3
    for _ in range(3):
        await asyncio.sleep(0)
    assert late == [2.0, 2.0, 2.0]
    assert sorted(outcomes) == [("bad", True), ("good", False), ("worse", True)]
    assert q.due_time("bad") == pytest.approx(3.0), "failed: retried after the limiter's delay"


async def test_the_dispatcher_starts_the_next_due_key_as_soon_as_a_slot_frees() -> None:
    """With every slot taken, a finished sync must wake the dispatcher after its slot is free;
    woken before that, it saw no free slot, idled for an hour and left due keys waiting."""
    clock = FakeClock(0.0)
    q: DueQueue[str] = DueQueue(limiter=NoRetryLimit())
    started: list[str] = []

    async def sync(key: str) -> bool:
        started.append(key)
        await asyncio.sleep(0)
        return True

    pool = WorkerPool(q, sync, concurrency=2, clock=clock)
    for i in range(6):
        q.add(f"k{i}", uid=f"u{i}", period=15.0, now=0.0, immediate=True)
    dispatcher = asyncio.create_task(pool.run())
    try:
        for _ in range(50):
            await asyncio.sleep(0)
            if len(started) == 6:
                break
        assert sorted(started) == [f"k{i}" for i in range(6)]
    finally:
        dispatcher.cancel()
