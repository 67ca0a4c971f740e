"""The controller's per-object predictive-scaling series on `/metrics` (part of controller.telemetry).

Per PromAutoscaler whose `spec.prediction.mode` is not Off, from its last decision's prediction
trace, with the labels of the per-object and per-metric gauges beside them:
`prediction_forecast{metric_index,metric_name,metric_type}` (the highest value expected over the
horizon, in the metric's units: for Pods and Resource metrics the total over the target's pods),
`prediction_metric_replicas` (what that forecast asks for), `prediction_skill` (recent accuracy
against reactive scaling; above 0 beats it), `prediction_replicas` (the largest trusted ask) and
`prediction_fallback` (1 while the accuracy guard distrusts a forecast, else 0). A series whose
number is unknown is absent, never 0. Cardinality is bounded by the objects and their metrics: an
object's series go when it is deleted, stops predicting or this replica stops leading.

Non-goals: forecasting, deciding; the registry and the HTTP endpoint (controller.telemetry).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from controller.kube.ports import ObjectKey
from controller.kube.prediction_status import fell_back
from controller.report import SyncReport
from controller.telemetry_series import ObjectGauge

__all__ = ["PredictionGauges"]

_OBJECT_LABELS = ["kind", "namespace", "name"]
_METRIC_LABELS = [*_OBJECT_LABELS, "metric_index", "metric_name", "metric_type"]
Series = tuple[tuple[tuple[str, ...], float], ...]  # (label values, number) per series


class PredictionGauges:
    def __init__(self, registry: CollectorRegistry, prefix: str) -> None:
        def gauge(name: str, documentation: str, labels: list[str]) -> ObjectGauge:
            return ObjectGauge(f"{prefix}_{name}", documentation, labels, registry=registry)

        self.forecast = gauge("prediction_forecast", "Each metric's forecast (highest value expected over "
                              "spec.prediction.horizonSeconds; Pods/Resource: the total over the pods).",
                              _METRIC_LABELS)  # fmt: skip
        self.metric_replicas = gauge("prediction_metric_replicas", "Replicas each metric's forecast asks for.",
                                     _METRIC_LABELS)  # fmt: skip
        self.skill = gauge("prediction_skill", "Each metric's recent forecast accuracy against reactive "
                           "scaling: 1 - forecast loss / reactive loss (above 0 beats reacting).", _METRIC_LABELS)
        self.replicas = gauge("prediction_replicas", "Replicas the trusted forecasts ask for (the largest).",
                              _OBJECT_LABELS)  # fmt: skip
        self.fallback = gauge("prediction_fallback", "1 while the accuracy guard distrusts a forecast and "
                              "scaling is reactive only, else 0.", _OBJECT_LABELS)  # fmt: skip
        self._shown: dict[ObjectKey, tuple[Series, ...]] = {}

    def _gauges(self) -> tuple[ObjectGauge, ...]:
        return self.forecast, self.metric_replicas, self.skill, self.replicas, self.fallback

    def show(self, key: ObjectKey, report: SyncReport) -> None:
        """Set this object's series from its last decision; drop those it no longer has."""
        shown = _series(key, report)
        old = self._shown.get(key, ())
        if old == shown:  # also every sync of an object that does not predict
            return
        if shown:
            self._shown[key] = shown
        else:
            del self._shown[key]
        for gauge, now, was in zip(self._gauges(), shown or ((),) * 5, old or ((),) * 5, strict=True):
            keep = {labels for labels, _ in now}
            for labels, _ in was:
                if labels not in keep:
                    gauge.remove(*labels)
            for labels, number in now:
                gauge.labels(*labels).set(number)

    def forget(self, key: ObjectKey) -> None:
        for gauge, series in zip(self._gauges(), self._shown.pop(key, ()), strict=False):
            for labels, _ in series:
                gauge.remove(*labels)


def _series(key: ObjectKey, report: SyncReport) -> tuple[Series, ...]:
    """(forecast, metric replicas, skill, replicas, fallback) series; () while not predicting."""
    trace = report.decision.prediction
    if trace is None:
        return ()
    obj = (key.kind, key.namespace, key.name)
    specs = report.autoscaler.spec.metrics
    forecast: list[tuple[tuple[str, ...], float]] = []
    replicas: list[tuple[tuple[str, ...], float]] = []
    skill: list[tuple[tuple[str, ...], float]] = []
    for m in trace.metrics:
        spec = specs[m.index] if m.index < len(specs) else None
        labels = (*obj, str(m.index), spec.name if spec else m.name, spec.type if spec else "")
        if m.forecast is not None:
            forecast.append((labels, m.forecast / 1000))
        if m.replicas is not None:
            replicas.append((labels, float(m.replicas)))
        if m.skill is not None:
            skill.append((labels, m.skill))
    predicted = ((obj, float(trace.replicas)),) if trace.replicas is not None else ()
    return tuple(forecast), tuple(replicas), tuple(skill), predicted, ((obj, 1.0 if fell_back(trace) else 0.0),)
