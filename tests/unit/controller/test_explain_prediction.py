"""`explain` shows the forecast's part in a decision, from status alone and from the controller's
/debug document alike; an object that does not predict reads as before."""

from __future__ import annotations

from controller.algorithm import ControllerConfig, SyncInput, decide
from controller.algorithm.pods import ContainerInfo, PodInfo, PodMetric
from controller.algorithm.spec import MetricForecast, PodSamples, ScaleTarget
from controller.explain import render, status_document
from controller.kube.objects import autoscaler_from_object
from controller.kube.status import build_status
from controller.preview import decision_document
from controller.report import SyncReport

T0 = 1_795_608_000.0
RPS = {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}


def report(mode: str | None, forecast: MetricForecast | None) -> SyncReport:
    spec = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 10,
            "metrics": [RPS], **({"prediction": {"mode": mode}} if mode else {})}
    a = autoscaler_from_object({"kind": "PromAutoscaler", "metadata": {"name": "web", "namespace": "shop"},
                                "spec": spec})
    pods = tuple(PodInfo(name=f"p{i}", start_time=T0 - 3600, ready_transition=T0 - 3600,
                         containers=(ContainerInfo(name="app", requests={"cpu": 1000}),)) for i in range(4))
    samples = PodSamples(values={f"p{i}": PodMetric(value=10_000, timestamp=T0, window=60) for i in range(4)})
    d = decide(SyncInput(spec=a.spec, scale=ScaleTarget(spec_replicas=4, status_replicas=4), now=T0, pods=pods,
                         observations=(samples,), forecasts=(forecast,) if forecast else ()), ControllerConfig())
    return SyncReport(autoscaler=a, decision=d, extra_conditions=(), limiting_reason="", now=T0)


FORECAST = MetricForecast(value=60_000, why="daily cycle", skill=0.4237, history_seconds=86_400 * 14)


def test_explain_from_status_and_from_the_debug_document_show_the_forecast() -> None:
    r = report("ForecastOnly", FORECAST)
    status = build_status(r.autoscaler, r.decision, now=T0)
    for doc in (status_document(status), decision_document(r)):
        text = render(doc, title="PromAutoscaler shop/web")
        assert "Prediction (ForecastOnly, ForecastOnly; asks for 6 (reactive 4)): ForecastOnly: the forecast asks " \
               "for 6 replicas (reactive 4); nothing is acted on" in text
        assert "  Pods rps: forecast 60 -> 6 replicas (trusted, skill 0.42, 14.0 days of history; daily cycle)" in text
        assert "Outcome: no change: 4 -> 4 replicas" in text


def test_the_debug_document_carries_the_decisions_own_prediction_lines() -> None:
    doc = decision_document(report("Active", FORECAST))
    assert doc["prediction"]["used"] is True
    assert any(line.startswith("  prediction (Active): the forecast asks for 6 replicas")
               for line in doc["explanation"])  # fmt: skip
    assert "    forecast [0] Pods rps: forecast 60000m -> 6" in doc["explanation"]


def test_without_prediction_nothing_about_it_is_shown() -> None:
    r = report(None, None)
    status = build_status(r.autoscaler, r.decision, now=T0)
    assert "prediction" not in status_document(status) and "prediction" not in decision_document(r)
    assert "Prediction" not in render(status_document(status), title="x")
