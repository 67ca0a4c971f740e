"""The one place a PromAutoscaler's `status` JSON is built, and the rule for when to write it.

Job: `build_status` turns a `Decision` into the status the CRD serves: the HPA-identical fields
(observedGeneration, currentReplicas, desiredReplicas, currentMetrics, lastScaleTime,
conditions in upstream order with RFC 3339 UTC times; quantities printed as Kubernetes prints
them), our `Paused` condition after them, `reference` and `targetsSummary` for the printer
columns, the bounded `lastDecision`, the `scaleHistory` checkpoint (epoch seconds) that
lets a restarted controller keep its stabilization window and rate limits, and, while
`spec.prediction.mode` is not Off, `prediction` with its `PredictionActive` condition after
`Paused` (controller.kube.prediction_status), then the conditions the reconciler's gates add
(`ExtraCondition`: `ScalingActive=False/ConflictingAutoscaler` while another autoscaler targets the
same workload, `Preview=True/PreviewMode` in Preview mode), each replacing the condition of its
type and keeping its transition time unless its status flipped. `invalid_spec_status` is the
status of an object whose stored spec cannot be used (InvalidSpec conditions).

`StatusDraft` is that status built field by field on first read, so `plan_status_write` (which
reads the cheap fields first and the bounded `lastDecision` only through its outcome) decides
most syncs, which write nothing, without building the whole document.

`plan_status_write` says whether (and why) to write: at once when the status changed
semantically (upstream's rule) or the decision's outcome or limiting reason changed; a history
checkpoint when the stored one is `CHECKPOINT_INTERVAL_SECONDS` old and would not restore to the
same decisions (the caller says so); metric values and forecasts (`prediction`) alone at most
every `METRICS_INTERVAL_SECONDS`. Under steady load that is at most two writes per minute, and none
while the metric values and the replicas hold still.

Non-goals: the write itself (status_writer.py), native HPAs (never written). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from controller.algorithm.behavior import ScaleHistory
from controller.algorithm.conditions import MSG_INVALID_SPEC_NOT_SCALED, Condition, ConditionType, EventReason, Reason
from controller.algorithm.decision import Decision
from controller.algorithm.spec import MetricSpec, MetricStatus, PredictionMode, SourceType
from controller.kube.hpa_spec import source_body
from controller.kube.last_decision import last_decision, limiting_reason, targets_summary
from controller.kube.objects import KIND, Autoscaler, Mode
from controller.kube.prediction_status import condition_key, prediction_json
from controller.kube.times import parse_time
from kubecommon.kubetime import format_time
from kubecommon.quantity import format_milli

__all__ = ["CHECKPOINT_INTERVAL_SECONDS", "CONFLICTING_AUTOSCALER", "METRICS_INTERVAL_SECONDS", "PAUSED_CONDITION",
           "PREVIEW", "PREVIEW_MODE", "ExtraCondition", "StatusDraft", "WriteReason", "build_status",
           "history_checkpoint", "invalid_spec_status", "metric_status_json", "paused_in_status", "plan_status_write"]

CHECKPOINT_INTERVAL_SECONDS = 60.0
METRICS_INTERVAL_SECONDS = 30.0
PAUSED_CONDITION = "Paused"
PREVIEW = "Preview"
PREVIEW_MODE = "PreviewMode"
CONFLICTING_AUTOSCALER = str(Reason.CONFLICTING_AUTOSCALER)
_MSG_PAUSED = "spec.paused is true: the controller holds the target's replicas and records what it would do"
_MSG_NOT_PAUSED = "spec.paused is false: the controller scales the target"
_MAX_ERROR = 1024  # lastDecision stays bounded (the condition carries the whole message)
_STABLE_FIELDS = ("observedGeneration", "reference", "currentReplicas", "desiredReplicas", "lastScaleTime")

Json = Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtraCondition:
    """A condition the builder does not set itself (the reconciler's gates say when it applies)."""

    type: str
    status: bool
    reason: str
    message: str


class WriteReason(StrEnum):
    CHANGED = "status changed"
    DECISION = "decision changed"
    CHECKPOINT = "checkpoint due"
    METRICS = "metric values changed"


def _condition_json(cond: Condition, now: float) -> dict[str, Any]:
    when = cond.last_transition_time if cond.last_transition_time is not None else now
    return {"type": str(cond.type), "status": "True" if cond.status else "False",
            "lastTransitionTime": format_time(when), "reason": str(cond.reason), "message": cond.message}


def _paused_key(paused: bool) -> tuple[str, str, str, str]:
    """The `Paused` condition's (type, status, reason, message): its JSON and the write rule's key."""
    if paused:
        return PAUSED_CONDITION, "True", "Paused", _MSG_PAUSED
    return PAUSED_CONDITION, "False", "NotPaused", _MSG_NOT_PAUSED


def paused_in_status(status: Json) -> bool:
    """Whether the status says the object was paused (its `Paused` condition is True): what a
    restarted controller takes as already announced, so it neither repeats `Paused` nor misses
    `Unpaused` for a pause lifted while it was down."""
    return any(isinstance(c, Mapping) and c.get("type") == PAUSED_CONDITION and c.get("status") == "True"
               for c in status.get("conditions") or ())


def _paused_condition(previous: Json, paused: bool, now: float) -> dict[str, Any]:
    return _kept_condition(previous, *_paused_key(paused), now=now)


def _kept_condition(previous: Json, kind: str, status: str, reason: str, message: str, *,
                    now: float) -> dict[str, Any]:  # fmt: skip
    """A condition's JSON keeping `previous`'s transition time unless its status flips."""
    old = next((c for c in previous.get("conditions") or () if isinstance(c, Mapping)
                and c.get("type") == kind), None)
    when = old.get("lastTransitionTime") if old is not None and old.get("status") == status else None
    return {"type": kind, "status": status, "lastTransitionTime": when or format_time(now), "reason": reason,
            "message": message}


def invalid_spec_status(previous: Json, *, generation: int, error: str, now: float) -> dict[str, Any]:
    """The status of an object whose stored spec breaks an HPA validation rule (`error` names the
    field): `previous` with `observedGeneration` moved on, `AbleToScale` and `ScalingActive` False
    with reason `InvalidSpec` (in place, or appended in upstream's order), `lastDecision` saying
    so (the REASON column); every other field as it was, since nothing was read or decided."""
    conditions = [dict(c) for c in previous.get("conditions") or () if isinstance(c, Mapping)]
    reason = str(EventReason.INVALID_SPEC)
    for kind, message in ((ConditionType.ABLE_TO_SCALE, MSG_INVALID_SPEC_NOT_SCALED),
                          (ConditionType.SCALING_ACTIVE, error)):  # fmt: skip
        entry = _kept_condition(previous, str(kind), "False", reason, message, now=now)
        at = next((i for i, c in enumerate(conditions) if c.get("type") == str(kind)), None)
        if at is None:
            conditions.append(entry)
        else:
            conditions[at] = entry
    decision = {"time": format_time(now), "outcome": "invalid spec", "limitingReason": reason, "applied": False,
                "error": error[:_MAX_ERROR]}
    return {**previous, "observedGeneration": generation, "conditions": conditions, "lastDecision": decision}


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
    return StatusDraft(autoscaler, decision, now=now).to_dict()


_Conditions = list[dict[str, Any]]


class StatusDraft(Mapping[str, Any]):
    """The status `build_status` returns, each field built on first read and then kept, with
    `extra_conditions` laid over its conditions (transition times kept from `previous`)."""

    __slots__ = ("_autoscaler", "_decision", "_now", "_extras", "_previous", "_keys", "_fields")

    def __init__(self, autoscaler: Autoscaler, decision: Decision, *, now: float,
                 extra_conditions: tuple[ExtraCondition, ...] = (), previous: Json | None = None) -> None:  # fmt: skip
        self._autoscaler, self._decision, self._now = autoscaler, decision, now
        self._extras, self._previous = extra_conditions, previous
        keys = ["observedGeneration", "reference", "currentReplicas", "desiredReplicas"]
        if decision.status.last_scale_time is not None:
            keys.append("lastScaleTime")
        keys += ["currentMetrics", "conditions", "targetsSummary", "lastDecision"]
        if decision.history is not None or isinstance(autoscaler.status_json.get("scaleHistory"), Mapping):
            keys.append("scaleHistory")
        if self._predicting():
            keys.append("prediction")
        self._keys: tuple[str, ...] = tuple(keys)
        self._fields: dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        value = self._fields.get(key, _MISSING)
        if value is _MISSING:
            if key not in self._keys:
                raise KeyError(key)
            value = self._fields[key] = self._build(key)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def get(self, key: str, default: Any = None) -> Any:
        """`Mapping.get` without its KeyError round trip (plan_status_write reads every field)."""
        return self[key] if key in self._keys else default

    def to_dict(self) -> dict[str, Any]:
        return {key: self[key] for key in self._keys}

    def conditions_key(self) -> list[tuple[Any, ...]]:
        """What `_conditions_key` reads from the conditions, without formatting their times
        (only when there are no extra conditions, which may replace them)."""
        if self._extras or "conditions" in self._fields:
            return _json_conditions_key(self["conditions"])
        key = [(str(c.type), "True" if c.status else "False", str(c.reason), c.message)
               for c in self._decision.status.conditions]
        if self._autoscaler.key.kind == KIND:
            key.append(_paused_key(self._autoscaler.paused))
        if self._predicting():
            key.append(condition_key(self._decision.prediction))
        return key

    def _predicting(self) -> bool:
        """spec.prediction is on: status shows `prediction` and the `PredictionActive` condition."""
        return self._autoscaler.spec.predicts and self._autoscaler.key.kind == KIND

    def decision_key(self) -> tuple[Any, ...]:
        """`(outcome, limitingReason, applied)` of `lastDecision`, without building it."""
        a, paused = self._autoscaler, self._autoscaler.paused
        applied = not (paused or a.mode is Mode.PREVIEW)
        return str(self._decision.outcome), limiting_reason(self._decision, paused=paused), applied

    def _build(self, key: str) -> Any:  # one arm per field, in build order
        a, decision, now = self._autoscaler, self._decision, self._now
        new = decision.status
        if key == "observedGeneration":
            return a.generation
        if key == "reference":
            return f"{a.target.kind}/{a.target.name}"
        if key == "currentReplicas":
            return new.current_replicas
        if key == "desiredReplicas":
            return new.desired_replicas
        if key == "lastScaleTime":
            return format_time(new.last_scale_time) if new.last_scale_time is not None else None
        if key == "currentMetrics":
            specs, raw_specs = a.spec.metrics, a.spec_json.get("metrics") or ()
            return [metric_status_json(m, specs[i] if i < len(specs) else None,
                                       raw_specs[i] if i < len(raw_specs) and isinstance(raw_specs[i], Mapping)
                                       else None) for i, m in enumerate(new.current_metrics)]  # fmt: skip
        if key == "conditions":
            return self._conditions()
        if key == "targetsSummary":
            return targets_summary(a.spec.metrics, new.current_metrics)
        if key == "lastDecision":
            return last_decision(decision, a.spec.metrics, now=now, paused=a.paused, preview=a.mode is Mode.PREVIEW)
        if key == "prediction":
            mode = a.spec.prediction.mode if a.spec.prediction is not None else PredictionMode.OFF
            return prediction_json(decision.prediction, mode)
        if decision.history is not None:  # scaleHistory
            return history_checkpoint(decision.history, now)
        return a.status_json["scaleHistory"]  # keep what we cannot renew

    def _conditions(self) -> _Conditions:
        conditions = [_condition_json(c, self._now) for c in self._decision.status.conditions]
        if self._autoscaler.key.kind == KIND:
            conditions.append(_paused_condition(self._autoscaler.status_json, self._autoscaler.paused, self._now))
        if self._predicting():
            conditions.append(_kept_condition(self._autoscaler.status_json,
                                              *condition_key(self._decision.prediction), now=self._now))
        if self._extras:
            _overlay(conditions, self._extras, previous=self._previous or {}, now=self._now)
        return conditions


def _overlay(conditions: _Conditions, extras: tuple[ExtraCondition, ...], *, previous: Json, now: float) -> None:
    """Each extra condition replaces the one of its type in `conditions` (or is appended); its
    transition time is kept from `previous` unless its status flipped."""
    before = {c.get("type"): c for c in previous.get("conditions") or () if isinstance(c, Mapping)}
    for extra in extras:
        value = "True" if extra.status else "False"
        old = before.get(extra.type)
        when = old.get("lastTransitionTime") if old is not None and old.get("status") == value else None
        entry = {"type": extra.type, "status": value, "lastTransitionTime": when or format_time(now),
                 "reason": extra.reason, "message": extra.message}
        at = next((i for i, c in enumerate(conditions) if c.get("type") == extra.type), None)
        if at is None:
            conditions.append(entry)
        else:
            conditions[at] = entry


_MISSING = object()


def _conditions_key(status: Json) -> list[tuple[Any, ...]]:
    if isinstance(status, StatusDraft):
        return status.conditions_key()
    return _json_conditions_key(status.get("conditions"))


def _json_conditions_key(conditions: Any) -> list[tuple[Any, ...]]:
    return [(c.get("type"), c.get("status"), c.get("reason"), c.get("message"))
            for c in conditions or () if isinstance(c, Mapping)]


def _decision_key(status: Json) -> tuple[Any, ...]:
    if isinstance(status, StatusDraft):
        return status.decision_key()
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


def plan_status_write(previous: Json, new: Json, *, now: float, force_checkpoint: bool = False,
                      history_restorable: bool = False,
                      checkpoint_interval: float = CHECKPOINT_INTERVAL_SECONDS) -> WriteReason | None:  # fmt: skip
    """Why `new` must be written over `previous` now, or None to skip this write.

    `history_restorable`: the caller found that the checkpoint in `previous` restores to the
    same decisions as the new history (`controller.algorithm.history_rules.restorable`), so the timed
    checkpoint is not due; `force_checkpoint` (a scale write, shutdown) saves it regardless;
    `checkpoint_interval` is `--status-checkpoint-interval`."""
    if any(previous.get(key) != new.get(key) for key in _STABLE_FIELDS) or \
            _conditions_key(previous) != _conditions_key(new):
        return WriteReason.CHANGED
    if _decision_key(previous) != _decision_key(new):
        return WriteReason.DECISION
    # the time checks first: they are cheap and rule out building the rows and metrics
    checkpoint = previous.get("scaleHistory")
    saved_at = checkpoint.get("savedAt") if isinstance(checkpoint, Mapping) else None
    if force_checkpoint or (not history_restorable and _age(saved_at, now) >= checkpoint_interval):
        new_rows = _history_rows(new)
        if new_rows and _history_rows(previous) != new_rows:
            return WriteReason.CHECKPOINT
    last = previous.get("lastDecision")
    written_at = last.get("time") if isinstance(last, Mapping) else None
    if _age(written_at, now) >= METRICS_INTERVAL_SECONDS and (
            previous.get("currentMetrics") != new.get("currentMetrics")
            or previous.get("targetsSummary") != new.get("targetsSummary")
            or previous.get("prediction") != new.get("prediction")):
        return WriteReason.METRICS
    return None
