"""`/metrics` shows each predicting autoscaler's forecast, the replicas it asks for, its skill and
whether the accuracy guard fell back; nothing for objects that do not predict, and an object's
series go when it stops predicting, is deleted or this replica stops leading."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from controller.algorithm import ControllerConfig, SyncInput, decide
from controller.algorithm.pods import ContainerInfo, PodInfo, PodMetric
from controller.algorithm.spec import MetricForecast, PodSamples, ScaleTarget
from controller.kube.objects import autoscaler_from_object
from controller.kube.ports import ObjectKey
from controller.report import Result, SyncOutcome, SyncReport
from controller.telemetry import ControllerTelemetry

T0 = 1_795_608_000.0
KEY = ObjectKey(kind="PromAutoscaler", namespace="shop", name="web")
RPS = {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}
OBJ = {"kind": "PromAutoscaler", "metadata": {"name": "web", "namespace": "shop", "uid": "u", "generation": 1}}


def outcome(mode: str | None, forecast: MetricForecast | None) -> SyncOutcome:
    spec = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 10,
            "metrics": [RPS], **({"prediction": {"mode": mode}} if mode else {})}
    a = autoscaler_from_object({**OBJ, "spec": spec})
    pods = tuple(PodInfo(name=f"p{i}", start_time=T0 - 3600, ready_transition=T0 - 3600,
                         containers=(ContainerInfo(name="app", requests={"cpu": 1000}),)) for i in range(4))
    samples = PodSamples(values={f"p{i}": PodMetric(value=10_000, timestamp=T0, window=60) for i in range(4)})
    d = decide(SyncInput(spec=a.spec, scale=ScaleTarget(spec_replicas=4, status_replicas=4), now=T0, pods=pods,
                         observations=(samples,), forecasts=(forecast,) if forecast else ()), ControllerConfig())
    report = SyncReport(autoscaler=a, decision=d, extra_conditions=(), limiting_reason="", now=T0)
    return SyncOutcome(key=KEY, result=Result.UNCHANGED, report=report)


def series(telemetry: ControllerTelemetry) -> dict[tuple[str, str], float]:
    out = {}
    for family in text_string_to_metric_families(telemetry.exposition().decode()):
        if family.name.startswith("prom_autoscaler_controller_prediction_"):
            for s in family.samples:
                short = family.name.removeprefix("prom_autoscaler_controller_prediction_")
                out[(short, s.labels.get("metric_name", ""))] = s.value
                assert (s.labels["kind"], s.labels["namespace"], s.labels["name"]) == ("PromAutoscaler", "shop", "web")
    return out


def test_forecast_replicas_skill_and_fallback_per_object() -> None:
    t = ControllerTelemetry()
    t.observe_sync(outcome("Active", MetricForecast(value=60_000, skill=0.42, history_seconds=86_400 * 14)), 0.01)
    assert series(t) == {("forecast", "rps"): 60.0, ("metric_replicas", "rps"): 6.0, ("skill", "rps"): 0.42,
                         ("replicas", ""): 6.0, ("fallback", ""): 0.0}
    t.observe_sync(outcome("Active", MetricForecast(value=60_000, trusted=False, skill=-0.3)), 0.01)
    assert series(t) == {("forecast", "rps"): 60.0, ("metric_replicas", "rps"): 6.0, ("skill", "rps"): -0.3,
                         ("fallback", ""): 1.0}  # no trusted forecast: no predicted count
    t.observe_sync(outcome("ForecastOnly", MetricForecast(value=None, why="too little history")), 0.01)
    assert series(t) == {("fallback", ""): 0.0}


def test_no_series_without_prediction_and_none_left_after_it_is_turned_off_or_deleted() -> None:
    t = ControllerTelemetry()
    t.observe_sync(outcome(None, None), 0.01)
    t.observe_sync(outcome("Off", MetricForecast(value=60_000)), 0.01)
    assert series(t) == {}
    t.observe_sync(outcome("Active", MetricForecast(value=60_000)), 0.01)
    assert series(t)
    t.observe_sync(outcome("Off", MetricForecast(value=60_000)), 0.01)
    assert series(t) == {}
    t.observe_sync(outcome("Active", MetricForecast(value=60_000)), 0.01)
    t.forget_object(KEY)
    assert series(t) == {}
    t.observe_sync(outcome("Active", MetricForecast(value=60_000)), 0.01)
    t.set_leader(False)
    assert series(t) == {}
