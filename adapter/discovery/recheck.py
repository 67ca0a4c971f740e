"""What a request for a metric the served registry lacks gets, beyond a plain 404.

* A metric the last relist dropped (missing from two relists in a row, `registry.carry_over`) is
  re-checked: its rule's `seriesQuery` runs again over the look-back window and, when the metric
  is back, the snapshot serves it again at once instead of 404ing until the next relist (10
  minutes by default).
* Any other missing metric costs no series query: the backend's health is read instead, so that
  a Prometheus that cannot be reached answers 503 whatever the registry holds (an honest empty
  relist followed by an outage must not answer 404 "could not find the metric").

Both are bounded and shared between requests, so unknown or dropped names cannot become a query
flood: one re-check per `seriesQuery` in flight (others wait for its answer) and its answer reused
for `recheck_interval` seconds; one health read in flight, reused for `probe_interval` seconds;
re-checks run one at a time. Failures raise the backend's `PrometheusError` (503 for an outage).

The clock is injected. Non-goals: the periodic relist (`relist`), the registry itself (`registry`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from adapter.discovery.registry import (
    CustomMetricEntry,
    CustomMetricInfo,
    ExternalMetricEntry,
    Registry,
    SeriesDigest,
    build_registry_from_digests,
)
from adapter.prometheus.api import PrometheusAPI
from adapter.prometheus.errors import PrometheusUnreachable

__all__ = ["MissingMetrics", "RegistryHolder"]


class RegistryHolder(Protocol):
    """What a re-check needs of the relist that owns the registry (`relist.Discovery`): the current
    snapshot (which carries its rules), the series age it lists, and a way to put a found metric back."""

    max_age: float

    @property
    def snapshot(self) -> Registry: ...

    def restore(self, info: CustomMetricInfo | str, entry: CustomMetricEntry | ExternalMetricEntry) -> None: ...

_T = TypeVar("_T")


class _Shared:
    """One call in flight per key, its outcome (value or error) reused for `ttl` seconds."""

    def __init__(self, clock: Callable[[], float], ttl: float) -> None:
        self._clock, self._ttl = clock, ttl
        self._done: dict[str, tuple[float, object, BaseException | None]] = {}
        self._inflight: dict[str, asyncio.Future[object]] = {}

    async def get(self, key: str, call: Callable[[], Awaitable[_T]]) -> _T:
        done = self._done.get(key)
        if done is not None and self._clock() - done[0] < self._ttl:
            if done[2] is not None:
                raise done[2]
            return done[1]  # type: ignore[return-value]
        future = self._inflight.get(key)
        if future is None:
            future = asyncio.ensure_future(self._run(key, call))
            self._inflight[key] = future
        return await asyncio.shield(future)  # type: ignore[arg-type]

    async def _run(self, key: str, call: Callable[[], Awaitable[object]]) -> object:
        try:
            value = await call()
        except Exception as err:
            self._done[key] = (self._clock(), None, err)
            raise
        else:
            self._done[key] = (self._clock(), value, None)
            return value
        finally:
            del self._inflight[key]


class MissingMetrics:
    """The miss path of the custom and external metrics services (see the module doc)."""

    def __init__(self, discovery: RegistryHolder, prometheus: PrometheusAPI, *,
                 clock: Callable[[], float] = time.time, recheck_interval: float = 5.0,
                 probe_interval: float = 2.0) -> None:
        self._discovery = discovery
        self._prometheus = prometheus
        self._clock = clock
        self._rechecks = _Shared(clock, recheck_interval)
        self._probes = _Shared(clock, probe_interval)
        self._one_at_a_time = asyncio.Lock()
        self.rechecks_total = 0

    async def custom(self, info: CustomMetricInfo) -> CustomMetricEntry | None:
        dropped = self._discovery.snapshot.dropped_custom.get(info)
        if dropped is None:
            await self._reachable()
            return None
        found = (await self._recheck(dropped.rule.series_query)).custom.get(info)
        if found is not None:
            self._discovery.restore(info, found)
        return found

    async def external(self, metric: str) -> ExternalMetricEntry | None:
        dropped = self._discovery.snapshot.dropped_external.get(metric)
        if dropped is None:
            await self._reachable()
            return None
        found = (await self._recheck(dropped.rule.series_query)).external.get(metric)
        if found is not None:
            self._discovery.restore(metric, found)
        return found

    async def _reachable(self) -> None:
        health = await self._probes.get("health", self._prometheus.health)
        if health.reachable is False:  # not a proxy's 401/403 on /-/ready: that is no outage
            raise PrometheusUnreachable("the backend is unreachable or unavailable")

    async def _recheck(self, series_query: str) -> Registry:
        rules = self._discovery.snapshot.rules

        async def run() -> Registry:
            async with self._one_at_a_time:
                self.rechecks_total += 1
                digest = SeriesDigest()
                end = self._clock()
                await self._prometheus.series_foreach([series_query], start=end - self._discovery.max_age,
                                                      end=end, sink=digest.add)
            if rules is None:
                return Registry.empty()
            return build_registry_from_digests(rules, {series_query: digest}, created_at=end)

        return await self._rechecks.get(series_query, run)
