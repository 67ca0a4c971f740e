"""Normalization of a metric proposal: stabilization windows, rate limits, min/max.

Two paths, as upstream (`horizontal.go`):

* legacy (`spec.behavior` is nil): downscale stabilization = max over the recommendations in the
  window (not bounded by current), then `convert_with_rules`: min/max and the scale-up limit
  `max(factor x current, minimum)`; no scale-down rate limit;
* behavior: stabilization clamps current into [min(up-window recs, desired), max(down-window
  recs, desired)] so the direction never reverses; then the Pods/Percent policies over
  `periodSeconds`, counted from recorded scale events, with selectPolicy Max/Min/Disabled.

All state that outlives a sync lives in the immutable `ScaleHistory`; functions take it and return
a new one: `(history, ...) -> (result, new_history)`. A sample is inside a window of W seconds iff
`timestamp > now - W` (strict, so a window of 0 holds nothing, not even this pass's sample).
Both paths overwrite the *last* stale entry instead of pruning, as upstream.

Non-goals: where history is stored (the reconcile layer owns that). Pure: no I/O, no clock reads.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from controller.algorithm import conditions as c
from controller.algorithm.conditions import Reason
from controller.algorithm.ratio import MAX_INT32, trunc_int32
from controller.algorithm.values import quick_init


class PolicyType(StrEnum):
    PODS = "Pods"
    PERCENT = "Percent"


class SelectPolicy(StrEnum):
    MAX = "Max"
    MIN = "Min"
    DISABLED = "Disabled"


@dataclass(frozen=True, slots=True, kw_only=True)
class ScalingPolicy:
    type: PolicyType
    value: int
    period_seconds: int


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ScalingRules:
    """`HPAScalingRules`; None fields are unset and get the API defaults."""

    stabilization_window_seconds: int | None = None
    select_policy: SelectPolicy | None = None
    policies: tuple[ScalingPolicy, ...] | None = None
    tolerance: float | None = None


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Behavior:
    scale_up: ScalingRules | None = None
    scale_down: ScalingRules | None = None


DEFAULT_SCALE_UP_POLICIES = (
    ScalingPolicy(type=PolicyType.PODS, value=4, period_seconds=15),
    ScalingPolicy(type=PolicyType.PERCENT, value=100, period_seconds=15),
)
DEFAULT_SCALE_DOWN_POLICIES = (ScalingPolicy(type=PolicyType.PERCENT, value=100, period_seconds=15),)


def effective_behavior(behavior: Behavior, *, downscale_stabilization: int) -> Behavior:
    """API defaulting merged field by field (`GenerateHPAScale{Up,Down}Rules`), plus the
    controller filling an unset scale-down window from its flag. Rules that need no defaulting
    are kept as they are (this runs on every sync of an autoscaler with a behavior)."""
    up = _effective_rules(behavior.scale_up, 0, DEFAULT_SCALE_UP_POLICIES)
    down = _effective_rules(behavior.scale_down, downscale_stabilization, DEFAULT_SCALE_DOWN_POLICIES)
    if up is behavior.scale_up and down is behavior.scale_down:
        return behavior
    return Behavior(scale_up=up, scale_down=down)


_DEFAULT_SCALE_UP = ScalingRules(stabilization_window_seconds=0, select_policy=SelectPolicy.MAX,
                                 policies=DEFAULT_SCALE_UP_POLICIES)  # fmt: skip


def _effective_rules(
    rules: ScalingRules | None, window: int, policies: tuple[ScalingPolicy, ...]
) -> ScalingRules:
    if rules is None:
        if policies is DEFAULT_SCALE_UP_POLICIES and window == 0:
            return _DEFAULT_SCALE_UP
        return ScalingRules(stabilization_window_seconds=window, select_policy=SelectPolicy.MAX, policies=policies)
    if rules.stabilization_window_seconds is not None and rules.select_policy and rules.policies is not None:
        return rules  # nothing to default
    return ScalingRules(
        stabilization_window_seconds=(
            window if rules.stabilization_window_seconds is None else rules.stabilization_window_seconds
        ),
        select_policy=rules.select_policy or SelectPolicy.MAX,
        policies=policies if rules.policies is None else rules.policies,
        tolerance=rules.tolerance,
    )


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Recommendation:
    replicas: int
    timestamp: float


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ScaleEvent:
    replica_change: int
    timestamp: float
    outdated: bool = False


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ScaleHistory:
    """Per-autoscaler memory across syncs (upstream keeps three maps in the controller)."""

    recommendations: tuple[Recommendation, ...] = ()
    scale_up_events: tuple[ScaleEvent, ...] = ()
    scale_down_events: tuple[ScaleEvent, ...] = ()
    # Scale to zero: when every activation metric was last seen going idle (`controller.algorithm.zero`).
    idle_since: float | None = None

    def with_recommendations(self, recs: tuple[Recommendation, ...]) -> ScaleHistory:
        return ScaleHistory(recommendations=recs, scale_up_events=self.scale_up_events,
                            scale_down_events=self.scale_down_events, idle_since=self.idle_since)  # fmt: skip

    def with_idle_since(self, idle_since: float | None) -> ScaleHistory:
        if idle_since == self.idle_since:
            return self
        return ScaleHistory(recommendations=self.recommendations, scale_up_events=self.scale_up_events,
                            scale_down_events=self.scale_down_events, idle_since=idle_since)  # fmt: skip

    def to_dict(self) -> dict[str, list[list[float | bool]]]:
        """Compact JSON form, e.g. to persist history across controller restarts."""
        return {
            "recommendations": [[r.replicas, r.timestamp] for r in self.recommendations],
            "scaleUpEvents": [[e.replica_change, e.timestamp, e.outdated] for e in self.scale_up_events],
            "scaleDownEvents": [
                [e.replica_change, e.timestamp, e.outdated] for e in self.scale_down_events
            ],
            **({} if self.idle_since is None else {"idleSince": [[self.idle_since]]}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Sequence[Sequence[float | bool]]]) -> ScaleHistory:
        """Inverse of `to_dict`; raises ValueError naming the field on malformed data."""
        try:
            return cls(
                recommendations=tuple(Recommendation(replicas=int(r), timestamp=float(t))
                                      for r, t in data.get("recommendations", ())),
                scale_up_events=_events_from(data.get("scaleUpEvents", ())),
                scale_down_events=_events_from(data.get("scaleDownEvents", ())),
                idle_since=next((float(row[0]) for row in data.get("idleSince") or ()), None),
            )  # fmt: skip
        except (TypeError, ValueError) as e:
            raise ValueError(f"malformed scale history: {e}") from None


def _events_from(rows: Sequence[Sequence[float | bool]]) -> tuple[ScaleEvent, ...]:
    return tuple(ScaleEvent(replica_change=int(c), timestamp=float(t), outdated=bool(o)) for c, t, o in rows)


def _inside(timestamp: float, now: float, window: float) -> bool:
    return timestamp > now - window


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Stabilized:
    replicas: int
    reason: Reason  # READY_FOR_NEW_SCALE, SCALE_DOWN_STABILIZED or SCALE_UP_STABILIZED
    message: str
    recommendations: tuple[Recommendation, ...]  # the log after recording this pass
    winner: Recommendation | None = None  # the recorded recommendation that set the result


def _record(
    recs: tuple[Recommendation, ...], old_index: int | None, new: Recommendation
) -> tuple[Recommendation, ...]:
    if old_index is None:
        return (*recs, new)
    return (*recs[:old_index], new, *recs[old_index + 1 :])


def stabilize_legacy(
    recs: tuple[Recommendation, ...], *, prenormalized: int, now: float, window: float
) -> Stabilized:
    """Upstream `stabilizeRecommendation`: the max over the window, any direction."""
    best = prenormalized
    winner = None
    old_index = None
    cutoff = now - window  # see _inside: strict windows
    for i, rec in enumerate(recs):
        if not rec.timestamp > cutoff:
            old_index = i
        elif rec.replicas > best:
            best, winner = rec.replicas, rec
    new_recs = _record(recs, old_index, Recommendation(replicas=prenormalized, timestamp=now))
    if best != prenormalized:
        return Stabilized(replicas=best, reason=Reason.SCALE_DOWN_STABILIZED,
                          message=c.MSG_SCALE_DOWN_STABILIZED, recommendations=new_recs,
                          winner=winner)  # fmt: skip
    return Stabilized(replicas=best, reason=Reason.READY_FOR_NEW_SCALE,
                      message=c.MSG_READY_FOR_NEW_SCALE, recommendations=new_recs)  # fmt: skip


def stabilize_with_behavior(
    recs: tuple[Recommendation, ...],
    *,
    prenormalized: int,
    current: int,
    now: float,
    up_window: float,
    down_window: float,
) -> Stabilized:
    """Upstream `stabilizeRecommendationWithBehaviors`: clamp current into the window bounds."""
    up = prenormalized
    down = prenormalized
    up_winner = down_winner = None
    old_index = None
    up_cutoff, down_cutoff = now - up_window, now - down_window
    for i, rec in enumerate(recs):
        t = rec.timestamp
        in_up = t > up_cutoff  # see _inside: strict windows
        in_down = t > down_cutoff
        if in_up and rec.replicas < up:
            up, up_winner = rec.replicas, rec
        if in_down and rec.replicas > down:
            down, down_winner = rec.replicas, rec
        if not in_up and not in_down:
            old_index = i
    result = current
    winner = None
    if result < up:
        result, winner = up, up_winner
    if result > down:
        result, winner = down, down_winner
    new_recs = _record(recs, old_index, Recommendation(replicas=prenormalized, timestamp=now))
    if result == prenormalized:
        return Stabilized(replicas=result, reason=Reason.READY_FOR_NEW_SCALE,
                          message=c.MSG_READY_FOR_NEW_SCALE, recommendations=new_recs)  # fmt: skip
    if prenormalized >= current:
        reason, message = Reason.SCALE_UP_STABILIZED, c.MSG_SCALE_UP_STABILIZED
    else:
        reason, message = Reason.SCALE_DOWN_STABILIZED, c.MSG_SCALE_DOWN_STABILIZED
    return Stabilized(replicas=result, reason=reason, message=message, recommendations=new_recs,
                      winner=winner)  # fmt: skip


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Limited:
    replicas: int
    reason: Reason  # DESIRED_WITHIN_RANGE or the limiting reason
    message: str
    limit: int | None = None  # the rate limit that applied, if any


def _limited(replicas: int, reason: Reason, limit: int | None = None) -> Limited:
    return Limited(replicas=replicas, reason=reason, message=c.LIMIT_MESSAGES[reason], limit=limit)


def convert_with_rules(
    *, current: int, desired: int, min_replicas: int, max_replicas: int,
    scale_up_limit_factor: float = 2.0, scale_up_limit_minimum: float = 4.0,
) -> Limited:  # fmt: skip
    """Upstream `convertDesiredReplicasWithRules` (legacy path)."""
    scale_up_limit = trunc_int32(max(scale_up_limit_factor * current, scale_up_limit_minimum))
    if max_replicas > scale_up_limit:
        maximum, reason = scale_up_limit, Reason.SCALE_UP_LIMIT
    else:
        maximum, reason = max_replicas, Reason.TOO_MANY_REPLICAS
    if desired < min_replicas:
        return _limited(min_replicas, Reason.TOO_FEW_REPLICAS)
    if desired > maximum:
        return _limited(maximum, reason, scale_up_limit)
    return _limited(desired, Reason.DESIRED_WITHIN_RANGE)


def replicas_change_in_period(events: tuple[ScaleEvent, ...], *, now: float, period: float) -> int:
    """Upstream `getReplicasChangePerPeriod`: events strictly inside the period."""
    if not events:
        return 0
    cutoff = now - period  # see _inside: strict windows
    return sum([e.replica_change for e in events if e.timestamp > cutoff])


def _period_start(current: int, history: ScaleHistory, now: float, period: int) -> int:
    added = replicas_change_in_period(history.scale_up_events, now=now, period=period)
    deleted = replicas_change_in_period(history.scale_down_events, now=now, period=period)
    return current - added + deleted


def scale_up_limit(current: int, history: ScaleHistory, rules: ScalingRules, *, now: float) -> int:
    """Upstream `calculateScaleUpLimitWithScalingRules`: Max = largest, Min = smallest limit."""
    if rules.select_policy is SelectPolicy.DISABLED:
        return current
    pick_min = rules.select_policy is SelectPolicy.MIN
    result = MAX_INT32 if pick_min else -MAX_INT32 - 1
    for policy in rules.policies or ():
        start = _period_start(current, history, now, policy.period_seconds)
        if policy.type is PolicyType.PODS:
            proposed = start + policy.value
        else:  # rounded up so that a small percentage can always add a pod
            proposed = math.ceil(float(start) * (1 + float(policy.value) / 100))
        result = min(result, proposed) if pick_min else max(result, proposed)
    return result


def scale_down_limit(current: int, history: ScaleHistory, rules: ScalingRules, *, now: float) -> int:
    """Upstream `calculateScaleDownLimitWithBehaviors`: Max = the biggest change = the min."""
    if rules.select_policy is SelectPolicy.DISABLED:
        return current
    pick_max = rules.select_policy is SelectPolicy.MIN
    result = -MAX_INT32 - 1 if pick_max else MAX_INT32
    for policy in rules.policies or ():
        start = _period_start(current, history, now, policy.period_seconds)
        if policy.type is PolicyType.PODS:
            proposed = start - policy.value
        else:  # int32(float) truncates toward zero and may go negative
            proposed = trunc_int32(float(start) * (1 - float(policy.value) / 100))
        result = max(result, proposed) if pick_max else min(result, proposed)
    return result


def rate_limit_with_behavior(
    *, current: int, desired: int, min_replicas: int, max_replicas: int,
    behavior: Behavior, history: ScaleHistory, now: float,
) -> Limited:  # fmt: skip
    """Upstream `convertDesiredReplicasWithBehaviorRate`; `behavior` must be effective."""
    assert behavior.scale_up is not None and behavior.scale_down is not None
    if desired > current:
        limit = max(scale_up_limit(current, history, behavior.scale_up, now=now), current)
        if max_replicas > limit:
            maximum, reason = limit, Reason.SCALE_UP_LIMIT
        else:
            maximum, reason = max_replicas, Reason.TOO_MANY_REPLICAS
        if desired > maximum:
            return _limited(maximum, reason, limit)
    elif desired < current:
        limit = min(scale_down_limit(current, history, behavior.scale_down, now=now), current)
        if min_replicas < limit:
            minimum, reason = limit, Reason.SCALE_DOWN_LIMIT
        else:
            minimum, reason = min_replicas, Reason.TOO_FEW_REPLICAS
        if desired < minimum:
            return _limited(minimum, reason, limit)
    return _limited(desired, Reason.DESIRED_WITHIN_RANGE)


def longest_period(rules: ScalingRules | None) -> int:
    if rules is None or not rules.policies:
        return 0
    return max(p.period_seconds for p in rules.policies)


def store_scale_event(
    events: tuple[ScaleEvent, ...], *, change: int, now: float, longest: int
) -> tuple[ScaleEvent, ...]:
    """Upstream `storeScaleEvent` for one direction: mark events older than the longest policy
    period outdated, overwrite the last outdated one with the new event, else append."""
    marked = tuple(
        e if e.outdated or _inside(e.timestamp, now, longest) else replace(e, outdated=True)
        for e in events
    )
    new = ScaleEvent(replica_change=change, timestamp=now)
    last_old = None
    for i, e in enumerate(marked):
        if e.outdated:
            last_old = i
    if last_old is None:
        return (*marked, new)
    return (*marked[:last_old], new, *marked[last_old + 1 :])


def record_scale(
    history: ScaleHistory, *, behavior: Behavior | None, previous: int, new: int, now: float
) -> ScaleHistory:
    """After a successful write: remember the scale event (only with a behavior, as upstream)."""
    if behavior is None or new == previous:
        return history
    if new > previous:
        events = store_scale_event(history.scale_up_events, change=new - previous, now=now,
                                   longest=longest_period(behavior.scale_up))  # fmt: skip
        return ScaleHistory(recommendations=history.recommendations, scale_up_events=events,
                            scale_down_events=history.scale_down_events, idle_since=history.idle_since)  # fmt: skip
    events = store_scale_event(history.scale_down_events, change=previous - new, now=now,
                               longest=longest_period(behavior.scale_down))  # fmt: skip
    return ScaleHistory(recommendations=history.recommendations, scale_up_events=history.scale_up_events,
                        scale_down_events=events, idle_since=history.idle_since)  # fmt: skip
