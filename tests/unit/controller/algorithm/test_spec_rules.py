"""The ten rules a reimplementation most likely gets wrong (hpa-algorithm.md section 10), one
table row each where the other test files do not already pin the rule down.

Every expected value is what upstream computes for the same inputs (derived from
replica_calculator.go / horizontal.go, or the upstream test named in the id). Fixtures follow
the replica_calculator_test.go harness: two containers per pod, each requesting the given amount.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from controller.algorithm import behavior as bh
from controller.algorithm import decide, sources
from controller.algorithm.behavior import Behavior, Recommendation, ScaleHistory, ScalingRules
from controller.algorithm.conditions import Reason
from controller.algorithm.decision import Outcome
from controller.algorithm.ratio import Tolerances
from controller.algorithm.sources import Why
from controller.algorithm.spec import FetchFailure
from tests.unit.controller.algorithm.harness import (
    CONFIG, COOL, CPU, HOT, NOW, QPS_EXTERNAL, READINESS, F, T, conditions, harness_metrics, harness_pods, pod_samples,
    sync,
)  # fmt: skip

TOL = Tolerances()


def utilization(current: int, requests: list[int], levels: list[int], target: int, *, factor: int = 2,
                tol: Tolerances = TOL) -> sources.Proposal:  # fmt: skip
    return sources.resource_utilization(
        current=current, target_utilization=target, metrics=harness_metrics(levels, per_pod_factor=factor),
        pods=harness_pods(len(requests), requests=requests), resource="cpu", tolerances=tol, now=NOW,
        readiness=READINESS,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("current", "requests", "levels", "target", "factor", "tol", "expected"),
    [
        pytest.param(5, [500] * 3, [1000] * 3, 100, 2, TOL, (6, 200, Why.SCALED_READY),
                     id="rule 1: the fast path multiplies the ready pods with metrics (3), not current (5)"),
        pytest.param(3, [500] * 3, [1000, 1000, 999], 90, 1, TOL, (3, 99, Why.WITHIN_TOLERANCE),
                     id="rule 2: 2999/3000 is truncated to 99% before the ratio: 99/90 = 1.1 stays"),
        pytest.param(4, [1000] * 4, [400, 95], 100, 2, TOL, (3, 24, Why.REBALANCED),
                     id="rule 2: reported utilization comes from the first pass (TestReplicaCalcMissingMetrics)"),
        pytest.param(4, [1000] * 4, [1500], 100, 2, TOL, (4, 150, Why.DIRECTION_REVERSED),
                     id="rule 3: missing pods at 0 turn a scale-up into a scale-down: keep current"),
        pytest.param(3, [500] * 3, [900] * 3, 100, 1, TOL, (3, 90, Why.WITHIN_TOLERANCE),
                     id="rule 5: the band is inclusive: ratio exactly 0.9 stays"),
        pytest.param(3, [900, 1000, 1100], [660, 640, 650], 100, 2, Tolerances(scale_down=0.34), (2, 65, Why.SCALED_READY),
                     id="rule 5: outside a 34% scale-down tolerance (TestReplicaCalcConfigurableTolerance)"),
        pytest.param(3, [900, 1000, 1100], [660, 640, 650], 100, 2, Tolerances(scale_down=0.36), (3, 65, Why.WITHIN_TOLERANCE),
                     id="rule 5: within a 36% scale-down tolerance (TestReplicaCalcConfigurableTolerance)"),
    ],
)  # fmt: skip
def test_utilization_rules(current: int, requests: list[int], levels: list[int], target: int, factor: int,
                           tol: Tolerances, expected: tuple[int, int, Why]) -> None:  # fmt: skip
    p = utilization(current, requests, levels, target, factor=factor, tol=tol)
    assert (p.replicas, p.utilization, p.why) == expected


@pytest.mark.parametrize(
    ("resource", "expected"),
    [
        pytest.param("", (6, 30000), id="rule 4: Pods metrics ignore readiness: the hot unready pod counts"),
        pytest.param("cpu", (4, 30000), id="rule 4: a cpu AverageValue target applies the CPU readiness rules"),
    ],
)
def test_plain_average_readiness_depends_on_the_resource(resource: str, expected: tuple[int, int]) -> None:
    """TestReplicaCalcScaleUpCMUnreadyHotCpuNoLessScale inputs, once as a Pods metric and once
    as a cpu AverageValue: only cpu sets the hot, unready pod aside (then zero-filled)."""
    pods = harness_pods(3, readiness=[T, T, F], start=[COOL, COOL, HOT])
    p = sources.plain_average(current=3, target=15000, metrics=harness_metrics([50000, 10000, 30000], per_pod_factor=1),
                              pods=pods, resource=resource, tolerances=TOL, now=NOW, readiness=READINESS)  # fmt: skip
    assert (p.replicas, p.usage) == expected


def test_plain_average_is_truncated_before_the_ratio() -> None:
    """Rule 2: 3302/3 = 1100.67 is truncated to 1100, so 1100/1000 = 1.1 is within tolerance."""
    p = sources.plain_average(current=3, target=1000, metrics=harness_metrics([1100, 1100, 1102], per_pod_factor=1),
                              pods=harness_pods(3), resource="", tolerances=TOL, now=NOW, readiness=READINESS)  # fmt: skip
    assert (p.replicas, p.usage) == (3, 1100)


@pytest.mark.parametrize(
    ("status_replicas", "usage", "expected"),
    [
        pytest.param(5, 5000, (5, 1000), id="rule 1: within tolerance of target x status replicas: status replicas"),
        pytest.param(5, 8000, (8, 1600), id="rule 1: AverageValue proposes ceil(total/target), no pod count"),
    ],
)
def test_average_value_targets_count_no_pods(status_replicas: int, usage: int, expected: tuple[int, int]) -> None:
    p = sources.per_pod_target(status_replicas=status_replicas, target=1000, usage=usage, tolerances=TOL)
    assert (p.replicas, p.usage) == expected


def test_rule6_an_invalid_metric_with_a_proposal_equal_to_spec_replicas_does_not_block() -> None:
    """computeReplicasForMetrics blocks only when the valid maximum is *below* spec replicas."""
    d = decide(sync(metrics=(CPU, QPS_EXTERNAL), observations=(pod_samples(300, 300, 300), FetchFailure(message="x")),
                    history=ScaleHistory()), CONFIG)  # fmt: skip
    assert (d.outcome, d.desired_replicas) == (Outcome.NO_CHANGE, 3)
    assert conditions(d)[1] == ("ScalingActive", True, "ValidMetricFound")
    assert d.error is not None and d.error.startswith("invalid metrics (1 invalid out of 2)")


RECENT_8 = (Recommendation(replicas=8, timestamp=NOW - 60),)


def test_rule8_legacy_stabilization_is_not_bounded_by_current() -> None:
    """The legacy max over the window can exceed current while metrics say "down": upstream then
    scales *up* to the recent recommendation, with the reason decided before normalization."""
    assert bh.stabilize_legacy(RECENT_8, prenormalized=3, now=NOW, window=300).replicas == 8
    d = decide(sync(current=5, min_r=1, max_r=10, observations=(pod_samples(100, 100, 100, 100, 100),),
                    history=ScaleHistory(recommendations=RECENT_8)), CONFIG)  # fmt: skip
    assert (d.outcome, d.desired_replicas, d.rescale_reason) == (Outcome.SCALE, 8, "All metrics below target")


def test_rule8_behavior_stabilization_never_reverses_the_direction() -> None:
    st = bh.stabilize_with_behavior(RECENT_8, prenormalized=3, current=5, now=NOW, up_window=0, down_window=300)
    assert (st.replicas, st.reason) == (5, Reason.SCALE_DOWN_STABILIZED)


PERCENT_150 = ScalingRules(select_policy=bh.SelectPolicy.MAX, stabilization_window_seconds=0,
                           policies=(bh.ScalingPolicy(type=bh.PolicyType.PERCENT, value=150, period_seconds=15),))  # fmt: skip


def test_rule9_scale_down_percent_truncates_toward_zero_and_may_go_negative() -> None:
    """int32(3 x (1 - 1.5)) = int32(-1.5) = -1 (truncation, not floor)."""
    assert bh.scale_down_limit(3, ScaleHistory(), PERCENT_150, now=NOW) == -1
    limited = bh.rate_limit_with_behavior(
        current=10, desired=0, min_replicas=1, max_replicas=20, history=ScaleHistory(), now=NOW,
        behavior=bh.effective_behavior(Behavior(scale_down=PERCENT_150), downscale_stabilization=300),
    )  # fmt: skip
    assert (limited.replicas, limited.reason) == (1, Reason.TOO_FEW_REPLICAS)


@pytest.mark.parametrize(
    ("behavior", "expected"),
    [
        pytest.param(None, (4, "ScaleUpLimit"), id="rule 10: legacy path caps a scale-up at max(2 x 2, 4)"),
        pytest.param(Behavior(scale_up=ScalingRules(tolerance=0.1)), (6, "ScaleUpLimit"),
                     id="rule 10: a tolerance alone switches to the behavior defaults: max(2 + 4, 2 x 2)"),
    ],
)  # fmt: skip
def test_rule10_any_behavior_field_switches_to_the_behavior_path(behavior: Behavior | None, expected: tuple) -> None:
    config = replace(CONFIG, scale_up_limit_factor=2.0)  # production value
    d = decide(sync(current=2, min_r=1, max_r=20, behavior=behavior, observations=(pod_samples(1500, 1500),)), config)
    assert d.trace.steps[0].after == 10  # metrics alone ask for ceil(5 x 2)
    assert (d.desired_replicas, conditions(d)[2][2]) == expected
