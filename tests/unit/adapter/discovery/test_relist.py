"""Discovery's relist loop against the map-backed FakePrometheus, with a fake clock and sleep:
one series call per distinct seriesQuery, max-age window, atomic swap, failures keep the last
good registry, retry backoff when Prometheus is down at start, stopped series disappear."""

from __future__ import annotations

import asyncio

import pytest

from adapter.discovery.relist import Discovery
from adapter.prometheus import errors
from adapter.prometheus.api import PrometheusAPI, SeriesSink
from adapter.prometheus.fake import FakePrometheus, SeriesCall
from adapter.rules.compile import CompiledConfig
from adapter.rules.gotemplate_exec import go_quote

from .conftest import NOW, PODS, POD_QUERY, Clock, Sleeps, metrics_of, pod_series


async def test_one_series_call_per_distinct_query_over_max_age(
    prom: FakePrometheus, compiled: CompiledConfig
) -> None:
    clock = Clock()
    discovery = Discovery(prom, compiled, interval=60, clock=clock, sleep=Sleeps(clock))
    assert not discovery.ready and metrics_of(discovery) == set()
    await discovery.start()
    try:
        assert discovery.ready
        # 3 custom + 1 external rule, 2 distinct seriesQuery strings: 2 calls, max-age = interval
        assert sorted(prom.series_calls, key=lambda c: c.matchers) == [
            SeriesCall(matchers=("node_load1",), start=NOW - 60, end=NOW),
            SeriesCall(matchers=(POD_QUERY,), start=NOW - 60, end=NOW),
        ]
        assert metrics_of(discovery) == {
            "pods/http_requests_per_second", "namespaces/http_requests_per_second",
            "pods/memory_bytes", "namespaces/memory_bytes", "pods/queue_depth",
            "namespaces/queue_depth", "nodes/node_load1", "queue_depth"}
        assert discovery.stats.series_last == 4
        assert discovery.snapshot.created_at == NOW
    finally:
        await discovery.stop()


async def test_relist_every_interval_drops_series_missing_twice_and_swaps_atomically(
    prom: FakePrometheus, compiled: CompiledConfig
) -> None:
    clock = Clock()
    sleeps = Sleeps(clock)
    discovery = Discovery(prom, compiled, interval=30, max_age=90, clock=clock, sleep=sleeps)
    await discovery.start()
    try:
        before = discovery.snapshot
        prom.set_series(POD_QUERY, pod_series("http_requests_total"))  # the others stopped
        await sleeps.run(1)
        assert sleeps.delays == [30]
        assert len(prom.series_calls) == 4
        assert {(c.start, c.end) for c in prom.series_calls[2:]} == {(NOW + 30 - 90, NOW + 30)}
        # missing from one relist (a scrape gap?): still served
        assert "pods/memory_bytes" in metrics_of(discovery)
        assert discovery.snapshot is not before
        await sleeps.run(1)
        assert "pods/memory_bytes" not in metrics_of(discovery)
        assert "queue_depth" not in metrics_of(discovery)
        assert "pods/http_requests_per_second" in metrics_of(discovery)
        # a handler holding the previous snapshot still sees all of it
        assert before.lookup_custom(PODS, "memory_bytes", namespaced=True) is not None
    finally:
        await discovery.stop()


async def test_failed_relist_keeps_last_good_registry_and_is_counted(
    prom: FakePrometheus, compiled: CompiledConfig
) -> None:
    clock = Clock()
    sleeps = Sleeps(clock)
    discovery = Discovery(prom, compiled, interval=60, clock=clock, sleep=sleeps)
    await discovery.start()
    try:
        good = discovery.snapshot
        prom.set_series("node_load1", errors.PrometheusUnreachable("connection refused"))
        await sleeps.run(2)
        assert discovery.snapshot is good  # one failing query abandons the whole relist
        assert discovery.ready
        stats = discovery.stats
        assert (stats.failures_total, stats.consecutive_failures) == (2, 2)
        assert "connection refused" in (stats.last_error or "")
        assert sleeps.delays == [60, 1.0]  # after a failure: retry soon, not a whole interval
        prom.set_series("node_load1", [])
        await sleeps.run(1)
        assert sleeps.delays[-1] == 2.0
        assert discovery.stats.consecutive_failures == 0
        assert "nodes/node_load1" in metrics_of(discovery)  # missing from one relist: kept
        await sleeps.run(1)
        assert "nodes/node_load1" not in metrics_of(discovery)  # and from a second: dropped
        assert discovery.stats.as_metrics()["failures_total"] == 2.0
    finally:
        await discovery.stop()


async def test_prometheus_down_at_start_then_back(
    prom: FakePrometheus, compiled: CompiledConfig, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    sleeps = Sleeps(clock)
    ok = prom.series_by_matcher[POD_QUERY]
    prom.set_series(POD_QUERY, errors.PrometheusUnreachable("connection refused"))
    discovery = Discovery(prom, compiled, interval=600, clock=clock, sleep=sleeps)
    await discovery.start()  # does not raise
    try:
        assert not discovery.ready and metrics_of(discovery) == set()
        assert "no registry yet" in caplog.text
        await sleeps.run(5)
        assert sleeps.delays == [1.0, 2.0, 4.0, 8.0, 16.0]  # backoff, capped by the interval
        assert not discovery.ready
        prom.series_by_matcher[POD_QUERY] = ok
        await sleeps.run(1)
        assert discovery.ready and "pods/memory_bytes" in metrics_of(discovery)
        await sleeps.run(1)
        assert sleeps.delays[-1] == 600
    finally:
        await discovery.stop()


async def test_a_failed_series_query_is_logged_in_prometheus_adapters_words(
    prom: FakePrometheus, compiled: CompiledConfig, caplog: pytest.LogCaptureFixture
) -> None:
    prom.set_series(POD_QUERY, errors.PrometheusUnreachable("connection refused"))
    discovery = Discovery(prom, compiled, interval=600, clock=Clock(), sleep=Sleeps(Clock()))
    assert not await discovery.relist()
    assert caplog.messages[-1] == (
        f"unable to update list of all metrics: unable to fetch metrics for query {go_quote(POD_QUERY)}: "
        "connection refused (series discovery failed 1 in a row, no registry yet)")
    assert discovery.stats.last_error == "connection refused"


async def test_empty_answers_are_relisted_soon(
    prom: FakePrometheus, compiled: CompiledConfig
) -> None:
    # A Prometheus restarted with empty storage answers successfully, with nothing.
    clock = Clock()
    sleeps = Sleeps(clock)
    full = dict(prom.series_by_matcher)
    prom.series_by_matcher.clear()
    discovery = Discovery(prom, compiled, interval=600, clock=clock, sleep=sleeps)
    await discovery.start()
    try:
        assert discovery.ready and metrics_of(discovery) == set()
        await sleeps.run(2)
        assert sleeps.delays == [1.0, 2.0]  # not 10 minutes without metrics
        assert discovery.stats.consecutive_empty == 3
        prom.series_by_matcher.update(full)  # first scrapes landed
        await sleeps.run(2)
        assert sleeps.delays == [1.0, 2.0, 4.0, 600]
        assert "pods/memory_bytes" in metrics_of(discovery)
    finally:
        await discovery.stop()


class Hanging:
    """A PrometheusAPI whose series call never answers."""

    async def query(self, promql: str, *, time: float | None = None) -> list:  # type: ignore[type-arg]
        return []

    async def series(self, matchers: list[str], *, start: float, end: float) -> list:  # type: ignore[type-arg]
        await asyncio.Event().wait()
        return []

    async def series_foreach(self, matchers: list[str], *, start: float, end: float,
                             sink: SeriesSink) -> int:
        await asyncio.Event().wait()
        return 0


async def test_hung_prometheus_times_the_relist_out(compiled: CompiledConfig) -> None:
    hanging: PrometheusAPI = Hanging()  # type: ignore[assignment]
    discovery = Discovery(hanging, compiled, interval=60, relist_timeout=0.05)
    assert await discovery.relist() is False
    assert "0.05s" in (discovery.stats.last_error or "")
    assert not discovery.ready


def test_fake_satisfies_the_port() -> None:
    assert isinstance(FakePrometheus(), PrometheusAPI)
