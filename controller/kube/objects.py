"""A PromAutoscaler or native autoscaling/v2 HPA (JSON) -> one frozen `Autoscaler` value.

Job: everything reconcile needs from the object, read once: identity (key, uid, generation,
resourceVersion), the scale target, the algorithm spec with one metric plan per metric (same
order), the PromAutoscaler extensions (syncPeriodSeconds, mode, paused, prediction), the previous status as
the algorithm's `HpaStatus` (times as epoch seconds) and the stabilization/rate history restored
from the `status.scaleHistory` checkpoint. A malformed checkpoint or status entry never fails the
read: it is dropped and named in `problems` (reconcile logs it); a spec the algorithm cannot use
raises `SpecError` naming the field.

Native HPAs are always `Mode.PREVIEW` (the built-in controller owns their /scale and status) and
never predict (`spec.prediction` is ours; an HPA has no such field).

Non-goals: fetching, writing, the checkpoint's writer side (status.py). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from controller.algorithm.behavior import ScaleHistory
from controller.algorithm.conditions import Condition, ConditionType, Reason
from controller.algorithm.spec import (
    DEFAULT_COOLDOWN_SECONDS, DEFAULT_HORIZON_SECONDS, DEFAULT_LOOKBACK_SECONDS, AutoscalerSpec, HpaStatus,
    MetricStatus, PredictionMode, PredictionSpec, ScaleToZero, SourceType,
)  # fmt: skip
from controller.kube.hpa_spec import MetricPlan, SpecError, autoscaler_spec, scale_target_ref, source_body
from controller.kube.ports import ObjectKey, TargetRef
from controller.kube.times import parse_time
from kubecommon.quantity import Quantity, QuantityError

__all__ = ["API_GROUP", "API_VERSION", "DEFAULT_SYNC_PERIOD_SECONDS", "HPA_KIND", "KIND", "Autoscaler", "Mode",
           "SpecError", "autoscaler_from_object", "restore_history", "with_new_status"]

API_GROUP = "autoscaling.prom-autoscaler.io"
API_VERSION = f"{API_GROUP}/v1alpha1"
KIND = "PromAutoscaler"
HPA_KIND = "HorizontalPodAutoscaler"
DEFAULT_SYNC_PERIOD_SECONDS = 15
MIN_SYNC_PERIOD_SECONDS, MAX_SYNC_PERIOD_SECONDS = 3, 3600
# spec.prediction bounds (the CRD's): seconds ahead, history kept, seasonal periods (at most 4)
HORIZON_SECONDS, LOOKBACK_SECONDS, PERIOD_SECONDS = (15, 3600), (86_400, 90 * 86_400), (3600, 28 * 86_400)
MAX_PERIODS = 4
COOLDOWN_SECONDS = (0, 86_400)  # spec.scaleToZero.cooldownSeconds (the CRD's bounds)

Json = Mapping[str, Any]


class Mode(StrEnum):
    ACTIVE = "Active"  # decide and write /scale
    PREVIEW = "Preview"  # decide and record, never write /scale


@dataclass(frozen=True, slots=True, kw_only=True)
class Autoscaler:
    key: ObjectKey
    uid: str
    generation: int
    resource_version: str
    target: TargetRef
    spec: AutoscalerSpec
    metric_plans: tuple[MetricPlan, ...]  # one per spec.metrics entry: a MetricQuery or why not
    sync_period_seconds: int = DEFAULT_SYNC_PERIOD_SECONDS
    mode: Mode = Mode.ACTIVE
    paused: bool = False
    status: HpaStatus = field(default_factory=HpaStatus)
    # the spec and status as read, not copied (the watch cache's own, which nothing changes): metric
    # selectors for status; the write-needed check's baseline
    spec_json: Json = field(default_factory=dict)
    status_json: Json = field(default_factory=dict)
    history: ScaleHistory | None = None  # restored checkpoint, None when absent or malformed
    history_saved_at: float | None = None
    problems: tuple[str, ...] = ()  # what was dropped while reading status

    @property
    def writes_scale(self) -> bool:
        return self.mode is Mode.ACTIVE and not self.paused and self.key.kind == KIND


def autoscaler_from_object(obj: Json) -> Autoscaler:
    """Read a PromAutoscaler or an HPA. Raises `SpecError` when the spec cannot be used."""
    meta = obj.get("metadata") or {}
    kind = str(obj.get("kind") or KIND)
    if kind not in (KIND, HPA_KIND):
        raise SpecError(f"kind: Unsupported value: {kind!r}: want {KIND} or {HPA_KIND}")
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        raise SpecError("spec: Required value")
    algorithm_spec, plans = autoscaler_spec(spec)
    native = kind == HPA_KIND
    if not native:
        algorithm_spec = replace(algorithm_spec, prediction=_prediction(spec.get("prediction")),
                                 scale_to_zero=_scale_to_zero(spec.get("scaleToZero")))
    given_status = obj.get("status")
    raw_status: Json = given_status if isinstance(given_status, Mapping) else {}
    problems: list[str] = []
    status = parse_status(raw_status, problems)
    history, saved_at = restore_history(raw_status.get("scaleHistory"), problems)
    return Autoscaler(
        key=ObjectKey(kind=kind, namespace=str(meta.get("namespace") or ""), name=str(meta.get("name") or "")),
        uid=str(meta.get("uid") or ""), generation=int(meta.get("generation") or 0),
        resource_version=str(meta.get("resourceVersion") or ""), target=scale_target_ref(spec),
        spec=algorithm_spec, metric_plans=plans,
        sync_period_seconds=DEFAULT_SYNC_PERIOD_SECONDS if native else _seconds(
            spec.get("syncPeriodSeconds"), "spec.syncPeriodSeconds", (MIN_SYNC_PERIOD_SECONDS, MAX_SYNC_PERIOD_SECONDS),
            DEFAULT_SYNC_PERIOD_SECONDS),
        mode=Mode.PREVIEW if native else _mode(spec.get("mode")),
        paused=False if native else _paused(spec.get("paused")),
        status=status, spec_json=spec, status_json=raw_status, history=history, history_saved_at=saved_at,
        problems=tuple(problems))


def with_new_status(autoscaler: Autoscaler, obj: Json) -> Autoscaler:
    """`autoscaler` re-read from a newer version of the same object whose spec is unchanged (its
    own status write echoed back by the watch): only the status, history and resourceVersion are
    read again, so the result equals `autoscaler_from_object(obj)` without converting the spec."""
    given_status = obj.get("status")
    raw_status: Json = given_status if isinstance(given_status, Mapping) else {}
    problems: list[str] = []
    status = parse_status(raw_status, problems)
    history, saved_at = restore_history(raw_status.get("scaleHistory"), problems)
    return replace(autoscaler, resource_version=str((obj.get("metadata") or {}).get("resourceVersion") or ""),
                   status=status, status_json=raw_status, history=history, history_saved_at=saved_at,
                   problems=tuple(problems))  # fmt: skip


def _mode(value: Any) -> Mode:
    try:
        return Mode(value) if value is not None else Mode.ACTIVE
    except ValueError:
        raise SpecError(f'spec.mode: Unsupported value: {value!r}: supported values: "Active", "Preview"') from None


def _paused(value: Any) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise SpecError(f"spec.paused: Invalid value: {value!r}: must be a boolean")
    return value


def _prediction(value: Any) -> PredictionSpec | None:
    """`spec.prediction` (None: absent, which is Off); the CRD's defaults for fields left out."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise SpecError(f"spec.prediction: Invalid value: {value!r}: must be an object")
    mode = value.get("mode")
    try:
        parsed = PredictionMode(mode) if mode is not None else PredictionMode.OFF
    except ValueError:
        raise SpecError(f"spec.prediction.mode: Unsupported value: {mode!r}: supported values: "
                        + ", ".join(f'"{m}"' for m in PredictionMode)) from None  # fmt: skip
    periods = value.get("periodsSeconds")
    if periods is None:
        periods = []
    if not isinstance(periods, list):
        raise SpecError(f"spec.prediction.periodsSeconds: Invalid value: {periods!r}: must be a list of integers")
    if len(periods) > MAX_PERIODS:
        raise SpecError(f"spec.prediction.periodsSeconds: Too many: {len(periods)}: must have at most {MAX_PERIODS} "
                        "items")  # fmt: skip
    return PredictionSpec(
        mode=parsed,
        horizon_seconds=_seconds(value.get("horizonSeconds"), "spec.prediction.horizonSeconds", HORIZON_SECONDS,
                                 DEFAULT_HORIZON_SECONDS),
        lookback_seconds=_seconds(value.get("lookbackSeconds"), "spec.prediction.lookbackSeconds", LOOKBACK_SECONDS,
                                  DEFAULT_LOOKBACK_SECONDS),
        periods_seconds=tuple(_seconds(p, f"spec.prediction.periodsSeconds[{i}]", PERIOD_SECONDS)
                              for i, p in enumerate(periods)))


def _scale_to_zero(value: Any) -> ScaleToZero:
    """`spec.scaleToZero` with the CRD's default cooldown when absent; cooldownSeconds within its bounds."""
    if value is None:
        return ScaleToZero(cooldown_seconds=DEFAULT_COOLDOWN_SECONDS)
    if not isinstance(value, Mapping):
        raise SpecError(f"spec.scaleToZero: Invalid value: {value!r}: must be an object")
    cooldown = value.get("cooldownSeconds", DEFAULT_COOLDOWN_SECONDS)  # an explicit null is refused
    return ScaleToZero(cooldown_seconds=_seconds(cooldown, "spec.scaleToZero.cooldownSeconds", COOLDOWN_SECONDS))


def _seconds(value: Any, path: str, bounds: tuple[int, int], default: int | None = None) -> int:
    """The integer field at `path` within the CRD's `bounds` (`default` when absent, if it has one)."""
    if value is None and default is not None:
        return default
    low, high = bounds
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SpecError(f"{path}: Invalid value: {value!r}: must be an integer between {low} and {high}")
    return value


def parse_status(raw: Json, problems: list[str]) -> HpaStatus:
    """The HPA-identical part of status. Entries the algorithm cannot represent (our own Paused
    condition, reasons it does not know, a bad timestamp) are skipped and listed in `problems`."""
    conditions = []
    for i, cond in enumerate(raw.get("conditions") or ()):
        parsed = _condition(cond, f"status.conditions[{i}]", problems)
        if parsed is not None:
            conditions.append(parsed)
    metrics = tuple(_current_metric(m, f"status.currentMetrics[{i}]", problems)
                    for i, m in enumerate(raw.get("currentMetrics") or ()))
    return HpaStatus(current_replicas=_count(raw.get("currentReplicas")),
                     desired_replicas=_count(raw.get("desiredReplicas")),
                     last_scale_time=_time(raw.get("lastScaleTime"), "status.lastScaleTime", problems),
                     current_metrics=metrics, conditions=tuple(conditions))


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _time(value: Any, path: str, problems: list[str]) -> float | None:
    try:
        return parse_time(value)
    except ValueError as err:
        problems.append(f"{path}: {err}")
        return None


def _condition(cond: Any, path: str, problems: list[str]) -> Condition | None:
    if not isinstance(cond, Mapping):
        problems.append(f"{path}: not an object")
        return None
    try:
        kind, reason = ConditionType(str(cond.get("type"))), Reason(str(cond.get("reason")))
    except ValueError:
        return None  # our own condition types (Paused, Preview) and reasons live beside the algorithm's
    return Condition(type=kind, status=cond.get("status") == "True", reason=reason,
                     message=str(cond.get("message") or ""),
                     last_transition_time=_time(cond.get("lastTransitionTime"), f"{path}.lastTransitionTime",
                                                problems))


def _current_metric(entry: Any, path: str, problems: list[str]) -> MetricStatus | None:
    if not isinstance(entry, Mapping) or not entry.get("type"):
        return None
    try:
        source = SourceType(entry["type"])
    except ValueError:
        problems.append(f"{path}.type: unknown metric source type {entry['type']!r}")
        return None
    body = source_body(entry)
    current = body.get("current") or {}
    name = body.get("name") or (body.get("metric") or {}).get("name", "")
    try:
        return MetricStatus(type=source, name=str(name), container=str(body.get("container") or ""),
                            value=_milli(current, "value"), average_value=_milli(current, "averageValue"),
                            average_utilization=current.get("averageUtilization"))
    except QuantityError as err:
        problems.append(f"{path}.current: {err}")
        return None


def _milli(body: Json, key: str) -> int | None:
    return None if body.get(key) is None else Quantity.parse(str(body[key])).milli_value()


def restore_history(raw: Any, problems: list[str]) -> tuple[ScaleHistory | None, float | None]:
    """`status.scaleHistory` (written by status.history_checkpoint) -> (history, savedAt)."""
    if raw is None:
        return None, None
    if not isinstance(raw, Mapping):
        problems.append("status.scaleHistory: not an object; starting without history")
        return None, None
    try:
        saved_at = parse_time(raw.get("savedAt"))
        history = ScaleHistory.from_dict({key: raw.get(key) or () for key in
                                          ("recommendations", "scaleUpEvents", "scaleDownEvents", "idleSince")})
    except ValueError as err:
        problems.append(f"status.scaleHistory: {err}; starting without history")
        return None, None
    return history, saved_at
