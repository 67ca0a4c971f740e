"""The live history store against a real Prometheus holding a known, backfilled history.

Three days of a daily cycle at 60 s for two pods of Deployment `web` (and a pod of its sibling
`web-worker`, which is not web's): the first read covers the lookback and sums web's pods; a
sync every 15 s for ten minutes makes at most one range query per minute; an unreachable
Prometheus (a real refused connection) keeps the last good history, says why, is not retried
within the minute, and the history catches up once Prometheus answers again; the forecast source
turns the history into forecasts; an object with two metrics makes one range query per refresh
(counted by Prometheus itself), each metric's history its own.
"""

from __future__ import annotations

import math
import socket
import urllib.request
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import pytest

from adapter.config import parse_config
from adapter.rules import compile_config
from controller.history.fold import Grid
from controller.history.live import HistoryStore, LiveForecasts
from controller.history.prometheus import Job, PrometheusHistory, chunks
from controller.kube.objects import API_VERSION, KIND, Autoscaler, autoscaler_from_object
from hack.stack.backfill import BackfilledPrometheus, openmetrics
from hack.stack.controller_stack import parse_metrics

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z
DAY = 86_400
STEP = 60
DAYS = 3
NOW = T0 + DAYS * DAY  # the last backfilled tick is NOW - STEP; the reads end at "now" on the grid
RULES = compile_config(parse_config("""
rules:
- seriesQuery: '{__name__=~"^lv_.*",namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
""", source="rules.yaml"))
PODS = ("web-7d9f8c6b5-a1b2c", "web-7d9f8c6b5-z9y8x")


def _per_pod(t: float) -> float:
    return round(10 + 5 * math.sin(2 * math.pi * (t - T0) / DAY), 3)


def _history() -> str:
    ticks = range(T0, NOW + 20 * 60, STEP)  # 20 minutes past NOW: what the incremental reads find
    series = [("lv_requests", {"namespace": "live", "pod": pod}, [(t, _per_pod(t)) for t in ticks]) for pod in PODS]
    series.append(("lv_requests", {"namespace": "live", "pod": "web-worker-5c4d-q1w2e"}, [(t, 1000.0) for t in ticks]))
    series += [("lv_inflight", {"namespace": "live", "pod": pod}, [(t, 3.0) for t in ticks]) for pod in PODS]
    return openmetrics(series)


@pytest.fixture(scope="module")
def prometheus() -> Iterator[BackfilledPrometheus]:
    with BackfilledPrometheus(_history()) as server:
        yield server


@dataclass(slots=True, kw_only=True)
class _Counting:
    """A real reader, switchable to a second real one (a refused connection), counting range queries."""

    up: PrometheusHistory
    down: PrometheusHistory
    outage: bool = False
    range_queries: list[tuple[float, float]] = field(default_factory=list)

    @property
    def _reader(self) -> PrometheusHistory:
        return self.down if self.outage else self.up

    async def series_shapes(self, queries: Sequence[str], start: float, end: float
                            ) -> dict[str, tuple[tuple[str, frozenset[str]], ...]]:
        return await self._reader.series_shapes(queries, start, end)

    async def fetch(self, jobs: Sequence[Job], grid: Grid, *, chunk_points: int = 5_000,
                    combine: bool = False) -> None:
        self.range_queries += [c for _job in jobs[:1] if combine for c in chunks(grid, chunk_points)]
        self.range_queries += [c for _job in jobs if not combine for c in chunks(grid, chunk_points)]
        await self._reader.fetch(jobs, grid, chunk_points=chunk_points, combine=combine)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
async def reader(prometheus: BackfilledPrometheus) -> AsyncIterator[_Counting]:
    async with PrometheusHistory(prometheus.url, timeout=10) as up, \
            PrometheusHistory(f"http://127.0.0.1:{_closed_port()}", timeout=2) as down:
        yield _Counting(up=up, down=down)


def _obj(lookback: int = 2 * DAY, metrics: Sequence[str] = ("lv_requests",)) -> Autoscaler:
    return autoscaler_from_object({
        "apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": "web", "namespace": "live", "uid": "u1"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 10,
                 "metrics": [{"type": "Pods", "pods": {"metric": {"name": name},
                                                       "target": {"type": "AverageValue", "averageValue": "10"}}}
                             for name in metrics],
                 "prediction": {"mode": "ForecastOnly", "lookbackSeconds": lookback}}})


def _expected(start: float, count: int) -> np.ndarray:
    return np.array([1000 * len(PODS) * _per_pod(start + i * STEP) for i in range(count)], dtype=np.float32)


async def test_first_read_then_at_most_one_range_query_per_minute(reader: _Counting) -> None:
    store = HistoryStore(reader, RULES, rules_path="rules.yaml")
    view = await store.read(_obj(), NOW)
    (h,) = view.histories
    assert view.error is None and h is not None
    assert (h.count, h.end, h.values.dtype.name) == (2 * DAY // STEP, NOW, "float32")
    # web's two pods, not web-worker's; kept as float16 (window.Packed): within 2**-11 of Prometheus' answer
    np.testing.assert_allclose(h.values, _expected(h.start, h.count), rtol=2**-11, atol=len(PODS))
    assert len(reader.range_queries) == 2  # a day per range query
    reader.range_queries.clear()
    for t in range(15, 600 + 1, 15):  # ten minutes of 15 s syncs
        view = await store.read(_obj(), NOW + t)
    assert len(reader.range_queries) == 10  # one per minute
    (h,) = view.histories
    assert h is not None and (h.count, h.end) == (2 * DAY // STEP, NOW + 600)
    np.testing.assert_allclose(h.values, _expected(h.start, h.count), rtol=2**-11, atol=len(PODS))


def _range_queries_served(prometheus: BackfilledPrometheus) -> float:
    with urllib.request.urlopen(f"{prometheus.url}/metrics", timeout=10) as resp:
        samples = parse_metrics(resp.read().decode())
    return sum(v for (name, labels), v in samples.items()
               if name == "prometheus_http_requests_total" and ("handler", "/api/v1/query_range") in labels)


async def test_an_objects_metrics_share_one_range_query_per_refresh(reader: _Counting,
                                                                     prometheus: BackfilledPrometheus) -> None:
    store = HistoryStore(reader, RULES, rules_path="rules.yaml")
    obj = _obj(metrics=("lv_requests", "lv_inflight"))
    before = _range_queries_served(prometheus)
    view = await store.read(obj, NOW)
    assert _range_queries_served(prometheus) - before == 2  # a day per range query, both metrics in each
    for t in range(15, 600 + 1, 15):  # ten minutes of 15 s syncs
        view = await store.read(obj, NOW + t)
    assert _range_queries_served(prometheus) - before == 2 + 10  # one per minute for the two metrics
    requests, inflight = view.histories
    assert view.error is None and requests is not None and inflight is not None
    assert (requests.count, requests.end) == (inflight.count, inflight.end) == (2 * DAY // STEP, NOW + 600)
    np.testing.assert_allclose(requests.values, _expected(requests.start, requests.count), rtol=2**-11, atol=len(PODS))
    np.testing.assert_allclose(inflight.values, np.full(inflight.count, 3000.0 * len(PODS)))  # web's pods only


async def test_an_outage_keeps_the_last_good_history_and_it_catches_up(reader: _Counting) -> None:
    store = HistoryStore(reader, RULES, rules_path="rules.yaml")
    (good,) = (await store.read(_obj(), NOW)).histories
    reader.outage = True
    during = await store.read(_obj(), NOW + 60)
    (held,) = during.histories
    assert held is not None and good is not None and "did not answer" in (during.error or "")
    assert (held.start, held.count) == (good.start, good.count)  # the last good history, unchanged
    assert np.array_equal(held.values, good.values, equal_nan=True)
    tries = len(reader.range_queries)
    await store.read(_obj(), NOW + 90)
    assert len(reader.range_queries) == tries  # not retried within the minute
    reader.outage = False
    after = await store.read(_obj(), NOW + 300)
    (h,) = after.histories
    assert after.error is None and h is not None and h.end == NOW + 300
    np.testing.assert_allclose(h.values[-6:], _expected(NOW, 6), rtol=2**-11, atol=len(PODS))  # the ticks missed, read back


async def test_the_forecast_source_reads_history_and_says_why_when_it_cannot(reader: _Counting) -> None:
    source = LiveForecasts(HistoryStore(reader, RULES, rules_path="rules.yaml"), wait=30)
    (f,) = await source.forecasts(_obj(), NOW)
    assert f is not None and f.history_seconds > DAY and f.value is not None, f
    reader.outage = True
    (f,) = await source.forecasts(_obj(), NOW + 120)
    assert f is not None and f.value is None and not f.trusted and f.why.startswith("history unavailable: ")
