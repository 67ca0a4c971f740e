"""A forecast becomes a replica recommendation through the HPA's own arithmetic.

Each metric's forecast (`MetricForecast`: the highest value expected over the horizon, from
`controller.forecast`) is turned into replicas with the metric's own type, target and tolerance,
as if the metrics API had served the forecast now: for an Object or External metric the
forecast is the value served, for a Pods or Resource metric the total over the pods, spread
over the current replicas. The largest such count over the metrics is the predicted
recommendation. `decide` takes the larger of it and the reactive one, before stabilization and
`behavior`, so prediction only ever raises replicas ahead of time and every policy, window and
`maxReplicas` still applies to what is written.

Guards: Off (or no `spec.prediction`) computes nothing; ForecastOnly computes and reports but
never acts; Active acts only on a trusted forecast (`MetricForecast.trusted`, the accuracy
guard's verdict) and never when the reactive step is blocked by a metric it could not read.

Non-goals: forecasting (`controller.forecast`), scoring. Pure: no I/O, no clock reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from controller.algorithm.errors import MetricError
from controller.algorithm.pods import PodInfo, pod_request
from controller.algorithm.ratio import Tolerances, ceil_int32
from controller.algorithm.sources import per_pod_target, value_target
from controller.algorithm.spec import (
    AutoscalerSpec, MetricForecast, MetricSpec, PredictionMode, SourceType, TargetType,
)  # fmt: skip
from controller.algorithm.values import quick_init

__all__ = ["PredictedMetric", "PredictionTrace", "predict"]


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class PredictedMetric:
    """One metric's forecast and the replicas it asks for (None: no forecast, `why` says why)."""

    index: int
    name: str
    forecast: int | None  # milli-units, as `MetricForecast.value`
    replicas: int | None
    why: str = ""
    trusted: bool = True
    skill: float | None = None  # `MetricForecast.skill` (status.prediction shows it)
    history_seconds: float = 0.0  # `MetricForecast.history_seconds`

    def line(self) -> str:
        if self.replicas is None:
            return f"[{self.index}] {self.name}: no forecast ({self.why})"
        guard = "" if self.trusted else " (not trusted: the accuracy guard fell back to reactive)"
        return f"[{self.index}] {self.name}: forecast {self.forecast}m -> {self.replicas}{guard}"


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class PredictionTrace:
    """What prediction did in this sync, for status, `explain` and the metrics."""

    mode: PredictionMode
    metrics: tuple[PredictedMetric, ...]
    replicas: int | None  # the largest trusted prediction (None: none)
    reactive: int  # the reactive recommendation it was compared with
    used: bool  # it raised the recommendation (Active only)
    why: str  # one line: what happened and why

    def to_dict(self) -> dict[str, object]:
        return {"mode": str(self.mode), "replicas": self.replicas, "reactive": self.reactive, "used": self.used,
                "why": self.why,
                "metrics": [{"index": m.index, "name": m.name, "forecast": m.forecast, "replicas": m.replicas,
                             "why": m.why, "trusted": m.trusted, "skill": m.skill, "historySeconds": m.history_seconds}
                            for m in self.metrics]}  # fmt: skip


def _metric_name(spec: MetricSpec) -> str:
    return f"{spec.type} {spec.container + '/' if spec.container else ''}{spec.name}"


def _per_pod_target(spec: MetricSpec, pods: Sequence[PodInfo], pod_level: bool) -> float:
    """The per-pod value a Pods or Resource target asks for: AverageValue as given, Utilization of
    the mean request."""
    t = spec.target
    if t is None:
        raise MetricError("no target")
    if t.average_value is not None and t.type is not TargetType.UTILIZATION:
        return float(t.average_value)
    if t.average_utilization is None:
        raise MetricError("neither an average value nor a utilization target")
    if not pods:
        raise MetricError("no pods to read requests from")
    requests = [pod_request(p, resource=spec.name, container=spec.container, pod_level=pod_level) for p in pods]
    return sum(requests) / len(requests) * t.average_utilization / 100.0


def predicted_replicas(spec: MetricSpec, forecast: int, *, current: int, status_replicas: int,
                       pods: Sequence[PodInfo], tolerances: Tolerances, pod_level: bool = False) -> int:
    """The replicas the HPA gives for `forecast` at `current` replicas. An Object or External
    forecast is the value the metrics API would serve, so it goes through the very functions the
    reactive step uses (`sources.value_target`, `sources.per_pod_target`): the same value asks for
    the same count. A Pods or Resource forecast is a total over the pods, not per-pod samples, so
    the per-pod rules (readiness, missing pods) have nothing to apply to: it is spread over the
    current replicas against the per-pod target."""
    if current <= 0:
        raise MetricError("the target has no replicas to spread the forecast over")
    t = spec.target
    if t is None:
        raise MetricError("no target")
    if spec.type in (SourceType.OBJECT, SourceType.EXTERNAL):
        if t.type is TargetType.AVERAGE_VALUE or (t.value is None and t.average_value is not None):
            return per_pod_target(status_replicas=status_replicas, target=t.average_value or 0, usage=forecast,
                                  tolerances=tolerances).replicas  # fmt: skip
        if t.value is None:
            raise MetricError("neither a value nor an average value target")
        return value_target(current=current, target=t.value, usage=forecast, pods=pods,
                            tolerances=tolerances).replicas  # fmt: skip
    target = _per_pod_target(spec, pods, pod_level)
    if target <= 0:
        raise MetricError("the target is 0")
    ratio = forecast / (target * current)
    if tolerances.contains(ratio):
        return current
    return ceil_int32(ratio * current)


def predict(spec: AutoscalerSpec, forecasts: Sequence[MetricForecast | None], *, current: int,
            reactive: int, pods: Sequence[PodInfo], tolerances: Tolerances, pod_level: bool = False,
            blocked: bool = False, status_replicas: int | None = None) -> PredictionTrace | None:
    """Every metric's forecast as replicas, and whether it raises the reactive recommendation
    (`status_replicas`: the scale's status count, as the reactive AverageValue step uses; default
    `current`)."""
    status_replicas = current if status_replicas is None else status_replicas
    p = spec.prediction
    if p is None or not spec.predicts:
        return None
    out: list[PredictedMetric] = []
    for i, m in enumerate(spec.metrics):
        f = forecasts[i] if i < len(forecasts) else None
        name = _metric_name(m)
        if f is None or f.value is None:
            why = f.why if f is not None and f.why else "no forecast for this metric"
            out.append(PredictedMetric(index=i, name=name, forecast=None, replicas=None, why=why,
                                       history_seconds=f.history_seconds if f is not None else 0.0))
            continue
        try:
            n = predicted_replicas(m, f.value, current=current, status_replicas=status_replicas, pods=pods,
                                   tolerances=tolerances, pod_level=pod_level)  # fmt: skip
        except MetricError as err:
            out.append(PredictedMetric(index=i, name=name, forecast=f.value, replicas=None, why=str(err),
                                       skill=f.skill, history_seconds=f.history_seconds))
            continue
        out.append(PredictedMetric(index=i, name=name, forecast=f.value, replicas=n, why=f.why, trusted=f.trusted,
                                   skill=f.skill, history_seconds=f.history_seconds))
    trusted = [m.replicas for m in out if m.replicas is not None and m.trusted]
    best = max(trusted) if trusted else None
    used = p.mode is PredictionMode.ACTIVE and not blocked and best is not None and best > reactive
    return PredictionTrace(mode=p.mode, metrics=tuple(out), replicas=best, reactive=reactive, used=used,
                           why=_why(p.mode, out, best, reactive, used=used, blocked=blocked))  # fmt: skip


def _why(mode: PredictionMode, metrics: Sequence[PredictedMetric], best: int | None, reactive: int, *,
         used: bool, blocked: bool) -> str:
    if used:
        return f"the forecast asks for {best} replicas, above the reactive {reactive}: scaling ahead of the load"
    if best is None:
        fallback = [m for m in metrics if m.replicas is not None and not m.trusted]
        if fallback:
            return "reactive only: forecasts stopped beating reactive scaling (" + fallback[0].why + ")"
        reasons = sorted({m.why for m in metrics if m.why})
        return "reactive only: " + ("; ".join(reasons) if reasons else "no forecast")
    if blocked:
        return "reactive only: a metric could not be read, so nothing scales on a forecast"
    if mode is PredictionMode.FORECAST_ONLY:
        return f"ForecastOnly: the forecast asks for {best} replicas (reactive {reactive}); nothing is acted on"
    return f"the forecast asks for {best} replicas, not above the reactive {reactive}"
