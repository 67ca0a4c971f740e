"""Issue 24: `ForecastOnly` writes nothing to `/scale`; the same forecast in `Active` does."""

from __future__ import annotations

from typing import Any

from controller.algorithm.spec import MetricForecast
from controller.history.source import FakeForecasts
from controller.reconcile import Reconciler
from tests.unit.controller.world import KEY, NAME, NS, World, pas_json

# queue target 10 per pod; 3 running. Now 30 (reacting holds at 3); the trusted forecast 90 asks for 9.
FORECAST = MetricForecast(value=90_000, why="seasonal: the morning ramp", trusted=True, skill=0.5)


async def _sync(mode: str) -> tuple[World, FakeForecasts]:
    fake = FakeForecasts({KEY: (FORECAST,)})
    w = World(obj_json=pas_json(extra={"prediction": {"mode": mode}}))
    w.reconciler = Reconciler(scale=w.scale, pods=w.pods, metrics=w.metrics, status=w.status, events=w.events,
                              config=w.config, is_leader=lambda: w.leader, wall_clock=lambda: w.now,
                              forecasts=fake)
    w.observe(30_000)
    await w.sync()
    return w, fake


async def test_forecast_only_reports_the_predicted_replicas_and_writes_nothing_to_scale() -> None:
    w, fake = await _sync("ForecastOnly")
    assert fake.asked == [(KEY, w.now)]
    assert w.scale.updates == [] and w.replicas() == 3
    prediction: dict[str, Any] = w.obj_json["status"]["prediction"]
    assert (prediction["mode"], prediction["replicas"], prediction["reactiveReplicas"], prediction["used"]) == (
        "ForecastOnly", 9, 3, False), prediction
    [metric] = prediction["metrics"]
    assert (metric["forecast"], metric["replicas"], metric["trusted"]) == ("90", 9, True), metric
    assert w.obj_json["status"]["desiredReplicas"] == 3


async def test_the_same_forecast_in_active_mode_raises_the_count() -> None:
    w, _ = await _sync("Active")
    # 9 asked; without spec.behavior the legacy scale-up limit (max of 2 x current, 4) lets 3 -> 6 now
    assert w.scale.updates == [(NS, NAME, 6)] and w.replicas() == 6
    prediction = w.obj_json["status"]["prediction"]
    assert (prediction["replicas"], prediction["reactiveReplicas"], prediction["used"]) == (9, 3, True), prediction
