"""Leader election on a coordination.k8s.io/v1 Lease with client-go's semantics and defaults.

Job: `LeaderElector` runs as a candidate until it holds the Lease (create on 404; take it when
it is released or its record has not changed for the lease duration on our own clock), then
runs the caller's leading coroutine and renews every retry period; every write is a PUT carrying
the resourceVersion it read, so of two racing candidates one gets 409 and loses. If no renew
succeeds within the renew deadline, leading stops (the coroutine is cancelled). `is_leader()` is
the cheap fence checked before every write: true only while the last successful renew started
less than the renew deadline ago, which keeps client-go's 5 s margin before any follower may
take over. `release()` (on shutdown, after the last checkpoint) writes what ReleaseOnCancel
writes, so a standby takes over within one retry period instead of one lease duration.

Defaults 15 s / 10 s / 2 s with followers retrying every 2-4.4 s (JitterFactor 1.2) as in
client-go. Timing uses the event loop's monotonic clock (a parameter); wall time only goes into
the MicroTime stamps, written in UTC. The Lease announces the lease duration rounded *up* to whole
seconds (client-go truncates: a 10.4 s lease announced as 10 s lets a standby in before a 10.2 s
renew deadline has stopped the leader). Deadlines use `asyncio.timeout`, not `wait_for`, whose
3.11 version drops a cancel that lands in the same loop turn as the answer. The "became leader"
Event is sent beside the leading work, never before it (client-go records it asynchronously).

Why not `kubernetes.aio.leaderelection` (37.x): it has no release and no is-leader state; it
stamps renewTime from a naive local datetime suffixed "Z" (observed: TZ=Asia/Tokyo writes a
renewTime 9 h ahead); it never sets leaseTransitions; its renew deadline is wall-clock based and
a hung request is not bounded by it; and it needs a second client stack beside KubeClient.

Non-goals: fencing tokens (none exist upstream: two leaders can overlap for at most the gap the
renew deadline leaves), exiting the process on loss (the caller decides), metrics export.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from controller.run.leader_record import (LEASE_API, LeaseRecord, acquire_spec, leader_event,
                                          may_acquire, record_from_lease, release_spec)
from kubecommon.kube.errors import KubeAPIError, KubeError

__all__ = ["LeaderElector", "LeaseTransport"]

_log = logging.getLogger(__name__)
_JITTER_FACTOR = 1.2


class LeaseTransport(Protocol):
    """The one call the elector makes; `kubecommon.kube.client.KubeClient` provides it."""

    async def request_json(self, method: str, path: str, *, params: Mapping[str, str] | None = None,
                           body: Any = None, timeout: float | None = None) -> dict[str, Any]: ...


class LeaderElector:
    def __init__(self, client: LeaseTransport, namespace: str, name: str, identity: str,
                 lease_duration: float = 15.0, renew_deadline: float = 10.0, retry_period: float = 2.0,
                 clock: Callable[[], float] | None = None, *, wall_clock: Callable[[], float] = time.time,
                 rng: random.Random | None = None, emit_events: bool = True) -> None:
        if not lease_duration > renew_deadline > _JITTER_FACTOR * retry_period > 0:
            raise ValueError("leader election needs lease duration > renew deadline > 1.2 × retry period > 0 "
                             f"(got {lease_duration}, {renew_deadline}, {retry_period})")
        if not identity:
            raise ValueError("leader election needs a non-empty identity")
        self.client, self.namespace, self.name, self.identity = client, namespace, name, identity
        self.lease_duration, self.renew_deadline, self.retry_period = lease_duration, renew_deadline, retry_period
        self._announced_duration = math.ceil(lease_duration)  # whole seconds, never below lease_duration
        self._clock = clock
        self._wall_clock = wall_clock
        self._rng = rng or random.Random()
        self._emit_events = emit_events
        self._path = f"/apis/{LEASE_API}/namespaces/{namespace}/leases/{name}"
        self._observed: LeaseRecord | None = None
        self._observed_at = float("-inf")
        self._observed_lease: dict[str, Any] = {}
        self._renewed_at = float("-inf")  # start of the last successful acquire/renew, when we hold it
        self._holding = False  # our last write made us the holder (release() may give it up)
        self.leader_transitions = 0  # times this elector became leader

    # --- state ------------------------------------------------------------------------------------
    def now(self) -> float:
        return self._clock() if self._clock is not None else asyncio.get_running_loop().time()

    def is_leader(self) -> bool:
        """True only while a renew that started less than the renew deadline ago succeeded.

        Stays true after `run()` is cancelled until the deadline passes or `release()` is called,
        so a shutdown checkpoint can still be written safely (no follower may take over sooner).
        """
        return self._holding and self.now() - self._renewed_at < self.renew_deadline

    def renew_age(self) -> float:
        """Seconds since the last successful renew started (inf when not holding)."""
        return self.now() - self._renewed_at if self._holding else float("inf")

    def healthy(self, tolerance: float = 0.0) -> bool:
        """client-go's watchdog: unhealthy if holding but not renewed for lease duration + tolerance."""
        return not self._holding or self.renew_age() <= self.lease_duration + tolerance

    @property
    def observed_holder(self) -> str:
        return self._observed.holder if self._observed is not None else ""

    # --- run --------------------------------------------------------------------------------------
    async def run(self, on_started_leading: Callable[[], Awaitable[None]],
                  on_stopped_leading: Callable[[], Awaitable[None]]) -> None:
        """Campaign, lead, and return once leadership is lost or the leading coroutine ends.

        `on_started_leading()` runs as a task while leading and is cancelled when a renew misses the
        deadline; `on_stopped_leading()` is awaited whenever leading ends (also on cancellation).
        An exception from the leading coroutine propagates after `on_stopped_leading()`. The Lease
        is not released here: call `release()` after the last checkpoint.
        """
        await self._campaign()
        self.leader_transitions += 1
        _log.info("%s became leader of lease %s/%s", self.identity, self.namespace, self.name)
        renewing = asyncio.create_task(self._renew_until_lost(), name="leader:renew")
        leading = asyncio.create_task(_as_coroutine(on_started_leading), name="leader:leading")
        announcing = asyncio.create_task(self._event(became=True), name="leader:event")
        try:
            await asyncio.wait({leading, renewing}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (renewing, leading, announcing):
                task.cancel()
            await asyncio.gather(renewing, leading, announcing, return_exceptions=True)
            if not renewing.cancelled() and renewing.exception() is None:
                _log.warning("%s lost lease %s/%s: no renew within %.1f s", self.identity, self.namespace,
                             self.name, self.renew_deadline)
            await on_stopped_leading()
        error = None if leading.cancelled() else leading.exception()
        if error is not None:
            raise error

    async def _campaign(self) -> None:
        while True:
            started = self.now()
            if await self._attempt(timeout=self.renew_deadline):
                self._renewed_at = started
                self._holding = True
                return
            await asyncio.sleep(self.retry_period * (1.0 + self._rng.random() * _JITTER_FACTOR))

    async def _renew_until_lost(self) -> None:
        """Renew every retry period; return when the renew deadline passes without a success."""
        while True:
            await asyncio.sleep(self.retry_period)
            while True:
                started = self.now()
                remaining = self._renewed_at + self.renew_deadline - started
                if remaining <= 0:
                    self._holding = False
                    return
                if await self._attempt(timeout=remaining):
                    self._renewed_at = started
                    break
                if not self._holding:  # someone else holds it now: do not wait for the deadline
                    return
                await asyncio.sleep(min(self.retry_period, max(0.0, remaining - (self.now() - started))))

    async def _attempt(self, *, timeout: float) -> bool:
        try:
            async with asyncio.timeout(timeout):
                return await self._try_acquire_or_renew()
        except (KubeError, TimeoutError) as err:
            _log.info("%s: lease %s/%s not acquired/renewed: %s", self.identity, self.namespace, self.name, err)
            return False

    async def _try_acquire_or_renew(self) -> bool:
        try:
            lease = await self.client.request_json("GET", self._path)
        except KubeAPIError as err:
            if err.code != 404:
                raise
            return await self._create()
        self._observe(lease)
        record = record_from_lease(lease)
        if not may_acquire(record, identity=self.identity, observed_for=self.now() - self._observed_at,
                           default_duration=self.lease_duration):
            self._holding = False
            return False
        spec = acquire_spec(record, identity=self.identity, lease_duration=self._announced_duration,
                            now_wall=self._wall_clock())
        return await self._write("PUT", self._path, {**lease, "spec": {**(lease.get("spec") or {}), **spec}})

    async def _create(self) -> bool:
        spec = acquire_spec(None, identity=self.identity, lease_duration=self._announced_duration,
                            now_wall=self._wall_clock())
        body = {"apiVersion": LEASE_API, "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace}, "spec": spec}
        return await self._write("POST", self._path.rsplit("/", 1)[0], body)

    async def _write(self, method: str, path: str, body: dict[str, Any]) -> bool:
        try:
            written = await self.client.request_json(method, path, body=body)
        except KubeAPIError as err:
            if err.code not in (409, 404):
                raise
            _log.debug("%s: lease write lost a race: %s", self.identity, err)
            return False
        self._observe(written)
        return True

    def _observe(self, lease: dict[str, Any]) -> None:
        record = record_from_lease(lease)
        if record != self._observed:
            self._observed = record
            self._observed_at = self.now()
        self._observed_lease = lease

    # --- release ----------------------------------------------------------------------------------
    async def release(self, timeout: float | None = None) -> bool:
        """Give the Lease up if we hold it (ReleaseOnCancel); True when the release was written.

        Leadership ends before the write is sent, so `is_leader()` is false from this call on.
        """
        was_holding, self._holding = self._holding, False
        if not was_holding:
            return False
        try:
            async with asyncio.timeout(timeout or self.renew_deadline):
                return await self._release()
        except (KubeError, TimeoutError) as err:
            _log.warning("%s: could not release lease %s/%s: %s", self.identity, self.namespace, self.name, err)
            return False

    async def _release(self) -> bool:
        lease = await self.client.request_json("GET", self._path)
        record = record_from_lease(lease)
        if record.holder != self.identity:
            return False
        spec = release_spec(record, now_wall=self._wall_clock())
        released = await self._write("PUT", self._path, {**lease, "spec": {**(lease.get("spec") or {}), **spec}})
        if released:
            _log.info("%s released lease %s/%s", self.identity, self.namespace, self.name)
            await self._event(became=False)
        return released

    async def _event(self, *, became: bool) -> None:
        """Best effort, bounded: an Event on the Lease like client-go's; failures are only logged."""
        if not self._emit_events:
            return
        uid = str((self._observed_lease.get("metadata") or {}).get("uid") or "")
        body = leader_event(namespace=self.namespace, lease_name=self.name, lease_uid=uid,
                            identity=self.identity, became=became, now_wall=self._wall_clock())
        try:
            async with asyncio.timeout(1.0):
                await self.client.request_json("POST", f"/api/v1/namespaces/{self.namespace}/events", body=body)
        except (KubeError, TimeoutError) as err:
            _log.debug("leader election event not recorded: %s", err)


async def _as_coroutine(factory: Callable[[], Awaitable[None]]) -> None:
    await factory()
