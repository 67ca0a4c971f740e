"""The replica-range rules: the current counts that metrics do not decide from.

Before any metric is read, a sync holds the target's current count against the spec's range
(upstream `reconcileAutoscaler`, in this order):

* `zero_rule`: the target is at 0 while `minReplicas` > 0: scaling is disabled (`ScalingActive=
  False/ScalingDisabled`, upstream's implicit maintenance mode); nothing is fetched or written;
* `bounds_rule`: the count is above `maxReplicas` or below `minReplicas`: scale straight to that
  bound, without metrics.

`range_rule` applies both; None means the metrics decide (within [min, max], by the limits
stage). `decide` turns a verdict into the decision; `needs_metrics` (the reconciler's cue to skip
fetching) is the same rule, so the two cannot disagree. Scale to zero is not a range rule: with
`minReplicas: 0` the count 0 is in range, the metrics are read, and `zero` (activation, cooldown)
applies to them.

Non-goals: the metric path and its own [min, max] clamp (`behavior`'s limits). Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.algorithm import conditions as c
from controller.algorithm.conditions import Reason
from controller.algorithm.decision import Outcome, Stage, TraceStep
from controller.algorithm.spec import AutoscalerSpec, ScaleTarget

__all__ = ["RangeVerdict", "bounds_rule", "needs_metrics", "range_rule", "zero_rule"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RangeVerdict:
    """What a sync does when the current count is one the metrics do not decide from."""

    outcome: Outcome  # DISABLED (hold, write nothing) or SCALE (to `desired`)
    desired: int
    step: TraceStep  # the decision trace's only step
    rescale_reason: str = ""  # the SuccessfulRescale reason when it scales
    inactive: tuple[Reason, str] | None = None  # ScalingActive=False with this reason and message


def zero_rule(spec: AutoscalerSpec, current: int) -> RangeVerdict | None:
    """The target at 0 replicas with `minReplicas` > 0: someone scaled it to zero on purpose, so
    the autoscaler stands still until it is scaled up again."""
    if current != 0 or spec.min_replicas == 0:
        return None
    step = TraceStep(stage=Stage.DISABLED, before=0, after=0, reason=str(Reason.SCALING_DISABLED))
    return RangeVerdict(outcome=Outcome.DISABLED, desired=0, step=step,
                        inactive=(Reason.SCALING_DISABLED, c.MSG_SCALING_DISABLED))  # fmt: skip


def bounds_rule(spec: AutoscalerSpec, current: int) -> RangeVerdict | None:
    """The count above `maxReplicas` or below `minReplicas`: that bound, whatever the metrics say."""
    if current > spec.max_replicas:
        desired, reason = spec.max_replicas, c.RESCALE_ABOVE_MAX
    elif current < spec.min_replicas:
        desired, reason = spec.min_replicas, c.RESCALE_BELOW_MIN
    else:
        return None
    step = TraceStep(stage=Stage.RANGE, before=current, after=desired, reason=reason)
    return RangeVerdict(outcome=Outcome.SCALE, desired=desired, step=step, rescale_reason=reason)


def range_rule(spec: AutoscalerSpec, current: int) -> RangeVerdict | None:
    """The first of the range rules that applies to `current` (None: the metrics decide)."""
    return zero_rule(spec, current) or bounds_rule(spec, current)


def needs_metrics(spec: AutoscalerSpec, scale: ScaleTarget) -> bool:
    """Whether this sync reads metrics at all (the caller can skip fetching otherwise)."""
    return range_rule(spec, scale.spec_replicas) is None
