"""The live history store and forecast source, against the map-backed Prometheus reader."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import numpy as np
import pytest

from adapter.config import parse_config
from adapter.rules import compile_config
from controller.algorithm.spec import MetricForecast
from controller.history.fake import FakeHistoryReader, FakeSeries
from controller.history.live import IDLE_SECONDS, REFRESH_SECONDS, HistoryStore, LiveForecasts
from controller.history.source import FakeForecasts, NoHistory, forecasts_for
from controller.kube.objects import API_VERSION, HPA_KIND, KIND, Autoscaler, autoscaler_from_object

RULES = compile_config(parse_config("""
rules:
- seriesQuery: 'http_requests_total{namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  name: {matches: '^(.*)_total$', as: '${1}_per_second'}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
""", source="rules.yaml"))
SERIES_QUERY = 'http_requests_total{namespace!="",pod!=""}'
PROMQL = 'sum(rate(http_requests_total{namespace="shop"}[2m])) by (pod)'
DAY = 86_400.0
NOW = 1_800_000_000.0  # a multiple of 60


def _obj(mode: str = "ForecastOnly", *, kind: str = KIND, lookback: int = 3 * 86_400, name: str = "web") -> Autoscaler:
    doc: dict[str, Any] = {
        "apiVersion": API_VERSION if kind == KIND else "autoscaling/v2", "kind": kind,
        "metadata": {"name": name, "namespace": "shop", "uid": "u1"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 10,
                 "metrics": [{"type": "Pods", "pods": {"metric": {"name": "http_requests_per_second"},
                                                       "target": {"type": "AverageValue", "averageValue": "10"}}}]}}
    if kind == KIND:
        doc["spec"]["prediction"] = {"mode": mode, "lookbackSeconds": lookback}
    return autoscaler_from_object(doc)


def _reader() -> FakeHistoryReader:
    def load(t: float) -> float:
        return 10 + 5 * math.sin(2 * math.pi * t / DAY)

    return FakeHistoryReader(
        shapes={SERIES_QUERY: (("http_requests_total", frozenset({"namespace", "pod"})),)},
        series={PROMQL: [FakeSeries(labels={"pod": "web-7d9f8-a1b2c"}, value=load),
                         FakeSeries(labels={"pod": "web-7d9f8-z9y8x"}, value=load),
                         FakeSeries(labels={"pod": "web-worker-5c4-q1w2e"}, value=lambda t: 1000.0)]})


def _store(reader: FakeHistoryReader, **kw: Any) -> HistoryStore:
    return HistoryStore(reader, RULES, rules_path="rules.yaml", **kw)


async def test_the_first_read_covers_the_lookback_summed_over_the_targets_pods() -> None:
    reader = _reader()
    view = await _store(reader).read(_obj(), NOW)
    (h,) = view.histories
    assert h is not None and view.error is None
    assert (h.count, h.end, h.values.dtype.name) == (3 * 1440, NOW, "float32")
    # kept as float16 (11 significant bits, window.Packed): within 2**-11 of what Prometheus answered
    assert h.values[-1] == pytest.approx(2 * 1000 * (10 + 5 * math.sin(2 * math.pi * NOW / DAY)), rel=2**-11)
    assert reader.series_queries == [SERIES_QUERY]  # the sibling Deployment's pod (web-worker-...) is not summed
    assert len(reader.range_queries) == 3  # chunks of one day at 60 s


async def test_at_most_one_incremental_read_per_object_per_minute() -> None:
    reader, obj = _reader(), _obj()
    store = _store(reader)
    await store.read(obj, NOW)
    first = len(reader.range_queries)
    for t in range(15, 3600 + 1, 15):  # an hour of 15 s syncs
        view = await store.read(obj, NOW + t)
    assert len(reader.range_queries) - first == 60
    (h,) = view.histories
    assert h is not None and (h.count, h.end) == (3 * 1440, NOW + 3600)
    _promql, start, end = reader.range_queries[-1]
    assert end - start == 3 * 60  # from the last ticks (re-read) to now, not the lookback


async def test_an_outage_keeps_the_last_good_history_and_recovers() -> None:
    reader, obj = _reader(), _obj()
    store = _store(reader)
    good = (await store.read(obj, NOW)).histories[0]
    reader.down = True
    during = await store.read(obj, NOW + 60)
    held = during.histories[0]
    assert held is not None and good is not None and "connection refused" in (during.error or "")
    assert (held.start, held.count) == (good.start, good.count)
    assert np.array_equal(held.values, good.values, equal_nan=True)
    tries = len(reader.range_queries)
    await store.read(obj, NOW + 75)  # not retried before a minute
    assert len(reader.range_queries) == tries
    reader.down = False
    after = await store.read(obj, NOW + 600)
    h = after.histories[0]
    assert after.error is None and h is not None and h.end == NOW + 600 and not math.isnan(float(h.values[-5]))


async def test_history_refresh_sets_how_often_a_history_is_read_and_a_failed_read_retried() -> None:
    reader, obj = _reader(), _obj(lookback=2 * 86_400)
    store = _store(reader, refresh=120.0)
    await store.read(obj, NOW)
    first = len(reader.range_queries)
    for t in range(15, 600 + 1, 15):  # ten minutes of 15 s syncs
        await store.read(obj, NOW + t)
    assert len(reader.range_queries) - first == 5  # every 2 minutes, not every minute
    reader.down = True
    assert "connection refused" in ((await store.read(obj, NOW + 720)).error or "")
    reader.down = False
    assert (await store.read(obj, NOW + 780)).error is not None  # not retried before 2 minutes
    assert (await store.read(obj, NOW + 840)).error is None


async def test_identical_reads_in_flight_are_shared() -> None:
    reader, obj = _reader(), _obj()
    store = _store(reader)
    await asyncio.gather(*(store.read(obj, NOW) for _ in range(5)))
    assert len(reader.range_queries) == 3


async def test_a_changed_spec_starts_afresh_and_a_forgotten_object_is_dropped() -> None:
    reader = _reader()
    store = _store(reader)
    await store.read(_obj(lookback=3 * 86_400), NOW)
    await store.read(_obj(lookback=2 * 86_400), NOW + 1)
    assert len(reader.range_queries) == 3 + 2
    store.forget(_obj().key)
    assert store.cached(_obj().key) is None and len(store) == 0


async def test_an_idle_object_is_dropped_with_its_forecaster_state() -> None:
    store = _store(_reader())
    source = LiveForecasts(store)
    idle, busy = _obj(name="idle"), _obj(name="busy")
    await source.forecasts(idle, NOW)
    await source.forecasts(busy, NOW)
    assert idle.key in store and busy.key in store
    await source.forecasts(busy, NOW + IDLE_SECONDS + REFRESH_SECONDS)
    assert idle.key not in store and busy.key in store
    assert set(source._states) == {busy.key}  # the forecaster holds no state for what the store dropped


async def test_an_unresolvable_metric_says_why() -> None:
    reader = _reader()
    reader.shapes = {}
    view = await _store(reader).read(_obj(), NOW)
    assert view.histories == (None,) and "no rule exposes it for pods" in view.problems[0]
    assert reader.range_queries == []


async def test_live_forecasts_say_why_without_a_forecast_and_keep_state_per_metric() -> None:
    reader = _reader()
    source = LiveForecasts(_store(reader))
    (f,) = await source.forecasts(_obj(), NOW)
    assert f is not None and f.value is not None and f.history_seconds > 0
    reader.down = True
    (f,) = await source.forecasts(_obj(), NOW + 120)
    assert f is not None and f == MetricForecast(value=None, why=f.why, trusted=False) and f.why.startswith("history unavailable: ")


@pytest.mark.parametrize(("obj", "asked"), [
    pytest.param(_obj("Active"), True, id="Active: asked"),
    pytest.param(_obj("ForecastOnly"), True, id="ForecastOnly: asked"),
    pytest.param(_obj("Off"), False, id="Off: never asked"),
    pytest.param(_obj(kind=HPA_KIND), False, id="a native HPA: never asked"),
])
async def test_the_reconciler_asks_only_predictive_promautoscalers(obj: Autoscaler, asked: bool) -> None:
    fake = FakeForecasts()
    got = await forecasts_for(fake, obj, NOW)
    assert (bool(fake.asked), got) == (asked, (None,) if asked else ())


async def test_without_prometheus_url_each_metric_says_so() -> None:
    (f,) = await forecasts_for(NoHistory(), _obj(), NOW)
    assert f == MetricForecast(value=None, why="no --prometheus-url: the controller cannot read history", trusted=False)


class _Slow(FakeForecasts):
    async def forecasts(self, obj: Autoscaler, now: float) -> tuple[MetricForecast | None, ...]:
        await asyncio.sleep(10)
        return ()


class _Broken(FakeForecasts):
    async def forecasts(self, obj: Autoscaler, now: float) -> tuple[MetricForecast | None, ...]:
        raise RuntimeError("boom")


@pytest.mark.parametrize(("source", "why"), [
    pytest.param(_Slow(), "history unavailable: not read within 0.01 s (still reading)", id="slow: bounded"),
    pytest.param(_Broken(), "history unavailable: boom", id="failing: said, not raised"),
])
async def test_a_slow_or_failing_source_never_holds_up_the_sync(source: FakeForecasts, why: str) -> None:
    (f,) = await forecasts_for(source, _obj(), NOW, timeout=0.01)
    assert f == MetricForecast(value=None, why=why, trusted=False)
