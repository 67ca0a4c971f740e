"""Leader election against a map-backed Lease endpoint on a virtual loop clock (client-go timings).

What a user of two controller replicas notices: only one leads; a killed leader is replaced within
the lease duration plus one jittered retry; a released lease is taken within one jittered retry;
a leader that cannot renew stops acting (is_leader false, work cancelled) before any follower may
take over; the Lease carries MicroTime stamps and counts transitions.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Awaitable, Callable

import pytest

from controller.run.leader import LeaderElector

from .leader_fakes import FakeLeases, Link, virtual_time

MICRO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")
FOLLOWER_RETRY_MAX = 2.0 * 2.2  # retry period × (1 + JitterFactor)


class NoJitter(random.Random):
    """A candidate that retries exactly every retry period."""

    def random(self) -> float:
        return 0.0


class Replica:
    """One elector plus what its leading work saw: start/stop times."""

    def __init__(self, leases: FakeLeases, identity: str, seed: int = 0, *, link: Link | None = None,
                 rng: random.Random | None = None, **timings: float) -> None:
        self.elector = LeaderElector(link or leases, "kube-system", "ctl", identity, rng=rng or random.Random(seed),
                                     **timings)
        self.started_at: float | None = None
        self.stopped_at: float | None = None
        self.work_cancelled = False
        self.task: asyncio.Task[None] | None = None

    def start(self, work: Callable[[], Awaitable[None]] | None = None) -> None:
        self.task = asyncio.create_task(self.elector.run(work or self._work, self._stopped))

    async def _work(self) -> None:
        self.started_at = asyncio.get_running_loop().time()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.work_cancelled = True
            raise

    async def _stopped(self) -> None:
        self.stopped_at = asyncio.get_running_loop().time()

    async def kill(self) -> None:
        assert self.task is not None
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


async def until(check: Callable[[], bool], limit: float) -> float:
    """Virtual seconds until `check()` holds; fails past `limit`."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    while not check():
        if loop.time() - start > limit:
            raise AssertionError(f"not reached within {limit} virtual seconds")
        await asyncio.sleep(0.05)
    return loop.time() - start


@pytest.fixture
def leases() -> FakeLeases:
    return FakeLeases()


async def test_first_candidate_creates_the_lease_and_leads(leases: FakeLeases) -> None:
    with virtual_time(asyncio.get_running_loop()):
        a = Replica(leases, "a")
        a.start()
        await until(a.elector.is_leader, 1.0)
        await asyncio.sleep(7)
        spec = leases.spec()
        assert spec["holderIdentity"] == "a" and spec["leaseDurationSeconds"] == 15
        assert spec["leaseTransitions"] == 0
        assert MICRO.fullmatch(spec["acquireTime"]) and MICRO.fullmatch(spec["renewTime"])
        assert spec["acquireTime"] == leases.writes[0][1]["acquireTime"]  # kept while renewing
        assert [m for m, _ in leases.writes] == ["POST", "PUT", "PUT", "PUT"]  # renewed every 2 s
        assert a.started_at is not None
        assert [e["message"] for e in leases.events] == ["a became leader"]
        await a.kill()


async def test_only_one_of_two_candidates_leads(leases: FakeLeases) -> None:
    with virtual_time(asyncio.get_running_loop()):
        a, b = Replica(leases, "a", 1), Replica(leases, "b", 2)
        a.start()
        b.start()
        for _ in range(60):
            await asyncio.sleep(1)
            assert [a.elector.is_leader(), b.elector.is_leader()].count(True) == 1
        assert {leases.spec()["holderIdentity"]} == {r.elector.identity for r in (a, b) if r.elector.is_leader()}
        await a.kill()
        await b.kill()


async def test_killed_leader_is_replaced_within_the_lease_duration(leases: FakeLeases) -> None:
    with virtual_time(asyncio.get_running_loop()):
        a, b = Replica(leases, "a", 1), Replica(leases, "b", 2)
        a.start()
        await until(a.elector.is_leader, 1.0)
        b.start()
        await asyncio.sleep(10)
        await a.kill()  # no release: the lease just stops being renewed
        waited = await until(b.elector.is_leader, 30.0)
        assert waited <= 15.0 + 2 * FOLLOWER_RETRY_MAX  # last renew seen up to one retry late
        assert leases.spec()["holderIdentity"] == "b" and leases.spec()["leaseTransitions"] == 1
        await b.kill()


async def test_released_lease_is_taken_within_one_retry(leases: FakeLeases) -> None:
    with virtual_time(asyncio.get_running_loop()):
        a, b = Replica(leases, "a", 1), Replica(leases, "b", 2)
        a.start()
        await until(a.elector.is_leader, 1.0)
        b.start()
        await asyncio.sleep(10)
        await a.kill()
        assert await a.elector.release() is True
        assert not a.elector.is_leader()
        released = [spec for _, spec in leases.writes if spec["holderIdentity"] == ""]
        assert released and released[0]["leaseDurationSeconds"] == 1
        waited = await until(b.elector.is_leader, 10.0)
        assert waited <= FOLLOWER_RETRY_MAX
        assert leases.spec()["leaseTransitions"] == 1
        assert await a.elector.release() is False  # nothing held any more
        await b.kill()


@pytest.mark.parametrize("failure", ["down", "hang"])
async def test_leader_that_cannot_renew_stops_before_anyone_may_take_over(leases: FakeLeases,
                                                                          failure: str) -> None:
    with virtual_time(asyncio.get_running_loop()):
        loop = asyncio.get_running_loop()
        a = Replica(leases, "a")
        a.start()
        await until(a.elector.is_leader, 1.0)
        last_renew = loop.time()
        setattr(leases, failure, True)
        await until(lambda: not a.elector.is_leader(), 12.0)
        assert loop.time() - last_renew <= 10.0  # the renew deadline
        await until(lambda: a.task is not None and a.task.done(), 1.0)
        assert a.work_cancelled and a.stopped_at is not None
        assert a.stopped_at - last_renew <= 10.0 + 0.1  # 5 s before a follower's 15 s expiry


async def test_a_concurrent_writer_gets_a_conflict_and_does_not_lead(leases: FakeLeases) -> None:
    with virtual_time(asyncio.get_running_loop()):
        replicas = [Replica(leases, f"r{i}", i) for i in range(4)]
        for r in replicas:
            r.start()
        await asyncio.sleep(20)
        assert sum(r.elector.is_leader() for r in replicas) == 1
        assert leases.spec()["leaseTransitions"] == 0
        for r in replicas:
            await r.kill()


async def test_leading_work_that_fails_ends_leading_and_surfaces_the_error(leases: FakeLeases) -> None:
    async def broken() -> None:
        raise RuntimeError("worker crashed")

    with virtual_time(asyncio.get_running_loop()):
        a = Replica(leases, "a")
        a.start(broken)
        with pytest.raises(RuntimeError, match="worker crashed"):
            await a.task  # type: ignore[misc]
        assert a.stopped_at is not None


@pytest.mark.parametrize(("lease", "renew", "retry"), [(10, 10, 2), (15, 10, 9), (15, 10, 0), (5, 10, 2)],
                         ids=["lease-not-above-renew", "renew-not-above-1.2-retry", "zero-retry",
                              "lease-below-renew"])
def test_inconsistent_timings_are_refused(lease: float, renew: float, retry: float) -> None:
    with pytest.raises(ValueError, match="lease duration > renew deadline"):
        LeaderElector(FakeLeases(), "ns", "n", "me", lease_duration=lease, renew_deadline=renew,
                      retry_period=retry)


@pytest.mark.parametrize(("lease", "renew", "retry"), [(10.4, 10.2, 2.0), (2.5, 2.2, 1.0)],
                         ids=["10.4s-lease-10.2s-renew", "2.5s-lease-2.2s-renew"])
async def test_a_fractional_lease_duration_never_gives_two_leaders(leases: FakeLeases, lease: float, renew: float,
                                                                   retry: float) -> None:
    """The Lease announces whole seconds; a standby waits what it announces, not what the leader was told."""
    with virtual_time(asyncio.get_running_loop()):
        loop = asyncio.get_running_loop()
        a = Replica(leases, "a", link=Link(leases), lease_duration=lease, renew_deadline=renew, retry_period=retry)
        watcher = Replica(leases, "b", rng=NoJitter(), lease_duration=1.0, renew_deadline=0.5, retry_period=0.05)
        a.start()
        await until(a.elector.is_leader, 1.0)
        watcher.start()
        await asyncio.sleep(retry * 1.5)
        a.elector.client.down = True  # type: ignore[attr-defined]  # cut off: no more renews
        cut = loop.time()
        while not watcher.elector.is_leader():
            assert loop.time() - cut < lease + 2.0, "the standby never took over"
            await asyncio.sleep(0.01)
        assert not a.elector.is_leader(), "two leaders at once: the standby took over before the fence closed"
        assert leases.spec()["leaseDurationSeconds"] == 1
        assert leases.writes[0][1]["leaseDurationSeconds"] >= lease
        await a.kill()
        await watcher.kill()


async def test_a_cancel_arriving_with_the_acquire_answer_still_stops_the_elector(leases: FakeLeases) -> None:
    """Shutdown's cancel may land in the same loop turn as the API server's answer: it must not be lost
    (else the replica starts leading during shutdown, shutdown never ends and the Lease is never released)."""
    with virtual_time(asyncio.get_running_loop()):
        link = Link(leases)
        a = Replica(leases, "a", link=link)
        link.after_write = lambda: a.task.cancel() if a.task is not None else None
        a.start()
        await until(lambda: a.task is not None and a.task.done(), 5.0)
        assert a.task is not None and a.task.cancelled()
        assert a.stopped_at is not None and (a.started_at is None or a.work_cancelled)  # leading ended
        link.after_write = None
        assert await a.elector.release() is True
        assert leases.spec()["holderIdentity"] == ""


async def test_a_hanging_events_endpoint_does_not_cost_the_lease(leases: FakeLeases) -> None:
    """client-go records "became leader" without waiting; short valid timings must not lose the lease to it."""
    with virtual_time(asyncio.get_running_loop()):
        link = Link(leases)
        link.hang_events = True
        a = Replica(leases, "a", link=link, lease_duration=2.0, renew_deadline=1.0, retry_period=0.5)
        a.start()
        await until(a.elector.is_leader, 1.0)
        for _ in range(40):  # 10 s: many renew periods
            await asyncio.sleep(0.25)
            assert a.elector.is_leader() and a.task is not None and not a.task.done()
        assert a.started_at is not None and a.elector.leader_transitions == 1
        await a.kill()
