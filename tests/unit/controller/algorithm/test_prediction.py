"""The prediction step in `decide`: a forecast raises replicas ahead of the load through the HPA's
own arithmetic, only in Active mode, only when trusted and readable; everything after it (the
scale-down window, the rate limits, maxReplicas) applies to the combined recommendation."""

from __future__ import annotations

from dataclasses import replace

import pytest

from controller.algorithm import decide
from controller.algorithm.behavior import Recommendation, ScaleHistory
from controller.algorithm.decision import Stage
from controller.algorithm.spec import (
    AutoscalerSpec, ControllerConfig, ExternalSamples, FetchFailure, MetricForecast, MetricSpec, MetricTarget,
    PredictionMode, PredictionSpec, ScaleTarget, SourceType, SyncInput, TargetType,
)  # fmt: skip

NOW = 1_000_000.0
QUEUE = MetricSpec(type=SourceType.EXTERNAL, name="queue",
                   target=MetricTarget(type=TargetType.AVERAGE_VALUE, average_value=10_000))  # 10 per pod


def _spec(mode: PredictionMode | None, *, max_replicas: int = 60) -> AutoscalerSpec:
    prediction = None if mode is None else PredictionSpec(mode=mode, horizon_seconds=180)
    return AutoscalerSpec(min_replicas=2, max_replicas=max_replicas, metrics=(QUEUE,), prediction=prediction)


def _sync(spec: AutoscalerSpec, *, value: int = 40_000, forecast: MetricForecast | None, replicas: int = 4,
          history: ScaleHistory | None = None) -> SyncInput:
    obs = ExternalSamples(values=(value,)) if value >= 0 else FetchFailure(message="unreachable")
    return SyncInput(spec=spec, scale=ScaleTarget(spec_replicas=replicas, status_replicas=replicas), now=NOW,
                     observations=(obs,), forecasts=(forecast,), history=history)


RISE = MetricForecast(value=120_000, why="ramp", trusted=True, skill=0.5)  # 120 in the queue: 12 pods


def test_active_forecast_scales_ahead_of_the_load() -> None:
    d = decide(_sync(_spec(PredictionMode.ACTIVE), forecast=RISE), ControllerConfig())
    assert d.desired_replicas == 8  # 12 asked; the scale-up limit max(2 x 4, 4 + 4) = 8 still applies
    assert d.rescale_reason == "forecast above target"
    assert d.prediction is not None and d.prediction.used and d.prediction.replicas == 12
    assert [s.stage for s in d.trace.steps][:2] == [Stage.METRICS, Stage.PREDICTION]
    assert "forecast" in d.explain()


def test_max_replicas_caps_the_forecast() -> None:
    d = decide(_sync(_spec(PredictionMode.ACTIVE, max_replicas=6), forecast=RISE), ControllerConfig())
    assert d.desired_replicas == 6


@pytest.mark.parametrize("spec, forecast", [
    pytest.param(_spec(PredictionMode.FORECAST_ONLY), RISE, id="ForecastOnly reports, never acts"),
    pytest.param(_spec(PredictionMode.ACTIVE), replace(RISE, trusted=False), id="untrusted: the guard fell back"),
    pytest.param(_spec(PredictionMode.ACTIVE), MetricForecast(value=None, why="too little history"),
                 id="no forecast"),
    pytest.param(_spec(None), RISE, id="prediction Off"),
])  # fmt: skip
def test_reactive_decides_when_the_forecast_may_not_act(spec: AutoscalerSpec, forecast: MetricForecast) -> None:
    d = decide(_sync(spec, forecast=forecast), ControllerConfig())
    assert d.desired_replicas == 4  # 40 in the queue at 10 per pod: the reactive answer
    assert Stage.PREDICTION not in [s.stage for s in d.trace.steps]
    if spec.prediction is None:
        assert d.prediction is None
    else:
        assert d.prediction is not None and not d.prediction.used


def test_forecast_only_still_says_what_it_would_ask_for() -> None:
    d = decide(_sync(_spec(PredictionMode.FORECAST_ONLY), forecast=RISE), ControllerConfig())
    assert d.prediction is not None and d.prediction.replicas == 12
    assert "ForecastOnly" in d.prediction.why


def test_a_forecast_never_lowers_replicas_and_scale_down_stays_reactive() -> None:
    low = MetricForecast(value=10_000, why="night", trusted=True)
    # reactive asks 2 (20 in the queue); the last 5 minutes recommended 4: the window holds 4
    history = ScaleHistory(recommendations=(Recommendation(replicas=4, timestamp=NOW - 60),))
    d = decide(_sync(_spec(PredictionMode.ACTIVE), value=20_000, forecast=low, history=history),
               ControllerConfig())
    assert d.desired_replicas == 4
    assert d.prediction is not None and not d.prediction.used


def test_no_scaling_on_a_forecast_when_a_metric_could_not_be_read() -> None:
    d = decide(_sync(_spec(PredictionMode.ACTIVE), value=-1, forecast=RISE), ControllerConfig())
    assert d.desired_replicas == 4
    assert d.prediction is not None and not d.prediction.used
    assert "could not be read" in d.prediction.why


@pytest.mark.parametrize("target", [
    pytest.param(MetricTarget(type=TargetType.VALUE, value=10_000), id="Value: ratio x ready pods"),
    pytest.param(MetricTarget(type=TargetType.AVERAGE_VALUE, average_value=10_000), id="AverageValue"),
])
def test_a_forecast_equal_to_the_value_served_asks_for_what_the_reactive_step_asks_for(target: MetricTarget) -> None:
    # 6 replicas, 3 of them not ready: upstream's Value arithmetic multiplies by the ready pods, so
    # a forecast that only repeats today's value must not outbid the reactive count
    from controller.algorithm.pods import PodInfo

    metric = MetricSpec(type=SourceType.EXTERNAL, name="queue", target=target)
    spec = AutoscalerSpec(min_replicas=1, max_replicas=60, metrics=(metric,),
                          prediction=PredictionSpec(mode=PredictionMode.ACTIVE, horizon_seconds=180))
    pods = tuple(PodInfo(name=f"p{i}", ready=i < 3) for i in range(6))
    inp = SyncInput(spec=spec, scale=ScaleTarget(spec_replicas=6, status_replicas=6), now=NOW, pods=pods,
                    observations=(ExternalSamples(values=(45_000,)),),
                    forecasts=(MetricForecast(value=45_000, why="flat", trusted=True),))
    d = decide(inp, ControllerConfig())
    assert d.prediction is not None and d.prediction.replicas == d.prediction.reactive
    assert not d.prediction.used
