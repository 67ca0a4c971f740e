"""horizontal_test.go reconcile families not ported elsewhere, replayed through `decide`/`complete`
with the same inputs and the upstream answers (desired replicas, whether the scale is written,
the conditions in status order)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from controller.algorithm import Outcome, complete, decide
from controller.algorithm.behavior import Behavior, PolicyType, ScaleHistory, ScalingPolicy, ScalingRules, SelectPolicy
from controller.algorithm.spec import MetricSpec, MetricTarget, SourceType, SyncInput, TargetType
from tests.unit.controller.algorithm.harness import (
    ABLE, ACTIVE, CONFIG, COOL, CPU, HOT, LIMITED, NOW, F, T, conditions, harness_pods, pod_samples, sync,
)  # fmt: skip

OK = [(ABLE, True, "SucceededRescale"), (ACTIVE, True, "ValidMetricFound"), (LIMITED, False, "DesiredWithinRange")]


def cpu(target: int) -> MetricSpec:
    return replace(CPU, target=MetricTarget(type=TargetType.UTILIZATION, average_utilization=target))


def with_limited(reason: str) -> list[tuple[str, bool, str]]:
    return [*OK[:2], (LIMITED, reason != "DesiredWithinRange", reason)]


QPS_PODS = MetricSpec(type=SourceType.PODS, name="qps",
                      target=MetricTarget(type=TargetType.AVERAGE_VALUE, average_value=15000))  # fmt: skip
EMPTY = ScaleHistory()  # upstream `recommendations: []timestampedRecommendation{}`
UP_PERCENT_100 = Behavior(scale_up=ScalingRules(stabilization_window_seconds=30, select_policy=SelectPolicy.MAX, policies=(
    ScalingPolicy(type=PolicyType.PERCENT, value=100, period_seconds=15),)))  # fmt: skip


@pytest.mark.parametrize(
    ("inp", "desired", "expected_conditions"),
    [
        pytest.param(sync(current=3, min_r=2, max_r=5, metrics=(cpu(90),), request=1000, history=EMPTY,
                          observations=(pod_samples(10, 95, 10),)), 2, with_limited("TooFewReplicas"),
                     id="TestMinReplicas"),
        pytest.param(sync(current=3, min_r=0, max_r=5, metrics=(cpu(90),), request=1000, history=EMPTY,
                          observations=(pod_samples(0, 0, 0),)), 0, OK, id="TestZeroMinReplicasDesiredZero"),
        pytest.param(sync(current=3, min_r=2, max_r=5, metrics=(cpu(90),), request=1000, history=EMPTY,
                          observations=(pod_samples(0, 0, 0),)), 2, with_limited("TooFewReplicas"),
                     id="TestMinReplicasDesiredZero"),
        pytest.param(sync(current=3, min_r=2, max_r=5, metrics=(cpu(90),), request=1000,
                          observations=(pod_samples(8000, 9500, 1000),)), 5, with_limited("TooManyReplicas"),
                     id="TestMaxReplicas"),
        pytest.param(sync(current=4, min_r=2, max_r=6, metrics=(cpu(100),), request=500, pods=4,
                          observations=(pod_samples(4000, 9500, 3000, 7000, 3200, 2000),)),
                     6, with_limited("TooManyReplicas"), id="TestSuperfluousMetrics: 24 proposed, capped at 6"),
        pytest.param(sync(current=5, min_r=2, max_r=6, metrics=(cpu(50),), request=500, history=EMPTY,
                          behavior=UP_PERCENT_100, observations=(pod_samples(100, 300, 500, 250, 250),)), 3, OK,
                     id="TestScaleDownWithScalingRules: scale-down defaults apply when only scaleUp is set"),
    ],
)  # fmt: skip
def test_reconcile_families(inp: SyncInput, desired: int, expected_conditions: list) -> None:
    d = decide(inp, CONFIG)
    assert d.desired_replicas == desired
    done = complete(d, write_error=None, now=NOW)
    assert done.outcome is Outcome.SCALED
    assert conditions(done) == expected_conditions


def test_scale_up_cm_unready_and_cpu_hot_pods_are_all_counted() -> None:
    """TestScaleUpCMUnreadyandCpuHot inputs with unready, hot pods: a Pods metric still uses all."""
    inp = replace(sync(current=3, min_r=2, max_r=6, metrics=(QPS_PODS,), observations=(pod_samples(50000, 15000, 30000),)),
                  pods=harness_pods(3, readiness=[F, T, F], start=[HOT, COOL, HOT]))  # fmt: skip
    d = decide(inp, CONFIG)
    assert d.trace.steps[0].after == 7 and d.desired_replicas == 6  # ceil(31666/15000 x 3), capped
    assert conditions(complete(d, write_error=None, now=NOW)) == with_limited("TooManyReplicas")


def test_scale_down_one_metric_invalid_blocks_the_scale_down() -> None:
    """TestScaleDownOneMetricInvalid: cpu proposes 3 from 5, an unknown type fails -> no scaling,
    ScalingActive=False/InvalidMetricSourceType, desired stays 5."""
    d = decide(sync(current=5, min_r=2, max_r=6, metrics=(cpu(50), MetricSpec(type="CheddarCheese")), request=500,
                    history=EMPTY, observations=(pod_samples(100, 300, 500, 250, 250),)), CONFIG)  # fmt: skip
    assert (d.outcome, d.desired_replicas, d.status.desired_replicas) == (Outcome.BLOCKED, 5, 5)
    assert conditions(d) == [(ABLE, True, "SucceededGetScale"), (ACTIVE, False, "InvalidMetricSourceType")]
