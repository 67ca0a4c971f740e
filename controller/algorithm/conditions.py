"""Condition types, reasons, event reasons and the exact upstream messages.

The HPA controller reports what it did through three status conditions (AbleToScale,
ScalingActive, ScalingLimited) and through events. Users and tooling match on the reason strings,
so every reason upstream uses (`pkg/controller/podautoscaler/horizontal.go`) is spelled here, once;
no other module of the controller types a reason literal.

Also here: the immutable `Condition` value and `set_condition`, which reproduces upstream's
list-position-preserving update (a condition keeps its place; a new type is appended; the
transition time changes only when the status flips).

Non-goals: rendering to Kubernetes JSON (the status writer does it), deciding anything.
Pure: no I/O, no clock reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from controller.algorithm.values import quick_init


class ConditionType(StrEnum):
    ABLE_TO_SCALE = "AbleToScale"
    SCALING_ACTIVE = "ScalingActive"
    SCALING_LIMITED = "ScalingLimited"


class Reason(StrEnum):
    """Every condition reason the upstream controller sets (autoscaling/v2 HPA status)."""

    # AbleToScale
    FAILED_GET_SCALE = "FailedGetScale"
    SUCCEEDED_GET_SCALE = "SucceededGetScale"
    READY_FOR_NEW_SCALE = "ReadyForNewScale"
    SCALE_DOWN_STABILIZED = "ScaleDownStabilized"
    SCALE_UP_STABILIZED = "ScaleUpStabilized"
    SUCCEEDED_RESCALE = "SucceededRescale"
    FAILED_UPDATE_SCALE = "FailedUpdateScale"
    # ScalingActive
    VALID_METRIC_FOUND = "ValidMetricFound"
    SCALING_DISABLED = "ScalingDisabled"
    INVALID_SELECTOR = "InvalidSelector"
    AMBIGUOUS_SELECTOR = "AmbiguousSelector"
    FAILED_GET_RESOURCE_METRIC = "FailedGetResourceMetric"
    FAILED_GET_CONTAINER_RESOURCE_METRIC = "FailedGetContainerResourceMetric"
    FAILED_GET_PODS_METRIC = "FailedGetPodsMetric"
    FAILED_GET_OBJECT_METRIC = "FailedGetObjectMetric"
    FAILED_GET_EXTERNAL_METRIC = "FailedGetExternalMetric"
    INVALID_METRIC_SOURCE_TYPE = "InvalidMetricSourceType"
    # ScalingLimited
    DESIRED_WITHIN_RANGE = "DesiredWithinRange"
    TOO_MANY_REPLICAS = "TooManyReplicas"
    TOO_FEW_REPLICAS = "TooFewReplicas"
    SCALE_UP_LIMIT = "ScaleUpLimit"
    SCALE_DOWN_LIMIT = "ScaleDownLimit"
    # Not upstream: ScalingActive=False while another autoscaler scales the same target (set by
    # the controller runtime, never by the algorithm). Spelled here so a status that carries it
    # reads back with its ScalingActive condition in place and its transition time kept.
    CONFLICTING_AUTOSCALER = "ConflictingAutoscaler"
    # Not upstream: ScalingActive=False while the target is at 0 by the scale-to-zero rule (minReplicas 0:
    # every activation metric at or below its activation value; `controller.algorithm.zero`).
    SCALED_TO_ZERO = "ScaledToZero"


class PredictionReason(StrEnum):
    """Reasons of our `PredictionActive` condition (spec.prediction; not upstream). The status
    writer sets it from the decision's prediction trace; the algorithm never does."""

    FORECAST_TRUSTED = "ForecastTrusted"  # True: Active, a trusted forecast raises replicas when it asks for more
    FORECAST_ONLY = "ForecastOnly"  # mode ForecastOnly: forecast and report, never act
    INSUFFICIENT_HISTORY = "InsufficientHistory"  # some history, less than a forecast needs
    HISTORY_UNAVAILABLE = "HistoryUnavailable"  # no history could be read
    NO_FORECAST = "NoForecast"  # enough history, no forecast from it (no cycle, no recent sample)
    FORECAST_FALLBACK = "ForecastFallback"  # the accuracy guard stopped trusting the forecast
    NOT_EVALUATED = "NotEvaluated"  # the sync read no metrics (scale unreadable, selector problem, ...)


class EventType(StrEnum):
    NORMAL = "Normal"
    WARNING = "Warning"


class EventReason(StrEnum):
    """Event reasons. Per-metric failures reuse the condition reason (FailedGet*Metric)."""

    FAILED_GET_SCALE = "FailedGetScale"
    SELECTOR_REQUIRED = "SelectorRequired"
    INVALID_SELECTOR = "InvalidSelector"
    AMBIGUOUS_SELECTOR = "AmbiguousSelector"
    FAILED_GET_RESOURCE_METRIC = "FailedGetResourceMetric"
    FAILED_GET_CONTAINER_RESOURCE_METRIC = "FailedGetContainerResourceMetric"
    FAILED_GET_PODS_METRIC = "FailedGetPodsMetric"
    FAILED_GET_OBJECT_METRIC = "FailedGetObjectMetric"
    FAILED_GET_EXTERNAL_METRIC = "FailedGetExternalMetric"
    INVALID_METRIC_SOURCE_TYPE = "InvalidMetricSourceType"
    FAILED_COMPUTE_METRICS_REPLICAS = "FailedComputeMetricsReplicas"
    FAILED_RESCALE = "FailedRescale"
    SUCCESSFUL_RESCALE = "SuccessfulRescale"
    FAILED_UPDATE_STATUS = "FailedUpdateStatus"
    # Not upstream: the controller runtime's additions (design §8.4); the algorithm never emits them.
    PAUSED = "Paused"
    UNPAUSED = "Unpaused"
    STATE_RESTORED = "StateRestored"
    CONFLICTING_AUTOSCALER = "ConflictingAutoscaler"
    PREVIEW_RESCALE = "PreviewRescale"
    # spec.prediction's accuracy guard stopped (Warning) or resumed (Normal) trusting the forecast.
    FORECAST_FALLBACK = "ForecastFallback"
    FORECAST_RECOVERED = "ForecastRecovered"
    # Scale to zero (`controller.algorithm.zero`): going to 0 after the cooldown, and waking from 0.
    SCALED_TO_ZERO = "ScaledToZero"
    WOKEN_FROM_ZERO = "WokenFromZero"
    # Also the reason of AbleToScale/ScalingActive=False on a stored spec that breaks an HPA
    # validation rule (upstream cannot meet one: its admission refuses it). Deliberately not a
    # `Reason`: a status carrying it reads back without those two conditions, so the first sync
    # after the spec is fixed sets them afresh instead of keeping a stale InvalidSpec.
    INVALID_SPEC = "InvalidSpec"


# Condition messages, worded as upstream words them (users grep for them).
MSG_SUCCEEDED_GET_SCALE = "the HPA controller was able to get the target's current scale"
MSG_SCALING_DISABLED = "scaling is disabled since the replica count of the target is zero"
MSG_MISSING_SELECTOR = "the HPA target's scale is missing a selector"
MSG_READY_FOR_NEW_SCALE = "recommended size matches current size"
MSG_SCALE_DOWN_STABILIZED = (
    "recent recommendations were higher than current one, applying the highest recent recommendation"
)
MSG_SCALE_UP_STABILIZED = (
    "recent recommendations were lower than current one, applying the lowest recent recommendation"
)
MSG_DESIRED_WITHIN_RANGE = "the desired count is within the acceptable range"
MSG_SCALE_UP_LIMIT = "the desired replica count is increasing faster than the maximum scale rate"
MSG_SCALE_DOWN_LIMIT = "the desired replica count is decreasing faster than the maximum scale rate"
MSG_TOO_MANY_REPLICAS = "the desired replica count is more than the maximum replica count"
MSG_TOO_FEW_REPLICAS = "the desired replica count is less than the minimum replica count"
MSG_SELECTOR_REQUIRED = "selector is required"
MSG_INVALID_SPEC_NOT_SCALED = "the controller neither reads nor writes the target's scale until the spec is fixed"
RESCALE_ABOVE_MAX = "Current number of replicas above Spec.MaxReplicas"
RESCALE_BELOW_MIN = "Current number of replicas below Spec.MinReplicas"
RESCALE_ALL_BELOW = "All metrics below target"
# Our addition: a rescale the forecast (spec.prediction, Active) asked for before the load arrived.
RESCALE_FORECAST_ABOVE = "forecast above target"

LIMIT_MESSAGES: dict[Reason, str] = {
    Reason.DESIRED_WITHIN_RANGE: MSG_DESIRED_WITHIN_RANGE,
    Reason.SCALE_UP_LIMIT: MSG_SCALE_UP_LIMIT,
    Reason.SCALE_DOWN_LIMIT: MSG_SCALE_DOWN_LIMIT,
    Reason.TOO_MANY_REPLICAS: MSG_TOO_MANY_REPLICAS,
    Reason.TOO_FEW_REPLICAS: MSG_TOO_FEW_REPLICAS,
}


def msg_failed_get_scale(error: str) -> str:
    return f"the HPA controller was unable to get the target's current scale: {error}"


def msg_valid_metric_found(metric_name: str) -> str:
    return f"the HPA was able to successfully calculate a replica count from {metric_name}"


def msg_unable_to_compute(error: str) -> str:
    return f"the HPA was unable to compute the replica count: {error}"


def msg_succeeded_rescale(replicas: int) -> str:
    return f"the HPA controller was able to update the target scale to {replicas}"


def msg_failed_update_scale(error: str) -> str:
    return f"the HPA controller was unable to update the target scale: {error}"


def msg_invalid_selector(parse_error: str) -> str:
    return f"couldn't convert selector into a corresponding internal selector object: {parse_error}"


def msg_ambiguous_selector(selector: str, hpas: tuple[str, ...]) -> str:
    return f"pods by selector {selector} are controlled by multiple HPAs: [{' '.join(hpas)}]"


def event_rescale(replicas: int, reason: str) -> str:
    return f"New size: {replicas}; reason: {reason}"


def event_failed_rescale(replicas: int, reason: str, error: str) -> str:
    return f"New size: {replicas}; reason: {reason}; error: {error}"


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Condition:
    """One HPA status condition. `status` is True/False; times are seconds (caller's epoch)."""

    type: ConditionType
    status: bool
    reason: Reason
    message: str
    last_transition_time: float | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "type": str(self.type),
            "status": "True" if self.status else "False",
            "reason": str(self.reason),
            "message": self.message,
            "lastTransitionTime": self.last_transition_time,
        }


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    type: EventType
    reason: EventReason
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"type": str(self.type), "reason": str(self.reason), "message": self.message}


def set_condition(
    conditions: tuple[Condition, ...], new: Condition, *, now: float
) -> tuple[Condition, ...]:
    """Upstream `setConditionInList`: replace in place, or append; keep the transition time
    unless the status flips."""
    return put_condition(conditions, new.type, new.status, new.reason, new.message, now=now)


def put_condition(
    conditions: tuple[Condition, ...], kind: ConditionType, status: bool, reason: Reason, message: str,
    *, now: float,
) -> tuple[Condition, ...]:  # fmt: skip
    """`set_condition` without building the new condition first. An entry that already says the
    same thing is kept as it is (the list is returned unchanged): most syncs change nothing."""
    for i, old in enumerate(conditions):
        if old.type == kind:
            if old.status == status:
                if old.reason is reason and old.message == message and old.status is status:
                    return conditions
                when = old.last_transition_time
            else:
                when = now
            new = Condition(type=kind, status=status, reason=reason, message=message, last_transition_time=when)
            return (*conditions[:i], new, *conditions[i + 1 :])
    return (*conditions, Condition(type=kind, status=status, reason=reason, message=message,
                                   last_transition_time=now))  # fmt: skip


def condition_key(conditions: tuple[Condition, ...]) -> tuple[tuple[str, bool, str, str], ...]:
    """What makes two condition lists semantically different (times follow status flips)."""
    return tuple((str(c.type), c.status, str(c.reason), c.message) for c in conditions)
