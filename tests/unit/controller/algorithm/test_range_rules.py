"""The range rules: which current counts skip the metrics, and what `decide` makes of them."""

from __future__ import annotations

from controller.algorithm import ControllerConfig, Decision, Outcome, decide
from controller.algorithm.conditions import ConditionType, Reason
from controller.algorithm.decision import Stage
from controller.algorithm.range_rules import needs_metrics, range_rule
from controller.algorithm.spec import AutoscalerSpec, ScaleTarget, SyncInput


def _decide(spec: AutoscalerSpec, current: int) -> Decision:
    scale = ScaleTarget(spec_replicas=current, status_replicas=current)
    return decide(SyncInput(spec=spec, scale=scale, now=100.0), ControllerConfig())


def test_a_target_scaled_to_zero_with_a_minimum_disables_scaling_and_writes_nothing() -> None:
    spec = AutoscalerSpec(min_replicas=2, max_replicas=5)
    d = _decide(spec, 0)
    assert d.outcome is Outcome.DISABLED and not d.write and d.desired_replicas == 0
    active = next(cond for cond in d.status.conditions if cond.type is ConditionType.SCALING_ACTIVE)
    assert (active.status, active.reason) == (False, Reason.SCALING_DISABLED)
    assert not needs_metrics(spec, ScaleTarget(spec_replicas=0, status_replicas=0))


def test_zero_with_min_replicas_zero_is_left_to_the_metrics() -> None:
    spec = AutoscalerSpec(min_replicas=0, max_replicas=5)
    assert range_rule(spec, 0) is None
    assert needs_metrics(spec, ScaleTarget(spec_replicas=0, status_replicas=0))


def test_a_count_outside_the_range_jumps_to_the_bound_without_metrics() -> None:
    spec = AutoscalerSpec(min_replicas=2, max_replicas=5)
    above, below = _decide(spec, 9), _decide(spec, 1)
    assert (above.outcome, above.desired_replicas, above.trace.steps[0].stage) == (Outcome.SCALE, 5, Stage.RANGE)
    assert (below.outcome, below.desired_replicas) == (Outcome.SCALE, 2)
    assert "above Spec.MaxReplicas" in above.rescale_reason and "below Spec.MinReplicas" in below.rescale_reason
    assert range_rule(spec, 3) is None and range_rule(spec, 5) is None
