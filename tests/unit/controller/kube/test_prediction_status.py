"""`status.prediction` and the `PredictionActive` condition from real decisions: absent while
Off (status exactly as before), what each mode shows, the reason derived from the trace, the
write rule (a forecast that moves is written like a metric value, a reason change at once) and
the accuracy guard's transition events."""

import pytest
import yaml

from controller.algorithm import ControllerConfig, SyncInput, decide, failed_get_scale
from controller.algorithm.conditions import EventReason, EventType
from controller.algorithm.pods import ContainerInfo, PodInfo, PodMetric
from controller.algorithm.spec import MetricForecast, PodSamples, ScaleTarget
from controller.kube.objects import autoscaler_from_object
from controller.kube.prediction_status import fallback_transition
from controller.kube.status import METRICS_INTERVAL_SECONDS, WriteReason, build_status, plan_status_write
from controller.kube.times import parse_time
from hack.kube_standin import structural
from tests.paths import REPO

T0 = parse_time("2026-11-25T12:00:00Z")
RPS = {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}
DAY = 86_400.0


def autoscaler(prediction=None, status=None):
    spec = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minReplicas": 1,
            "maxReplicas": 10, "metrics": [RPS]}
    if prediction is not None:
        spec["prediction"] = prediction
    return autoscaler_from_object({"kind": "PromAutoscaler", "metadata": {"name": "web", "namespace": "shop",
                                                                          "uid": "u", "generation": 1},
                                   "spec": spec, **({"status": status} if status is not None else {})})


def sync(a, forecast=None, *, now=T0, current=4, per_pod=10_000):
    pods = tuple(PodInfo(name=f"p{i}", start_time=T0 - 3600, ready_transition=T0 - 3600,
                         containers=(ContainerInfo(name="app", requests={"cpu": 1000}),)) for i in range(current))
    samples = PodSamples(values={f"p{i}": PodMetric(value=per_pod, timestamp=now, window=60) for i in range(current)})
    return decide(SyncInput(spec=a.spec, scale=ScaleTarget(spec_replicas=current, status_replicas=current), now=now,
                            status=a.status, pods=pods, observations=(samples,), history=a.history,
                            forecasts=(forecast,) if forecast is not None else ()), ControllerConfig())


def trusted(total=60_000, skill=0.4237):
    """A forecast of `total` milli-rps over the pods (60 rps: 6 pods at 10 each)."""
    return MetricForecast(value=total, why="daily cycle", skill=skill, history_seconds=14 * DAY)


def condition(status):
    (found,) = [c for c in status["conditions"] if c["type"] == "PredictionActive"]
    return found["status"], found["reason"]


@pytest.mark.parametrize("prediction", [None, {"mode": "Off"}, {"mode": "Off", "horizonSeconds": 600}],
                         ids=["absent", "Off", "Off-with-fields"])
def test_off_leaves_status_exactly_as_before(prediction):
    plain = autoscaler()
    a = autoscaler(prediction)
    d = sync(a, trusted())
    assert d.prediction is None
    assert build_status(a, d, now=T0) == build_status(plain, sync(plain), now=T0)
    assert "prediction" not in build_status(a, d, now=T0)


def test_active_and_trusted_shows_the_forecast_it_scaled_on():
    a = autoscaler({"mode": "Active"})
    d = sync(a, trusted())
    assert d.desired_replicas == 6
    s = build_status(a, d, now=T0)
    assert s["prediction"] == {
        "mode": "Active", "replicas": 6, "reactiveReplicas": 4, "used": True, "reason": "ForecastTrusted",
        "message": "the forecast asks for 6 replicas, above the reactive 4: scaling ahead of the load",
        "metrics": [{"name": "Pods rps", "forecast": "60", "replicas": 6, "trusted": True, "skill": "0.42",
                     "historySeconds": 1_209_600, "message": "daily cycle"}]}
    assert condition(s) == ("True", "ForecastTrusted")
    assert [c["type"] for c in s["conditions"]][-2:] == ["Paused", "PredictionActive"]


def test_forecast_only_reports_the_predicted_replicas_and_scales_nothing():
    a = autoscaler({"mode": "ForecastOnly"})
    d = sync(a, trusted())
    assert (d.write, d.desired_replicas) == (False, 4)  # the reactive count: at target
    s = build_status(a, d, now=T0)
    assert (s["prediction"]["replicas"], s["prediction"]["used"], s["desiredReplicas"]) == (6, False, 4)
    assert condition(s) == ("False", "ForecastOnly")


@pytest.mark.parametrize(("forecast", "reason", "words"), [
    pytest.param(MetricForecast(value=None, why="too little history: 36.0 h of samples", trusted=False,
                                history_seconds=1.5 * DAY),
                 "InsufficientHistory", "too little history yet to forecast Pods rps", id="insufficient-history"),
    pytest.param(MetricForecast(value=None, why="range query failed: 503"), "HistoryUnavailable",
                 "no history of Pods rps could be read", id="history-unavailable"),
    pytest.param(MetricForecast(value=None, why="no daily or weekly cycle in the history", trusted=False,
                                history_seconds=14 * DAY),
                 "NoForecast", "no forecast of Pods rps from its history", id="no-cycle-in-enough-history"),
    pytest.param(MetricForecast(value=60_000, why="skill -0.20 over 40 scored forecasts", trusted=False, skill=-0.2,
                                history_seconds=14 * DAY),
                 "ForecastFallback", "the accuracy guard fell back to reactive scaling", id="guard-fell-back"),
])
def test_the_condition_says_why_prediction_is_not_active(forecast, reason, words):
    a = autoscaler({"mode": "Active"})
    d = sync(a, forecast)
    assert d.desired_replicas == 4  # reactive only
    s = build_status(a, d, now=T0)
    assert condition(s) == ("False", reason)
    assert s["prediction"]["reason"] == reason
    (entry,) = [c for c in s["conditions"] if c["type"] == "PredictionActive"]
    assert words in entry["message"]
    assert forecast.why in s["prediction"]["metrics"][0]["message"]


def test_a_sync_that_read_nothing_says_not_evaluated():
    a = autoscaler({"mode": "Active"})
    s = build_status(a, failed_get_scale(a.status, "boom", now=T0, history=None), now=T0)
    assert s["prediction"]["reason"] == "NotEvaluated" and condition(s) == ("False", "NotEvaluated")


def test_a_forecast_that_moves_is_written_like_a_metric_value():
    a = autoscaler({"mode": "Active"})
    first = build_status(a, sync(a, trusted()), now=T0)
    later = autoscaler({"mode": "Active"}, status=first)
    moved = build_status(later, sync(later, trusted(total=60_500, skill=0.4), now=T0 + 15), now=T0 + 15)
    assert moved["prediction"] != first["prediction"]
    assert plan_status_write(first, moved, now=T0 + 15) is None
    assert plan_status_write(first, moved, now=T0 + METRICS_INTERVAL_SECONDS) is WriteReason.METRICS
    fell = build_status(later, sync(later, MetricForecast(value=60_000, trusted=False, skill=-0.1), now=T0 + 15),
                        now=T0 + 15)
    assert plan_status_write(first, fell, now=T0 + 15) is WriteReason.CHANGED  # the condition's reason changed


def test_turning_prediction_off_removes_it_from_status_at_once():
    a = autoscaler({"mode": "Active"})
    first = build_status(a, sync(a, trusted()), now=T0)
    off = autoscaler({"mode": "Off"}, status=first)
    s = build_status(off, sync(off), now=T0 + 15)
    assert "prediction" not in s and "PredictionActive" not in [c["type"] for c in s["conditions"]]
    assert plan_status_write(first, s, now=T0 + 15) is WriteReason.CHANGED


def test_every_prediction_field_survives_the_crds_pruning():
    (version,) = yaml.safe_load((REPO / "charts/prom-autoscaler/crds/promautoscalers.yaml").read_text())[
        "spec"]["versions"]
    schema = version["schema"]["openAPIV3Schema"]
    a = autoscaler({"mode": "Active"})
    obj = {"apiVersion": "autoscaling.prom-autoscaler.io/v1alpha1", "kind": "PromAutoscaler",
           "metadata": {"name": "web", "namespace": "shop"}, "spec": dict(a.spec_json)}
    for forecast in (trusted(), MetricForecast(value=None, why="no history")):
        written = {**obj, "status": build_status(a, sync(a, forecast), now=T0)}
        kept = yaml.safe_load(yaml.safe_dump(written))
        assert structural.prune(kept, schema) == [] and kept == written
        assert structural.validate(written, schema) == []


def _trace(forecast):
    return sync(autoscaler({"mode": "Active"}), forecast).prediction


def test_the_guard_announces_a_fallback_and_a_recovery_once_each():
    good, bad = _trace(trusted()), _trace(MetricForecast(value=60_000, why="skill -0.20", trusted=False))
    state, events = fallback_transition(None, {}, good)
    assert (state, events) == (False, ())
    state, events = fallback_transition(state, {}, bad)
    assert state is True
    assert [(e.type, e.reason) for e in events] == [(EventType.WARNING, EventReason.FORECAST_FALLBACK)]
    assert "Pods rps: skill -0.20" in events[0].message
    assert fallback_transition(state, {}, bad) == (True, ())
    assert fallback_transition(state, {}, None) == (True, ())  # nothing evaluated: nothing known to change
    state, events = fallback_transition(state, {}, good)
    assert state is False
    assert [(e.type, e.reason) for e in events] == [(EventType.NORMAL, EventReason.FORECAST_RECOVERED)]


def test_a_restart_does_not_announce_a_fallback_the_status_already_shows():
    a = autoscaler({"mode": "Active"})
    bad = MetricForecast(value=60_000, trusted=False)
    written = build_status(a, sync(a, bad), now=T0)
    assert fallback_transition(None, written, _trace(bad)) == (True, ())
    state, events = fallback_transition(None, written, _trace(trusted()))
    assert state is False and [e.reason for e in events] == [EventReason.FORECAST_RECOVERED]
