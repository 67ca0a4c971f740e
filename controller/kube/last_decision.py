"""The explaining parts of status: `lastDecision` (bounded), `targetsSummary`, the limiting reason.

Job: turn a `Decision` and its trace into the JSON users read with `kubectl get -o yaml`: per
metric the value, target, ratio, proposal and sample age; the normalization steps; the reason
that limited the outcome; all under `MAX_LAST_DECISION_BYTES` (metrics and steps beyond what
fits are dropped, and a `truncated` note says how many). `targets_summary` prints the TARGETS
column as `kubectl get hpa` does ("cpu: 45%/50%, rps: 1200m/1500m + 1 more...").

Non-goals: deciding whether to write (status.py), the HPA-identical fields. Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from controller.algorithm.conditions import ConditionType, Reason
from controller.algorithm.decision import Decision, MetricTrace, TraceStep
from controller.algorithm.spec import MetricSpec, MetricStatus, MetricTarget, TargetType
from kubecommon.kubetime import format_time
from kubecommon.quantity import format_milli

__all__ = ["MAX_LAST_DECISION_BYTES", "PAUSED_REASON", "last_decision", "limiting_reason", "target_text",
           "targets_summary"]

MAX_LAST_DECISION_BYTES = 4096
PAUSED_REASON = "Paused"
_MAX_TEXT = 300  # one error or note
_SUMMARY_METRICS = 2  # kubectl prints two metrics, then "+ N more..."
_LIMIT_REASONS = frozenset({Reason.TOO_MANY_REPLICAS, Reason.TOO_FEW_REPLICAS, Reason.SCALE_UP_LIMIT,
                            Reason.SCALE_DOWN_LIMIT})
_STABILIZED = frozenset({Reason.SCALE_DOWN_STABILIZED, Reason.SCALE_UP_STABILIZED})


def limiting_reason(decision: Decision, *, paused: bool = False) -> str:
    """Why the replica count is what it is, in one condition reason: an error first (a failing
    metric, no scale, a failed write), then a limit (max/min, rate), then stabilization, else
    DesiredWithinRange."""
    if paused:
        return PAUSED_REASON
    by_type = {c.type: c for c in decision.status.conditions}
    able, active, limited = (by_type.get(t) for t in (ConditionType.ABLE_TO_SCALE, ConditionType.SCALING_ACTIVE,
                                                      ConditionType.SCALING_LIMITED))
    if able is not None and not able.status:
        return str(able.reason)
    if active is not None and not active.status:
        return str(active.reason)
    if limited is not None and limited.status and limited.reason in _LIMIT_REASONS:
        return str(limited.reason)
    if able is not None and able.reason in _STABILIZED:
        return str(able.reason)
    return str(Reason.DESIRED_WITHIN_RANGE)


def target_text(target: MetricTarget | None) -> str:
    if target is None:
        return "<unset>"
    if target.type is TargetType.UTILIZATION or (target.type is None and target.average_utilization is not None):
        return "<auto>" if target.average_utilization is None else f"{target.average_utilization}%"
    milli = target.average_value if target.type is TargetType.AVERAGE_VALUE or target.value is None else target.value
    return "<unset>" if milli is None else format_milli(milli)


def _current_text(spec: MetricSpec, status: MetricStatus | None) -> str:
    if status is None:
        return "<unknown>"
    target = spec.target
    if target is not None and (target.type is TargetType.UTILIZATION or
                               (target.type is None and target.average_utilization is not None)):
        return "<unknown>" if status.average_utilization is None else f"{status.average_utilization}%"
    wants_value = target is not None and target.type is TargetType.VALUE
    milli = status.value if wants_value else (status.average_value if status.average_value is not None
                                              else status.value)
    return "<unknown>" if milli is None else format_milli(milli)


def targets_summary(metrics: Sequence[MetricSpec], statuses: Sequence[MetricStatus | None]) -> str:
    """`kubectl get hpa` TARGETS: "<name>: <current>/<target>" per metric, two at most."""
    if not metrics:
        return "<none>"
    parts = []
    for i, spec in enumerate(metrics[:_SUMMARY_METRICS]):
        status = statuses[i] if i < len(statuses) else None
        avg = " (avg)" if spec.type in ("Object", "External") and spec.target is not None and \
            spec.target.type is TargetType.AVERAGE_VALUE else ""
        parts.append(f"{spec.name or spec.type}: {_current_text(spec, status)}/{target_text(spec.target)}{avg}")
    more = len(metrics) - _SUMMARY_METRICS
    return ", ".join(parts) + (f" + {more} more..." if more > 0 else "")


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 3] + "..."


def _metric_entry(trace: MetricTrace, specs: Sequence[MetricSpec]) -> dict[str, Any]:
    spec = specs[trace.index] if 0 <= trace.index < len(specs) else None
    entry: dict[str, Any] = {"index": trace.index, "type": trace.type, "name": _clip(trace.name)}
    if spec is not None:
        entry["target"] = target_text(spec.target)
    if trace.utilization is not None:
        entry["value"] = f"{trace.utilization}%"
    elif trace.value is not None:
        entry["value"] = format_milli(trace.value)
    if trace.ratio is not None:
        entry["ratio"] = round(trace.ratio, 4)
    if trace.proposal is not None:
        entry["proposal"] = trace.proposal
    if trace.age_seconds is not None:
        entry["sampleAgeSeconds"] = round(trace.age_seconds, 1)
    if trace.ready is not None:
        entry["pods"] = {"ready": trace.ready, "unready": trace.unready, "missing": trace.missing,
                         "ignored": trace.ignored}
    entry["why" if trace.proposal is not None else "error"] = _clip(trace.why)
    return entry


def _step_entry(step: TraceStep) -> dict[str, Any]:
    entry: dict[str, Any] = {"stage": str(step.stage), "before": step.before, "after": step.after,
                             "reason": _clip(step.reason)}
    if step.note:
        entry["note"] = _clip(step.note)
    return entry


def last_decision(decision: Decision, specs: Sequence[MetricSpec], *, now: float, paused: bool = False,
                  preview: bool = False, bounded: bool = True) -> dict[str, Any]:
    """The bounded `status.lastDecision` for one sync (`bounded=False`: every metric and step, for
    the controller's /debug/decisions document, which no size limit applies to)."""
    out: dict[str, Any] = {
        "time": format_time(now), "outcome": str(decision.outcome),
        "currentReplicas": decision.current_replicas, "desiredReplicas": decision.desired_replicas,
        "limitingReason": limiting_reason(decision, paused=paused),
    }
    if preview or paused:
        out["applied"] = False  # decided and recorded; /scale was left alone
    if decision.rescale_reason:
        out["rescaleReason"] = _clip(decision.rescale_reason)
    if decision.error:
        out["error"] = _clip(decision.error)
    z = decision.zero
    if z is not None:  # scale to zero: what the activation metrics said, the cooldown's countdown
        out["scaleToZero"] = {"activity": str(z.activity), "why": _clip(z.why), "cooldownSeconds": z.cooldown,
                              "idleSeconds": round(z.idle_for),
                              **({} if z.remaining is None else {"remainingSeconds": round(z.remaining)})}
    metrics = [_metric_entry(m, specs) for m in decision.trace.metrics]
    steps = [_step_entry(s) for s in decision.trace.steps]
    return _bounded(out, metrics, steps) if bounded else {**out, "metrics": metrics, "steps": steps}


def _size(doc: dict[str, Any]) -> int:
    return len(json.dumps(doc, separators=(",", ":")).encode())


def _bounded(head: dict[str, Any], metrics: list[dict[str, Any]], steps: list[dict[str, Any]]) -> dict[str, Any]:
    kept_metrics, kept_steps = len(metrics), len(steps)
    while True:
        doc = {**head, "metrics": metrics[:kept_metrics], "steps": steps[:kept_steps]}
        if kept_metrics < len(metrics) or kept_steps < len(steps):
            doc["truncated"] = (f"showing {kept_metrics} of {len(metrics)} metrics and {kept_steps} of "
                                f"{len(steps)} steps (status.lastDecision is kept under {MAX_LAST_DECISION_BYTES} "
                                "bytes; the controller's explain output has all)")
        if _size(doc) <= MAX_LAST_DECISION_BYTES or (kept_metrics == 0 and kept_steps == 0):
            return doc
        if kept_metrics >= kept_steps and kept_metrics > 0:
            kept_metrics -= 1
        else:
            kept_steps -= 1
