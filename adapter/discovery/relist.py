"""Periodic series discovery: relist Prometheus, build a new Registry, swap it in atomically.

Every `--metrics-relist-interval` (and once at start) it sends ONE `/api/v1/series` call per
distinct `seriesQuery` of the custom AND external rules (prometheus-adapter fetches a query
shared by both twice), over the window [now - `--metrics-max-age`, now]. Answers are streamed
into `SeriesDigest`s, so memory does not grow with the number of series. The new Registry
replaces the old one in a single attribute assignment: handlers see the old or the new
snapshot, never a half-built one.

A failed relist (any query failing or timing out) keeps the last good snapshot, is logged and
counted in `stats`; the next attempt comes after a short backoff (1 s doubling up to the
interval) instead of a whole interval, so a Prometheus that was down at start is picked up
quickly. A relist that finds no series at all (a Prometheus restarted with empty storage, or
not scraped yet) is swapped in, and the next one also comes after the short backoff. Before the first success the snapshot is an empty Registry and `ready` is False.

The clock and the sleep are injected. Non-goals: rule compilation, query rendering.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace

from adapter.discovery.registry import Registry, SeriesDigest, build_registry_from_digests
from adapter.prometheus.api import PrometheusAPI
from adapter.prometheus.errors import PrometheusError, PrometheusTimeout
from adapter.rules.compile import CompiledConfig

__all__ = ["Discovery", "DiscoveryStats"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class DiscoveryStats:
    relists_total: int = 0
    failures_total: int = 0
    consecutive_failures: int = 0
    consecutive_empty: int = 0
    """Successful relists in a row that found no series at all (e.g. a Prometheus that just
    restarted with empty storage): the next one comes after the short backoff too."""
    last_duration_seconds: float | None = None
    last_success_time: float | None = None
    last_error: str | None = None
    series_last: int = 0
    metrics_last: int = 0

    def as_metrics(self) -> Mapping[str, float | None]:
        """Numbers for the adapter's /metrics (`StateSource.relist`)."""
        return {
            "last_duration_seconds": self.last_duration_seconds,
            "failures_total": float(self.failures_total),
            "last_success_timestamp_seconds": self.last_success_time,
            "series": float(self.series_last),
            "metrics": float(self.metrics_last),
        }


class Discovery:
    """Owns the relist loop and the current snapshot. Mutable: it is the one place that swaps."""

    def __init__(
        self,
        prometheus: PrometheusAPI,
        compiled: CompiledConfig,
        *,
        interval: float,
        max_age: float = 0.0,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        relist_timeout: float = 120.0,
        max_concurrency: int = 4,
        retry_initial: float = 1.0,
    ) -> None:
        self._prometheus = prometheus
        self._compiled = compiled
        self.interval = interval
        self.max_age = max_age or interval  # prometheus-adapter: 0 means the relist interval
        self._clock = clock
        self._sleep = sleep
        self._relist_timeout = relist_timeout
        self._limit = asyncio.Semaphore(max_concurrency)
        self._retry_initial = retry_initial
        self._snapshot = Registry.empty()
        self._stats = DiscoveryStats()
        self._task: asyncio.Task[None] | None = None
        self._queries = compiled.series_queries

    @property
    def snapshot(self) -> Registry:
        return self._snapshot

    @property
    def ready(self) -> bool:
        """A relist has succeeded since start (the registry is no longer the empty placeholder)."""
        return self._stats.last_success_time is not None

    @property
    def stats(self) -> DiscoveryStats:
        return self._stats

    async def start(self) -> None:
        """First relist (its failure is not fatal), then the loop in the background."""
        if self._task is not None:
            return
        await self.relist()
        self._task = asyncio.create_task(self._run(), name="series-discovery")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def relist(self) -> bool:
        """One relist; swaps the snapshot on success. Returns whether it succeeded."""
        started = self._clock()
        end = started
        start = end - self.max_age
        try:
            async with asyncio.timeout(self._relist_timeout):
                digests = dict(await asyncio.gather(
                    *(self._fetch(query, start, end) for query in self._queries)))
            registry = build_registry_from_digests(self._compiled, digests, created_at=started)
        except (PrometheusError, TimeoutError) as err:
            if isinstance(err, TimeoutError):
                err = PrometheusTimeout(f"relist took longer than {self._relist_timeout:g}s")
            self._failed(err, self._clock() - started)
            return False
        self._snapshot = registry  # the atomic swap
        self._stats = replace(
            self._stats, relists_total=self._stats.relists_total + 1, consecutive_failures=0,
            consecutive_empty=0 if registry.series_count else self._stats.consecutive_empty + 1,
            last_duration_seconds=self._clock() - started, last_success_time=started,
            last_error=None, series_last=registry.series_count, metrics_last=len(registry),
        )
        log.info("series discovery: %d series -> %d custom, %d external metrics in %.2fs",
                 registry.series_count, len(registry.custom), len(registry.external),
                 self._stats.last_duration_seconds)
        return True

    async def _fetch(self, query: str, start: float, end: float) -> tuple[str, SeriesDigest]:
        digest = SeriesDigest()
        async with self._limit:
            await self._prometheus.series_foreach([query], start=start, end=end, sink=digest.add)
        return query, digest

    def _failed(self, err: PrometheusError, duration: float) -> None:
        self._stats = replace(
            self._stats, relists_total=self._stats.relists_total + 1,
            failures_total=self._stats.failures_total + 1,
            consecutive_failures=self._stats.consecutive_failures + 1,
            last_duration_seconds=duration, last_error=str(err),
        )
        kept = "keeping the last good registry" if self.ready else "no registry yet"
        log.warning("series discovery failed (%d in a row), %s: %s",
                    self._stats.consecutive_failures, kept, err)

    def _next_delay(self) -> float:
        misses = self._stats.consecutive_failures or self._stats.consecutive_empty
        if misses == 0:
            return self.interval
        return min(self.interval, self._retry_initial * 2.0 ** min(misses - 1, 32))

    async def _run(self) -> None:
        while True:
            await self._sleep(self._next_delay())
            try:
                await self.relist()
            except Exception:  # a bug must not kill discovery for the process lifetime
                log.exception("series discovery: unexpected error")
