"""`status.prediction`, the `PredictionActive` condition and the accuracy guard's transitions,
all read from the decision's `PredictionTrace` (controller.algorithm.prediction).

Job: what predictive scaling did in the last sync as the status shows it (the forecast of each
metric as a Kubernetes quantity, the replicas it asks for, whether the accuracy guard trusts it,
its `skill` with 2 decimals and the history it was made from; the predicted replicas; a
`reason`/`message` saying why it is off or falling back), the condition's reason derived from the
trace (`PredictionReason`), and the event when the guard falls back to reactive scaling or
trusts the forecast again (once per transition, also across a restart: the last written status
says which side it was on).

The condition's message names metrics but no numbers, so it changes only when its reason does
(a condition change is written at once); the numbers live in `status.prediction`, whose changes
`status.plan_status_write` treats as it treats `currentMetrics` (written at most every
`METRICS_INTERVAL_SECONDS`). Nothing here runs while `spec.prediction` is Off: status then has
neither `prediction` nor the condition, as before the feature.

Non-goals: forecasting, deciding (the algorithm), the write (status_writer.py). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.algorithm.conditions import Event, EventReason, EventType, PredictionReason
from controller.algorithm.prediction import PredictedMetric, PredictionTrace
from controller.algorithm.spec import PredictionMode
from controller.forecast.seasonal import MIN_HISTORY_SECONDS
from kubecommon.quantity import format_milli

__all__ = ["PREDICTION_ACTIVE", "condition_key", "fallback_transition", "fell_back", "prediction_json",
           "prediction_reason"]

PREDICTION_ACTIVE = "PredictionActive"
_MIN_HISTORY = f"a forecast needs at least {MIN_HISTORY_SECONDS / 86_400:g} days of samples"


def fell_back(trace: PredictionTrace) -> bool:
    """The accuracy guard distrusts the forecast of at least one metric (reported, never acted on)."""
    return any(m.forecast is not None and not m.trusted for m in trace.metrics)


def prediction_reason(trace: PredictionTrace | None) -> PredictionReason:
    """Why prediction is (or is not) active, in the order a user needs to act on it."""
    if trace is None:
        return PredictionReason.NOT_EVALUATED
    if trace.mode is PredictionMode.FORECAST_ONLY:
        return PredictionReason.FORECAST_ONLY
    if trace.replicas is not None:
        return PredictionReason.FORECAST_TRUSTED
    if fell_back(trace):
        return PredictionReason.FORECAST_FALLBACK
    missing = [m for m in trace.metrics if m.forecast is None]
    if any(_too_little(m) for m in missing):
        return PredictionReason.INSUFFICIENT_HISTORY
    if any(m.history_seconds <= 0 for m in missing):
        return PredictionReason.HISTORY_UNAVAILABLE
    return PredictionReason.NO_FORECAST if missing else PredictionReason.NOT_EVALUATED


def _too_little(m: PredictedMetric) -> bool:
    """Some history was read, less than a forecast needs (none at all: it could not be read)."""
    return 0 < m.history_seconds < MIN_HISTORY_SECONDS


def _names(metrics: list[PredictedMetric]) -> str:
    return ", ".join(m.name for m in metrics) or "every metric"


def _condition_message(reason: PredictionReason, trace: PredictionTrace | None) -> str:
    metrics = list(trace.metrics) if trace is not None else []
    if reason is PredictionReason.FORECAST_TRUSTED:
        return ("spec.prediction.mode is Active and the forecast is trusted: the target is scaled ahead of the load "
                "whenever the forecast asks for more replicas than the metrics do now")
    if reason is PredictionReason.FORECAST_ONLY:
        return ("spec.prediction.mode is ForecastOnly: forecasts are made, scored and shown in status.prediction; "
                "the target is scaled on the current metrics only")
    if reason is PredictionReason.FORECAST_FALLBACK:
        names = _names([m for m in metrics if m.forecast is not None and not m.trusted])
        return (f"the accuracy guard fell back to reactive scaling: recent forecasts of {names} did not beat it "
                "(status.prediction.metrics[].skill)")
    if reason is PredictionReason.INSUFFICIENT_HISTORY:
        names = _names([m for m in metrics if m.forecast is None and _too_little(m)])
        return f"too little history yet to forecast {names} ({_MIN_HISTORY}); scaling is reactive until then"
    if reason is PredictionReason.HISTORY_UNAVAILABLE:
        names = _names([m for m in metrics if m.forecast is None and m.history_seconds <= 0])
        return f"no history of {names} could be read (status.prediction.metrics[].message); scaling is reactive"
    if reason is PredictionReason.NO_FORECAST:
        names = _names([m for m in metrics if m.forecast is None])
        return (f"no forecast of {names} from its history (status.prediction.metrics[].message says why); "
                "scaling is reactive")
    return ("no forecast was evaluated in the last sync (the target's scale, pods or metrics could not be used); "
            "scaling is reactive")


def condition_key(trace: PredictionTrace | None) -> tuple[str, str, str, str]:
    """The `PredictionActive` condition's (type, status, reason, message)."""
    reason = prediction_reason(trace)
    status = "True" if reason is PredictionReason.FORECAST_TRUSTED else "False"
    return PREDICTION_ACTIVE, status, str(reason), _condition_message(reason, trace)


def _skill(value: float) -> str:
    return f"{round(value, 2) + 0.0:.2f}"  # + 0.0: never "-0.00"


def _metric_json(m: PredictedMetric) -> dict[str, Any]:
    out: dict[str, Any] = {"name": m.name}
    if m.forecast is not None:
        out["forecast"] = format_milli(m.forecast)
    if m.replicas is not None:
        out["replicas"] = m.replicas
    out["trusted"] = m.trusted
    if m.skill is not None:
        out["skill"] = _skill(m.skill)
    out["historySeconds"] = int(m.history_seconds)
    if m.why:
        out["message"] = m.why
    return out


def prediction_json(trace: PredictionTrace | None, mode: PredictionMode) -> dict[str, Any]:
    """`status.prediction` for a sync whose spec.prediction.mode is `mode` (not Off)."""
    reason = prediction_reason(trace)
    if trace is None:
        return {"mode": str(mode), "reason": str(reason), "message": _condition_message(reason, None)}
    out: dict[str, Any] = {"mode": str(trace.mode)}
    if trace.replicas is not None:
        out["replicas"] = trace.replicas
    out.update(reactiveReplicas=trace.reactive, used=trace.used, reason=str(reason), message=trace.why,
               metrics=[_metric_json(m) for m in trace.metrics])
    return out


def _fallback_in_status(status: Mapping[str, Any]) -> bool:
    prediction = status.get("prediction")
    metrics = prediction.get("metrics") if isinstance(prediction, Mapping) else None
    return any(isinstance(m, Mapping) and m.get("trusted") is False for m in metrics or ())


def fallback_transition(was: bool | None, status: Mapping[str, Any],
                        trace: PredictionTrace | None) -> tuple[bool | None, tuple[Event, ...]]:  # fmt: skip
    """(fell back now, the event of a change). `was` None: not yet known in this process, so read
    from the last written `status` (a restart announces nothing already announced). A sync with
    no trace (prediction Off, nothing evaluated) keeps what was known."""
    if trace is None:
        return was, ()
    before = _fallback_in_status(status) if was is None else was
    now = fell_back(trace)
    if now == before:
        return now, ()
    if now:
        detail = "; ".join(f"{m.name}: {m.why}" if m.why else m.name
                           for m in trace.metrics if m.forecast is not None and not m.trusted)  # fmt: skip
        event = Event(type=EventType.WARNING, reason=EventReason.FORECAST_FALLBACK,
                      message=f"the accuracy guard fell back to reactive scaling ({detail})")  # fmt: skip
    else:
        event = Event(type=EventType.NORMAL, reason=EventReason.FORECAST_RECOVERED,
                      message="forecasts beat reactive scaling again: the accuracy guard trusts them")  # fmt: skip
    return now, (event,)
