"""The one place a PromAutoscaler's `status` JSON is built, and the rule for when to write it.

Job: `build_status` turns a `Decision` into the status the CRD serves: the HPA-identical fields
(observedGeneration, currentReplicas, desiredReplicas, currentMetrics, lastScaleTime,
conditions in upstream order with RFC 3339 UTC times; quantities printed as Kubernetes prints
them), our `Paused` condition after them, `reference` and `targetsSummary` for the printer
columns, the bounded `lastDecision`, and the `scaleHistory` checkpoint (epoch seconds) that
lets a restarted controller keep its stabilization window and rate limits.

`plan_status_write` says whether (and why) to write: at once when the status changed
semantically (upstream's rule) or the decision's outcome or limiting reason changed; a history
checkpoint when the stored one is `CHECKPOINT_INTERVAL_SECONDS` old; metric values alone at most
every `METRICS_INTERVAL_SECONDS`. Under steady load that is at most two writes per minute.

Non-goals: the write itself (status_writer.py), native HPAs (never written). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any

from controller.algorithm.behavior import ScaleHistory
from controller.algorithm.conditions import Condition
from controller.algorithm.decision import Decision
from controller.algorithm.spec import MetricSpec, MetricStatus, SourceType
from controller.kube.hpa_spec import source_body
from controller.kube.last_decision import last_decision, targets_summary
from controller.kube.objects import KIND, Autoscaler, Mode
from controller.kube.times import format_time, parse_time
from kubecommon.quantity import format_milli

__all__ = ["CHECKPOINT_INTERVAL_SECONDS", "METRICS_INTERVAL_SECONDS", "PAUSED_CONDITION", "WriteReason",
           "build_status", "history_checkpoint", "metric_status_json", "plan_status_write"]

CHECKPOINT_INTERVAL_SECONDS = 60.0
METRICS_INTERVAL_SECONDS = 30.0
PAUSED_CONDITION = "Paused"
_MSG_PAUSED = "spec.paused is true: the controller holds the target's replicas and records what it would do"
_MSG_NOT_PAUSED = "spec.paused is false: the controller scales the target"
_STABLE_FIELDS = ("observedGeneration", "reference", "currentReplicas", "desiredReplicas", "lastScaleTime")

Json = Mapping[str, Any]


class WriteReason(StrEnum):
    CHANGED = "status changed"
    DECISION = "decision changed"
    CHECKPOINT = "checkpoint due"
    METRICS = "metric values changed"


def _condition_json(cond: Condition, now: float) -> dict[str, Any]:
    when = cond.last_transition_time if cond.last_transition_time is not None else now
    return {"type": str(cond.type), "status": "True" if cond.status else "False",
            "lastTransitionTime": format_time(when), "reason": str(cond.reason), "message": cond.message}


def _paused_condition(previous: Json, paused: bool, now: float) -> dict[str, Any]:
    status = "True" if paused else "False"
    old = next((c for c in previous.get("conditions") or () if isinstance(c, Mapping)
                and c.get("type") == PAUSED_CONDITION), None)
    when = old.get("lastTransitionTime") if old is not None and old.get("status") == status else None
    return {"type": PAUSED_CONDITION, "status": status, "lastTransitionTime": when or format_time(now),
            "reason": "Paused" if paused else "NotPaused", "message": _MSG_PAUSED if paused else _MSG_NOT_PAUSED}


def _current(status: MetricStatus) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if status.average_utilization is not None:
        out["averageUtilization"] = status.average_utilization
    if status.average_value is not None:
        out["averageValue"] = format_milli(status.average_value)
    if status.value is not None:
        out["value"] = format_milli(status.value)
    return out


def metric_status_json(status: MetricStatus | None, spec: MetricSpec | None, raw_spec: Json | None) -> dict[str, Any]:
    """One `status.currentMetrics[]` entry as autoscaling/v2 serializes it; a failed metric is
    the zero MetricStatus upstream leaves in its place (`{"type": ""}`)."""
    if status is None:
        return {"type": ""}
    current = _current(status)
    if status.type in (SourceType.RESOURCE, SourceType.CONTAINER_RESOURCE):
        body: dict[str, Any] = {"name": status.name, "current": current}
        if status.type is SourceType.CONTAINER_RESOURCE:
            body["container"] = status.container
        key = "resource" if status.type is SourceType.RESOURCE else "containerResource"
        return {"type": str(status.type), key: body}
    metric: dict[str, Any] = {"name": status.name}
    raw_metric = (source_body(raw_spec).get("metric") or {}) if raw_spec is not None else {}
    if raw_metric.get("selector") is not None:
        metric["selector"] = raw_metric["selector"]
    body = {"metric": metric, "current": current}
    if status.type is SourceType.OBJECT and spec is not None and spec.described_object is not None:
        ref = spec.described_object
        body = {"describedObject": {"apiVersion": ref.api_version, "kind": ref.kind, "name": ref.name}, **body}
    return {"type": str(status.type), str(status.type)[:1].lower() + str(status.type)[1:]: body}


def history_checkpoint(history: ScaleHistory, now: float) -> dict[str, Any]:
    """`status.scaleHistory`: ScaleHistory.to_dict with millisecond epoch times and `savedAt`."""
    data = history.to_dict()
    rows = {key: [[round(v, 3) if isinstance(v, float) else v for v in row] for row in value]
            for key, value in data.items()}
    return {"savedAt": format_time(now), **rows}


def build_status(autoscaler: Autoscaler, decision: Decision, *, now: float) -> dict[str, Any]:
    """The whole status to write for this sync (`now` in epoch seconds)."""
    paused = autoscaler.paused
    specs = autoscaler.spec.metrics
    raw_specs: Sequence[Any] = autoscaler.spec_json.get("metrics") or ()
    new = decision.status
    metrics = [metric_status_json(m, specs[i] if i < len(specs) else None,
                                  raw_specs[i] if i < len(raw_specs) and isinstance(raw_specs[i], Mapping) else None)
               for i, m in enumerate(new.current_metrics)]
    conditions = [_condition_json(c, now) for c in new.conditions]
    if autoscaler.key.kind == KIND:
        conditions.append(_paused_condition(autoscaler.status_json, paused, now))
    status: dict[str, Any] = {
        "observedGeneration": autoscaler.generation,
        "reference": f"{autoscaler.target.kind}/{autoscaler.target.name}",
        "currentReplicas": new.current_replicas,
        "desiredReplicas": new.desired_replicas,
    }
    if new.last_scale_time is not None:
        status["lastScaleTime"] = format_time(new.last_scale_time)
    status["currentMetrics"] = metrics
    status["conditions"] = conditions
    status["targetsSummary"] = targets_summary(specs, new.current_metrics)
    status["lastDecision"] = last_decision(decision, specs, now=now, paused=paused,
                                           preview=autoscaler.mode is Mode.PREVIEW)
    if decision.history is not None:
        status["scaleHistory"] = history_checkpoint(decision.history, now)
    elif isinstance(autoscaler.status_json.get("scaleHistory"), Mapping):
        status["scaleHistory"] = autoscaler.status_json["scaleHistory"]  # keep what we cannot renew
    return status


def _conditions_key(status: Json) -> list[tuple[Any, ...]]:
    return [(c.get("type"), c.get("status"), c.get("reason"), c.get("message"))
            for c in status.get("conditions") or () if isinstance(c, Mapping)]


def _decision_key(status: Json) -> tuple[Any, ...]:
    head = status.get("lastDecision")
    head = head if isinstance(head, Mapping) else {}
    return head.get("outcome"), head.get("limitingReason"), head.get("applied", True)


def _history_rows(status: Json) -> dict[str, Any]:
    checkpoint = status.get("scaleHistory")
    return {k: v for k, v in checkpoint.items() if k != "savedAt"} if isinstance(checkpoint, Mapping) else {}


def _age(text: Any, now: float) -> float:
    try:
        when = parse_time(text)
    except ValueError:
        return float("inf")
    return float("inf") if when is None else now - when


def plan_status_write(previous: Json, new: Json, *, now: float, force_checkpoint: bool = False) -> WriteReason | None:
    """Why `new` must be written over `previous` now, or None to skip this write."""
    if any(previous.get(key) != new.get(key) for key in _STABLE_FIELDS) or \
            _conditions_key(previous) != _conditions_key(new):
        return WriteReason.CHANGED
    if _decision_key(previous) != _decision_key(new):
        return WriteReason.DECISION
    old_rows, new_rows = _history_rows(previous), _history_rows(new)
    checkpoint = previous.get("scaleHistory")
    saved_at = checkpoint.get("savedAt") if isinstance(checkpoint, Mapping) else None
    if new_rows and old_rows != new_rows and (
            force_checkpoint or _age(saved_at, now) >= CHECKPOINT_INTERVAL_SECONDS):
        return WriteReason.CHECKPOINT
    last = previous.get("lastDecision")
    written_at = last.get("time") if isinstance(last, Mapping) else None
    if (previous.get("currentMetrics") != new.get("currentMetrics")
            or previous.get("targetsSummary") != new.get("targetsSummary")) and \
            _age(written_at, now) >= METRICS_INTERVAL_SECONDS:
        return WriteReason.METRICS
    return None
