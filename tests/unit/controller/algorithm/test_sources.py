"""The replica calculator per metric source, with cases ported from upstream
replica_calculator_test.go (same inputs, same answers)."""

from __future__ import annotations

import pytest

from controller.algorithm import sources
from controller.algorithm.errors import MetricError
from controller.algorithm.ratio import Tolerances
from controller.algorithm.sources import Why
from tests.unit.controller.algorithm.harness import (
    COOL, FAILED, HOT, NOW, PENDING, READINESS, RUNNING, F, T, harness_metrics, harness_pods,
)  # fmt: skip

MAX64, MAX32 = 2**63 - 1, 2**31 - 1
TOL = Tolerances()
ONE_CPU = 1000


def utilization(current: int, requests: list[int], levels: list[int], target: int, **pods_kw: object) -> sources.Proposal:
    names = pods_kw.pop("names", ())
    return sources.resource_utilization(
        current=current, target_utilization=target,
        metrics=harness_metrics(levels, names=names),  # type: ignore[arg-type]
        pods=harness_pods(current, requests=requests, **pods_kw),  # type: ignore[arg-type]
        resource="cpu", tolerances=TOL, now=NOW, readiness=READINESS,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("current", "requests", "levels", "target", "pods_kw", "expected"),
    [
        pytest.param(3, [ONE_CPU] * 3, [300, 500, 700], 30, {}, (5, 50, 1000), id="TestReplicaCalcScaleUp"),
        pytest.param(3, [ONE_CPU] * 3, [300, 500, 700], 30, {"readiness": [F, T, T]}, (4, 60, 1200),
                     id="scale up: an unready pod makes it scale less"),
        pytest.param(3, [ONE_CPU] * 3, [300, 500, 700], 30, {"start": [HOT, COOL, COOL]}, (4, 60, 1200),
                     id="scale up: a hot-CPU pod makes it scale less"),
        pytest.param(3, [ONE_CPU] * 3, [400, 500, 700], 30, {"readiness": [T, F, F]}, (3, 40, 800),
                     id="no scale up: unready pods count as 0% and the rebalanced ratio is within tolerance"),
        pytest.param(3, [ONE_CPU] * 3, [400, 500, 700], 30, {"readiness": [T, F, F], "start": [COOL, HOT, HOT]},
                     (3, 40, 800), id="no scale: hot unready CPU pods"),
        pytest.param(2, [ONE_CPU] * 4, [500, 700], 30,
                     {"readiness": [T, T, F, F], "phase": [RUNNING, RUNNING, FAILED, FAILED]}, (4, 60, 1200),
                     id="scale up ignores Failed pods"),
        pytest.param(2, [ONE_CPU] * 4, [500, 700], 30,
                     {"readiness": [T, T, F, F], "deleted": [False, False, True, True],
                      "phase": [RUNNING] * 4}, (4, 60, 1200), id="scale up ignores pods being deleted"),
        pytest.param(5, [ONE_CPU] * 5, [100, 300, 500, 250, 250], 50, {}, (3, 28, 560), id="TestReplicaCalcScaleDown"),
        pytest.param(5, [ONE_CPU] * 5, [100, 300, 500, 250, 250], 50, {"readiness": [T, T, T, F, F]},
                     (2, 30, 600), id="scale down: unready pods' samples are dropped"),
        pytest.param(5, [ONE_CPU] * 5, [100], 50,
                     {"readiness": [T, F, F, F, F], "phase": [RUNNING] + [PENDING] * 4}, (1, 10, 200),
                     id="scale down excludes unscheduled (Pending) pods"),
        pytest.param(5, [ONE_CPU] * 5, [100, 300, 500, 250, 250], 50, {"start": [COOL, COOL, COOL, HOT, HOT]},
                     (2, 30, 600), id="scale down ignores hot-CPU pods"),
        pytest.param(5, [ONE_CPU] * 7, [100, 300, 500, 250, 250], 50,
                     {"readiness": [T] * 5 + [F, F], "phase": [RUNNING] * 5 + [FAILED, FAILED]}, (3, 28, 560),
                     id="scale down ignores Failed pods"),
        pytest.param(3, [900, 1000, 1100], [1010, 1030, 1020], 100, {}, (3, 102, 2040),
                     id="TestReplicaCalcTolerance: 102% of a 100% target stays"),
        pytest.param(4, [ONE_CPU] * 4, [4000, 9500, 3000, 7000, 3200, 2000], 100, {}, (24, 587, 11750),
                     id="superfluous metrics of unknown pods are skipped"),
        pytest.param(4, [ONE_CPU] * 4, [400, 95], 100, {}, (3, 24, 495), id="TestReplicaCalcMissingMetrics"),
        pytest.param(2, [ONE_CPU] * 2, [1000], 100, {}, (2, 100, 2000), id="missing metrics, ratio exactly 1: no change"),
        pytest.param(2, [ONE_CPU] * 2, [1900], 100, {}, (2, 190, 3800),
                     id="missing metrics on scale-up count as 0: rebalanced ratio within tolerance"),
        pytest.param(2, [ONE_CPU] * 2, [600], 100, {}, (2, 60, 1200),
                     id="missing metrics on scale-down count as 100%: rebalanced ratio within tolerance"),
        pytest.param(3, [ONE_CPU] * 3, [100, 450], 50, {"readiness": [F, T, T]}, (3, 45, 900),
                     id="missing metrics with an unready pod: no change"),
        pytest.param(3, [ONE_CPU] * 3, [100, 450], 50, {"start": [HOT, COOL, COOL]}, (3, 45, 900),
                     id="missing metrics with a hot-CPU pod: no change"),
        pytest.param(3, [ONE_CPU] * 3, [100, 2000], 50, {"readiness": [F, T, T]}, (4, 200, 4000),
                     id="missing metrics with an unready pod: scale up"),
        pytest.param(3, [ONE_CPU] * 3, [100, 2000], 50, {"readiness": [F, T, T], "start": [HOT, COOL, COOL]},
                     (4, 200, 4000), id="missing metrics with a hot unready pod: scale up"),
        pytest.param(4, [ONE_CPU] * 4, [100, 100, 100], 50, {"readiness": [F, T, T, T]}, (3, 10, 200),
                     id="missing metrics with an unready pod: scale down"),
        pytest.param(2, [ONE_CPU] * 3, [100, 100], 50, {"phase": [RUNNING] * 3}, (2, 10, 200),
                     id="rolling update with max surge: the recount would scale up, keep current"),
        pytest.param(4, [ONE_CPU, ONE_CPU, 2 * ONE_CPU, 2 * ONE_CPU], [200, 100, 100], 300, {"readiness": [F, T, T, T]},
                     (2, 6, 200), id="missing pod on scale-down counts as max(100, target)% of its request"),
    ],
)  # fmt: skip
def test_resource_utilization_matches_upstream(
    current: int, requests: list[int], levels: list[int], target: int, pods_kw: dict, expected: tuple[int, int, int]
) -> None:
    p = utilization(current, requests, levels, target, **pods_kw)
    assert (p.replicas, p.utilization, p.usage) == expected


@pytest.mark.parametrize(
    ("current", "requests", "levels", "names", "message"),
    [
        pytest.param(1, [ONE_CPU], [100], ["an-older-pod-name"], "no metrics returned matched known pods",
                     id="TestReplicaCalcDisjointResourcesMetrics"),
        pytest.param(1, [], [200], [], "missing request for cpu in container container1 of Pod test-pod-0",
                     id="TestReplicaCalcEmptyCPURequest"),
        pytest.param(0, [], [200], [], "no pods returned by selector while calculating replica count",
                     id="no pods listed"),
        pytest.param(3, [ONE_CPU] * 3, [100, 100, 100], [], "did not receive metrics for targeted pods",
                     id="every sampled pod is unready"),
    ],
)  # fmt: skip
def test_resource_utilization_errors(current: int, requests: list[int], levels: list[int], names: list[str], message: str) -> None:
    kw: dict = {"names": names}
    if message.startswith("did not receive"):
        kw["readiness"] = [F, F, F]
    with pytest.raises(MetricError, match=message):
        utilization(current, requests, levels, 100, **kw)


def test_computed_tolerance_boundary_matches_upstream() -> None:
    """TestReplicaCalcComputedToleranceAlgImplementation: target 56% scales 10 -> 9, 55% stays."""
    requests = [400, 200, 310, 290, 302, 298, 301, 299, 300, 300]
    levels = [150] * 10  # per container, as the requests
    assert utilization(10, requests, levels, 56).replicas == 9
    assert utilization(10, requests, levels, 55).replicas == 10


def plain(current: int, levels: list[int], target: int, **pods_kw: object) -> sources.Proposal:
    return sources.plain_average(
        current=current, target=target, metrics=harness_metrics(levels, per_pod_factor=1),
        pods=harness_pods(current, **pods_kw),  # type: ignore[arg-type]
        resource="", tolerances=TOL, now=NOW, readiness=READINESS,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("current", "levels", "target", "pods_kw", "expected"),
    [
        pytest.param(3, [20000, 10000, 30000], 15000, {}, (4, 20000), id="TestReplicaCalcScaleUpCM"),
        pytest.param(3, [50000, 10000, 30000], 15000, {"readiness": [T, T, F], "start": [COOL, COOL, HOT]},
                     (6, 30000), id="Pods metrics ignore readiness: an unready hot pod still counts"),
        pytest.param(3, [50000, 15000, 30000], 15000, {"readiness": [F, T, F], "start": [HOT, COOL, HOT]},
                     (7, 31666), id="Pods metrics: the average is truncated to an integer milli-value"),
        pytest.param(5, [12000] * 5, 20000, {}, (3, 12000), id="TestReplicaCalcScaleDownCM"),
        pytest.param(3, [20000, 21000, 21000], 20000, {}, (3, 20666), id="TestReplicaCalcToleranceCM"),
        pytest.param(5, [20000, 19000, 21000], 20000, {}, (5, 20000),
                     id="ratio exactly 1 with missing pods: not filled, no change"),
        pytest.param(2, [10000, 10000], 17000, {"phase": [RUNNING] * 3}, (2, 10000),
                     id="rolling update with max surge (custom metric)"),
        pytest.param(1, [8600], 4400, {}, (2, 8600), id="TestReplicaCalcScaleUpCMExternal (Pods path)"),
    ],
)  # fmt: skip
def test_plain_average_matches_upstream(current: int, levels: list[int], target: int, pods_kw: dict, expected: tuple[int, int]) -> None:
    p = plain(current, levels, target, **pods_kw)
    assert (p.replicas, p.usage) == expected


def test_plain_average_missing_pod_on_scale_down_counts_as_target() -> None:
    # 4 pods, 3 samples averaging 5000 of a 10000 target: the missing pod is assumed at 10000,
    # so the rebalanced average is (15000 + 10000) / 4 = 6250 -> ceil(0.625 x 4) = 3.
    p = plain(4, [5000, 5000, 5000], 10000)
    assert (p.replicas, p.why, p.new_ratio, p.counted) == (3, Why.REBALANCED, 0.625, 4)


@pytest.mark.parametrize(
    ("current", "value", "target", "readiness", "expected"),
    [
        pytest.param(3, 20000, 15000, [], 4, id="TestReplicaCalcScaleUpCMObject"),
        pytest.param(3, 50000, 10000, [F, T, F], 5, id="Object Value multiplies Running+Ready pods, not current"),
        pytest.param(5, 12000, 20000, [], 3, id="TestReplicaCalcScaleDownCMObject"),
        pytest.param(3, 20666, 20000, [], 3, id="TestReplicaCalcToleranceCMObject"),
        pytest.param(3, 8600, 4400, [F, T, F], 2, id="External Value ignores unready pods"),
        pytest.param(5, 8600, 14334, [], 3, id="TestReplicaCalcScaleDownCMExternal"),
        pytest.param(3, 8600, 8888, [], 3, id="TestReplicaCalcToleranceCMExternal"),
        pytest.param(0, 1000, 1000, [], 1, id="from zero: ceil(ratio), tolerance not applied"),
        pytest.param(0, 2500, 1000, [], 3, id="from zero: ceil(2.5)"),
        pytest.param(0, 0, 1000, [], 0, id="from zero stays at zero with no load"),
        pytest.param(3, MAX64, 1, [], MAX32, id="TestReplicaCalcScaleUpOverflow: capped at MaxInt32"),
    ],
)  # fmt: skip
def test_value_target_matches_upstream(current: int, value: int, target: int, readiness: list, expected: int) -> None:
    pods = harness_pods(current, readiness=readiness)
    p = sources.value_target(current=current, target=target, usage=value, pods=pods, tolerances=TOL)
    assert p.replicas == expected
    assert p.usage == value
    assert p.timestamp is None  # upstream drops the timestamp on this path


def test_value_target_without_pods_is_an_error_unless_within_tolerance() -> None:
    with pytest.raises(MetricError, match="unable to calculate ready pods: no pods returned by selector"):
        sources.value_target(current=3, target=1000, usage=5000, pods=(), tolerances=TOL)
    # The tolerance check comes first, so zero pods is fine when nothing would change.
    assert sources.value_target(current=3, target=1000, usage=1050, pods=(), tolerances=TOL).replicas == 3


@pytest.mark.parametrize(
    ("status_replicas", "value", "target", "tolerances", "expected"),
    [
        pytest.param(3, 20000, 5000, TOL, (4, 6667), id="TestReplicaCalcScaleUpCMPerPodObject"),
        pytest.param(5, 6000, 2000, TOL, (3, 1200), id="TestReplicaCalcScaleDownPerPodCMObject"),
        pytest.param(4, 20166, 5000, TOL, (4, 5042), id="TestReplicaCalcTolerancePerPodCMObject"),
        pytest.param(3, 8600, 2150, TOL, (4, 2867), id="TestReplicaCalcScaleUpPerPodCMExternal"),
        pytest.param(5, 8600, 2867, TOL, (3, 1720), id="TestReplicaCalcScaleDownPerPodCMExternal"),
        pytest.param(3, 8600, 2900, TOL, (3, 2867), id="TestReplicaCalcTolerancePerPodCMExternal"),
        pytest.param(4, 20208, 5000, Tolerances(scale_down=0.1, scale_up=0.01), (5, 5052),
                     id="configurable tolerance: 1% up tolerance lets 1.04% scale"),
        pytest.param(37, 3800000, 100000, Tolerances(scale_down=0.5, scale_up=0.05), (37, 102703),
                     id="TestHPAWithTolerance phase 2: +2.7% within a 5% up tolerance"),
        pytest.param(10, 800000, 100000, Tolerances(scale_down=0.5, scale_up=0.05), (10, 80000),
                     id="TestHPAWithTolerance phase 4: -20% within a 50% down tolerance"),
        pytest.param(1, MAX64, 1, TOL, (MAX32, MAX64), id="TestExternalPerPodMetricReplicaOverflow"),
        pytest.param(1, MAX64, MAX64, TOL, (1, MAX64), id="TestExternalPerPodMetricUsageOverflow"),
        # float64(usage) >= float64(MaxInt64) holds from 2^63-512 up: upstream reports MaxInt64,
        # never ceil() of the rounded float (which is 2^63, outside int64).
        pytest.param(1, MAX64 - 100, MAX64, TOL, (1, MAX64), id="usage that rounds to 2^63 as a float saturates"),
    ],
)  # fmt: skip
def test_per_pod_target_matches_upstream(status_replicas: int, value: int, target: int, tolerances: Tolerances, expected: tuple[int, int]) -> None:
    p = sources.per_pod_target(status_replicas=status_replicas, target=target, usage=value, tolerances=tolerances)
    assert (p.replicas, p.usage) == expected


def test_per_pod_target_within_tolerance_returns_status_replicas_during_a_surge() -> None:
    # spec 4, status 5 (rollout surge): within tolerance the AverageValue path proposes 5.
    p = sources.per_pod_target(status_replicas=5, target=1000, usage=5000, tolerances=TOL)
    assert (p.replicas, p.why) == (5, Why.WITHIN_TOLERANCE)


def test_per_pod_target_with_zero_status_replicas_does_not_divide_by_zero() -> None:
    p = sources.per_pod_target(status_replicas=0, target=1000, usage=2500, tolerances=TOL)
    assert (p.replicas, p.usage) == (3, 2500)


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda: sources.value_target(current=1, target=0, usage=1, pods=(), tolerances=TOL), id="value 0"),
        pytest.param(lambda: sources.per_pod_target(status_replicas=1, target=-5, usage=1, tolerances=TOL), id="average -5"),
        pytest.param(lambda: utilization(1, [ONE_CPU], [1], 0), id="utilization 0"),
    ],
)  # fmt: skip
def test_non_positive_targets_are_reported_not_divided_by(call: object) -> None:
    with pytest.raises(MetricError, match="must be greater than zero"):
        call()  # type: ignore[operator]


def test_proposal_explains_the_counts_it_used() -> None:
    p = utilization(3, [ONE_CPU] * 3, [300, 500, 700], 30, readiness=[F, T, T])
    assert p.unready == ("test-pod-0",)
    assert p.ready == 2
    assert p.why is Why.REBALANCED
    assert p.counted == 3  # 2 ready samples + the unready pod filled with 0
