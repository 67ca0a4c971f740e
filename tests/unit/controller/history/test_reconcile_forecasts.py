"""The reconciler asks the forecast port for predictive PromAutoscalers and hands the answer to `decide`."""

from __future__ import annotations

from typing import Any

import numpy as np

from controller.algorithm.spec import MetricForecast, PredictionMode, PredictionSpec
from controller.forecast import History, predict_metric
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


async def test_too_little_history_gives_a_reactive_decision_and_a_condition_saying_why() -> None:
    day = np.full(1440, 90_000.0)  # one day at 60 s of a level that would ask for 9 replicas (target 10)
    history = History(start=1_800_000_000.0 - 86_400 + 60, step=60.0, values=day)
    forecast, _ = predict_metric(history, None, now=1_800_000_000.0,
                                 spec=PredictionSpec(mode=PredictionMode.ACTIVE, horizon_seconds=300))
    assert forecast.value is None and forecast.history_seconds == 86_400, forecast
    w = _world(FakeForecasts({KEY: (forecast,)}))
    w.observe(60_000)  # 60 now: reacting asks for 6 of the 3 running
    outcome = await w.sync()
    assert w.replicas() == 6  # the reactive decision, not the 9 the day's level would give
    assert outcome.report is not None and outcome.report.decision.prediction is not None
    assert outcome.report.decision.prediction.replicas is None
    assert w.condition("PredictionActive") == (False, "InsufficientHistory")
    status = w.obj_json["status"]
    [condition] = [c for c in status["conditions"] if c["type"] == "PredictionActive"]
    assert "too little history yet to forecast" in condition["message"], condition
    assert "scaling is reactive" in condition["message"], condition
    prediction = status["prediction"]
    assert (prediction["reason"], prediction["reactiveReplicas"]) == ("InsufficientHistory", 6), prediction
    [metric] = prediction["metrics"]
    assert metric["historySeconds"] == 86_400 and "forecast" not in metric, metric
    assert metric["message"].startswith("too little history: 24.0 h of samples"), metric
