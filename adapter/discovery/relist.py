"""Periodic series discovery: relist Prometheus, build a new Registry, swap it in atomically.

Every `--metrics-relist-interval` (and once at start) it sends ONE `/api/v1/series` call per
distinct `seriesQuery` of the custom AND external rules (prometheus-adapter fetches a query
shared by both twice), over the window [now - `--metrics-max-age`, now]. Answers are streamed
into `SeriesDigest`s, so memory does not grow with the number of series. The new Registry
replaces the old one in a single attribute assignment: handlers see the old or the new
snapshot, never a half-built one.

A failed relist (any query failing or timing out) keeps the WHOLE last good snapshot (as
prometheus-adapter does), is logged and counted in `stats`; the next attempt comes after a short
backoff (1 s doubling up to the interval) instead of a whole interval, so a Prometheus that was
down at start is picked up quickly.

An empty answer to a query that found series in the snapshot is suspect: right after a restart
Prometheus answers `/api/v1/series` with nothing before its WAL is replayed, a restarted one has
no samples for the time it was down and until its first scrapes (a short look-back window may
fall into that hole), and one restarted on empty storage knows nothing older than its start. So
when any query comes back empty that way, the backend's health is read: if it is not ready, or
has been scraping only since after the look-back window began, the relist counts as failed
(`suspect_total`) and the previous snapshot stays until a relist succeeds against a ready
Prometheus that covers the window. Series
that really stopped disappear once that is the case. A relist that finds no series at all with
no previous series (nothing scraped yet) is swapped in, and the next one comes after the short
backoff too. Before the first success the snapshot is an empty Registry and `ready` is False.

An answer that fails validation anywhere (an item that is no label set, a label value that is no
string) fails the relist whole (`invalid_total`): the last good snapshot stays, never one built
from the part of the answer that looked right.

A metric leaves the registry only when two relists in a row miss it (`registry.carry_over`): one
relist that misses a series (a scrape gap, a Prometheus restarted on fresh storage) keeps serving
it. A request for a metric the last relist dropped re-checks Prometheus (`recheck`).

While the last attempt failed the snapshot is stale: `stale` and `age()` say so, for /readyz and
/metrics.

The clock and the sleep are injected. Non-goals: rule compilation, query rendering.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace

from adapter.discovery.recheck import MissingMetrics
from adapter.discovery.registry import (
    CustomMetricEntry,
    CustomMetricInfo,
    ExternalMetricEntry,
    Registry,
    SeriesDigest,
    build_registry_from_digests,
    carry_over,
)
from adapter.prometheus.api import BackendHealth, PrometheusAPI
from adapter.prometheus.errors import PrometheusBadResponse, PrometheusError, PrometheusTimeout
from adapter.rules.compile import CompiledConfig
from adapter.rules.gotemplate_exec import go_quote

__all__ = ["Discovery", "DiscoveryStats", "SuspectAnswer"]

log = logging.getLogger(__name__)


class SuspectAnswer(PrometheusError):
    """Queries that found series before came back empty from a backend that is not ready, or
    that holds data only since after the look-back window began."""


class _QueryFailed(Exception):
    """A relist's series query failed: the backend's error and the query, named in the log line."""

    def __init__(self, query: str, error: PrometheusError) -> None:
        super().__init__(query, error)
        self.query, self.error = query, error


@dataclass(frozen=True, slots=True, kw_only=True)
class DiscoveryStats:
    relists_total: int = 0
    failures_total: int = 0
    suspect_total: int = 0
    """Failures that were suspect empty answers (part of `failures_total`)."""
    invalid_total: int = 0
    """Failures that were answers refused as invalid (part of `failures_total`)."""
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
            "suspect_total": float(self.suspect_total),
            "invalid_total": float(self.invalid_total),
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
        self._relisting = asyncio.Lock()  # a reload's relist and the loop's never interleave
        self.missing = MissingMetrics(self, prometheus, clock=clock)
        """The services' miss path: re-checks of dropped metrics, 503 when unreachable."""

    @property
    def snapshot(self) -> Registry:
        return self._snapshot

    def restore(self, info: CustomMetricInfo | str, entry: CustomMetricEntry | ExternalMetricEntry) -> None:
        """Serve a dropped metric again (a re-check found it), if the rules did not change since."""
        if any(entry.rule is rule for rule in (*self._compiled.custom, *self._compiled.external)):
            self._snapshot = self._snapshot.restored(info, entry)

    @property
    def ready(self) -> bool:
        """A relist has succeeded since start (the registry is no longer the empty placeholder)."""
        return self._stats.last_success_time is not None

    @property
    def stats(self) -> DiscoveryStats:
        return self._stats

    @property
    def stale(self) -> bool:
        """A snapshot is served but the last relist failed: it may miss or keep metrics."""
        return self.ready and self._stats.consecutive_failures > 0

    def age(self) -> float | None:
        """Seconds since the relist that built the served snapshot (None before the first)."""
        return self._clock() - self._snapshot.created_at if self.ready else None

    def freshness(self) -> tuple[bool, str]:
        """The readiness check: ready after the first relist; the reason says when it is stale."""
        if not self.ready:
            return False, "no successful relist yet"
        if not self.stale:
            return True, ""
        return True, (f"registry stale: built {self.age() or 0.0:.0f}s ago, "
                      f"{self._stats.consecutive_failures} failed relists since")

    def state_metrics(self) -> Mapping[str, float | None]:
        """`stats.as_metrics()` plus the served snapshot's staleness and age."""
        age = self.age()
        return {**self._stats.as_metrics(), "registry_stale": float(self.stale),
                "registry_age_seconds": age, "rechecks_total": float(self.missing.rechecks_total)}

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

    async def use_rules(self, compiled: CompiledConfig) -> bool:
        """New rules (a reloaded rule file): relist with them now; the registry built from them
        replaces the current one only if that relist succeeds (else the next one retries)."""
        self._compiled = compiled
        return await self.relist()

    async def relist(self) -> bool:
        """One relist; swaps the snapshot on success. Returns whether it succeeded."""
        async with self._relisting:
            return await self._relist_once()

    async def _relist_once(self) -> bool:
        started = self._clock()
        end = started
        start = end - self.max_age
        compiled = self._compiled
        try:
            async with asyncio.timeout(self._relist_timeout):
                digests = dict(await asyncio.gather(
                    *(self._fetch(query, start, end) for query in compiled.series_queries)))
            await self._check_suspect_empties(digests, start)
            registry = carry_over(self._snapshot, build_registry_from_digests(compiled, digests, created_at=started))
        except _QueryFailed as failed:
            self._failed(failed.error, self._clock() - started, query=failed.query)
            return False
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
        if registry.unpastable_series:
            log.warning("series discovery: %d series left out, their names are no classic metric names and "
                        "their rules paste them as <<.Series>> (narrow the seriesQuery): %s",
                        len(registry.unpastable_series), ", ".join(map(repr, registry.unpastable_series[:5])))
        return True

    async def _fetch(self, query: str, start: float, end: float) -> tuple[str, SeriesDigest]:
        digest = SeriesDigest()
        async with self._limit:
            try:
                await self._prometheus.series_foreach([query], start=start, end=end, sink=digest.add)
            except PrometheusError as err:
                raise _QueryFailed(query, err) from err
        return query, digest

    async def _check_suspect_empties(self, digests: Mapping[str, SeriesDigest], start: float) -> None:
        """Raise SuspectAnswer when an empty answer cannot be trusted (see the module doc)."""
        before = self._snapshot.series_by_query
        emptied = [q for q, digest in digests.items() if digest.count == 0 and before.get(q, 0) > 0]
        if not emptied or not self.ready:
            return
        health: BackendHealth = await self._prometheus.health()
        if health.ready is False:
            why = "Prometheus is not ready"
        elif health.covered_since is not None and health.covered_since > start:
            why = (f"Prometheus restarted recently: its scrapes do not cover the {self.max_age:g}s "
                   "look-back window yet")
        else:
            return  # a ready backend that covers the window: those series really stopped
        raise SuspectAnswer(f"{len(emptied)} series queries that found series before came back empty "
                            f"and {why}; keeping the previous registry (first: {emptied[0]})")

    def _failed(self, err: PrometheusError, duration: float, *, query: str | None = None) -> None:
        self._stats = replace(
            self._stats, relists_total=self._stats.relists_total + 1,
            failures_total=self._stats.failures_total + 1,
            suspect_total=self._stats.suspect_total + isinstance(err, SuspectAnswer),
            invalid_total=self._stats.invalid_total + isinstance(err, PrometheusBadResponse),
            consecutive_failures=self._stats.consecutive_failures + 1,
            last_duration_seconds=duration, last_error=str(err),
        )
        kept = "keeping the last good registry" if self.ready else "no registry yet"
        # prometheus-adapter's words first: what users' log alerts and searches for it look for
        cause = f"unable to fetch metrics for query {go_quote(query)}: {err}" if query else str(err)
        log.warning("unable to update list of all metrics: %s (series discovery failed %d in a row, %s)",
                    cause, self._stats.consecutive_failures, kept)

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
