"""The reconciler asks the forecast port for predictive PromAutoscalers and hands the answer to `decide`."""

from __future__ import annotations

from typing import Any

from controller.algorithm.spec import MetricForecast
from controller.history.source import FakeForecasts, NoHistory
from controller.reconcile import Reconciler
from tests.unit.controller.world import KEY, World, pas_json


def _world(forecasts: Any, mode: str = "Active") -> World:
    w = World(obj_json=pas_json(extra={"prediction": {"mode": mode}}))
    w.reconciler = Reconciler(scale=w.scale, pods=w.pods, metrics=w.metrics, status=w.status, events=w.events,
                              config=w.config, is_leader=lambda: w.leader, wall_clock=lambda: w.now,
                              forecasts=forecasts)
    w.observe(3000)
    return w


async def test_a_forecast_reaches_the_decision_and_forget_drops_it() -> None:
    forecast = MetricForecast(value=9000, why="seasonal: the daily peak", trusted=True, skill=0.4)
    fake = FakeForecasts({KEY: (forecast,)})
    w = _world(fake)
    outcome = await w.sync()
    assert fake.asked == [(KEY, w.now)]
    assert outcome.report is not None and outcome.report.decision.prediction is not None
    (metric,) = outcome.report.decision.prediction.metrics
    assert (metric.forecast, metric.why) == (9000, "seasonal: the daily peak")
    assert w.reconciler is not None
    w.reconciler.forget(KEY)
    assert fake.forgotten == [KEY]


async def test_mode_off_is_never_asked() -> None:
    fake = FakeForecasts()
    w = _world(fake, mode="Off")
    await w.sync()
    assert fake.asked == []


async def test_without_prometheus_url_the_decision_says_why() -> None:
    outcome = await _world(NoHistory()).sync()
    assert outcome.report is not None and outcome.report.decision.prediction is not None
    (metric,) = outcome.report.decision.prediction.metrics
    assert (metric.forecast, metric.why) == (None, "no --prometheus-url: the controller cannot read history")
